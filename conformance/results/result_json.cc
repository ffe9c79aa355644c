#include "mm/conformance/results/result_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "mm/conformance/results/result_schema.h"
#include "mm/family/op.h"

namespace mm::conformance {
namespace {

using nlohmann::json;
using Ordered = nlohmann::ordered_json;

// Reads `key` of `object` into `out` with nlohmann's conversions; the error names the key.
template <class T>
Status Get(const json& object, const std::string& key, T& out) {
  auto it = object.find(key);
  if (it == object.end()) return InvalidArgumentError("missing key \"" + key + "\"");
  try {
    out = it->template get<T>();
  } catch (const json::exception& e) {
    return InvalidArgumentError("key \"" + key + "\": " + e.what());
  }
  return OkStatus();
}

// Like Get, where null (or absence) means "empty".
Status GetOptionalString(const json& object, const std::string& key, std::string& out) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    out.clear();
    return OkStatus();
  }
  return Get(object, key, out);
}

Status GetDouble(const json& object, const std::string& key, double& out) {
  auto it = object.find(key);
  if (it == object.end()) return InvalidArgumentError("missing key \"" + key + "\"");
  auto value = DoubleFromJson(*it);
  if (!value.ok()) return value.status().WithContext("key \"" + key + "\"");
  out = *value;
  return OkStatus();
}

}  // namespace

Ordered JsonDouble(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  return value;
}

StatusOr<double> DoubleFromJson(const json& value) {
  if (value.is_number()) return value.get<double>();
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    if (text == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (text == "inf") return std::numeric_limits<double>::infinity();
    if (text == "-inf") return -std::numeric_limits<double>::infinity();
  }
  return InvalidArgumentError("not a number: " + value.dump());
}

StatusOr<Dims> ParseDims(std::string_view text) {
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') {
    return InvalidArgumentError("not a shape: '" + std::string(text) + "'");
  }
  Dims dims;
  std::string_view rest = text.substr(1, text.size() - 2);
  while (!rest.empty()) {
    std::int64_t dim = 0;
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), dim);
    if (ec != std::errc() || dim < 0) {
      return InvalidArgumentError("not a shape: '" + std::string(text) + "'");
    }
    dims.push_back(dim);
    rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
    if (!rest.empty()) {
      if (rest.front() != ',' || rest.size() == 1) {
        return InvalidArgumentError("not a shape: '" + std::string(text) + "'");
      }
      rest.remove_prefix(1);
    }
  }
  return dims;
}

namespace {

// Builds the ordered JSON of a record from its schema (result_schema.h).
class JsonBuilder {
 public:
  explicit JsonBuilder(Ordered& out) : out_(out) {}

  void Text(const std::string& key, const std::string& s) { out_[key] = s; }
  void NullableText(const std::string& key, const std::string& s) {
    out_[key] = s.empty() ? Ordered() : Ordered(s);
  }
  void OmittedText(const std::string& key, const std::string& s) {
    if (!s.empty()) out_[key] = s;
  }
  void OpName(const std::string& key, const std::string& s) { out_[key] = s; }
  void Integer(const std::string& key, std::int64_t i, schema::Presence) { out_[key] = i; }
  void NullableInteger(const std::string& key, std::int64_t i) {
    out_[key] = i >= 0 ? Ordered(i) : Ordered();
  }
  void Real(const std::string& key, double d) { out_[key] = JsonDouble(d); }
  void RealOfText(const std::string& key, double d, const std::string&) { Real(key, d); }
  void Boolean(const std::string& key, bool b) { out_[key] = b; }
  void Index(const std::string& key, const Dims& dims) { out_[key] = dims; }
  void TypeName(const std::string& key, const std::optional<DType>& dtype) {
    out_[key] = dtype ? Ordered(DTypeName(*dtype)) : Ordered();
  }
  void Shape(const std::string& key, const Dims& dims, const std::optional<DType>& dtype) {
    out_[key] = dtype ? Ordered(DimsToString(dims)) : Ordered();
  }
  void VerdictName(const std::string& key, Verdict verdict) {
    out_[key] = conformance::VerdictName(verdict);
  }
  void Derived(const std::string& key, std::optional<double> value) {
    out_[key] = value ? JsonDouble(*value) : Ordered();
  }
  template <class T>
  void Object(const std::string& key, const std::optional<T>& object) {
    out_[key] = Ordered();
    if (!object) return;
    JsonBuilder nested(out_[key] = Ordered::object());
    schema::VisitFields(*object, nested);
  }
  void Worst(const std::string& key, const std::optional<WorstElement>& worst, const char* centre,
             const char* radius) {
    if (!worst) return;
    JsonBuilder nested(out_[key] = Ordered::object());
    schema::VisitFields(*worst, nested, centre, radius);
  }

 private:
  Ordered& out_;
};

}  // namespace

Ordered ResultToJson(const Result& r) {
  Ordered out = Ordered::object();
  JsonBuilder builder(out);
  schema::VisitFields(r, builder);
  return out;
}
ResultJsonWriter::ResultJsonWriter()
    : string_(std::string()),
      float_(0.0),
      integer_(std::int64_t{0}),
      serializer_(nlohmann::detail::output_adapter<char>(text_), ' ',
                  nlohmann::ordered_json::error_handler_t::replace) {}

// Writes a record's fields from its schema (result_schema.h) with the writer's primitives.
class ResultJsonWriter::Fields {
 public:
  explicit Fields(ResultJsonWriter& w) : w_(w) {}

  void Text(std::string_view key, const std::string& s) {
    w_.Key(key);
    w_.String(s);
  }
  void NullableText(std::string_view key, const std::string& s) {
    w_.Key(key);
    s.empty() ? w_.Null() : w_.String(s);
  }
  void OmittedText(std::string_view key, const std::string& s) {
    if (!s.empty()) Text(key, s);
  }
  void OpName(std::string_view key, const std::string& s) { Text(key, s); }
  void Integer(std::string_view key, std::int64_t i, schema::Presence) {
    w_.Key(key);
    w_.Integer(i);
  }
  void NullableInteger(std::string_view key, std::int64_t i) {
    w_.Key(key);
    i >= 0 ? w_.Integer(i) : w_.Null();
  }
  void Real(std::string_view key, double d) {
    w_.Key(key);
    w_.Double(d);
  }
  void RealOfText(std::string_view key, double d, const std::string&) { Real(key, d); }
  void Boolean(std::string_view key, bool b) {
    w_.Key(key);
    w_.Bool(b);
  }
  void Index(std::string_view key, const mm::Dims& dims) {
    w_.Key(key);
    w_.Dims(dims);
  }
  void TypeName(std::string_view key, const std::optional<DType>& dtype) {
    w_.Key(key);
    dtype ? w_.String(DTypeName(*dtype)) : w_.Null();
  }
  void Shape(std::string_view key, const mm::Dims& dims, const std::optional<DType>& dtype) {
    w_.Key(key);
    dtype ? w_.String(DimsToString(dims)) : w_.Null();
  }
  void VerdictName(std::string_view key, Verdict verdict) {
    w_.Key(key);
    w_.String(conformance::VerdictName(verdict));
  }
  void Derived(std::string_view key, std::optional<double> value) {
    w_.Key(key);
    value ? w_.Double(*value) : w_.Null();
  }
  template <class T>
  void Object(std::string_view key, const std::optional<T>& object) {
    w_.Key(key);
    if (!object) return w_.Null();
    w_.Open('{');
    schema::VisitFields(*object, *this);
    w_.Close('}');
  }
  void Worst(std::string_view key, const std::optional<WorstElement>& worst, const char* centre,
             const char* radius) {
    if (!worst) return;
    w_.Key(key);
    w_.Open('{');
    schema::VisitFields(*worst, *this, centre, radius);
    w_.Close('}');
  }

 private:
  ResultJsonWriter& w_;
};

const std::string& ResultJsonWriter::Render(const Result& r, int indent) {
  text_.clear();
  first_.clear();
  indent_ = indent;
  Fields fields(*this);
  Open('{');
  schema::VisitFields(r, fields);
  Close('}');
  return text_;
}
void ResultJsonWriter::Open(char bracket) {
  text_ += bracket;
  first_.push_back(true);
  if (indent_ != kOneLine) indent_ += 2;
}

void ResultJsonWriter::Key(std::string_view key) {
  const bool one_line = indent_ == kOneLine;
  if (one_line) {
    if (!first_.back()) text_ += ',';
  } else {
    text_ += first_.back() ? "\n" : ",\n";
    text_.append(static_cast<std::size_t>(indent_), ' ');
  }
  first_.back() = false;
  if (!key.empty()) {
    text_ += '"';
    text_ += key;
    text_ += one_line ? "\":" : "\": ";
  }
}

void ResultJsonWriter::Close(char bracket) {
  if (indent_ == kOneLine) {
    first_.pop_back();
    text_ += bracket;
    return;
  }
  indent_ -= 2;
  // An empty object or array is "{}" or "[]" on one line, as nlohmann writes it.
  if (!first_.back()) {
    text_ += '\n';
    text_.append(static_cast<std::size_t>(indent_), ' ');
  }
  first_.pop_back();
  text_ += bracket;
}

void ResultJsonWriter::String(std::string_view text) {
  // Printable ASCII other than the quote and the backslash is written as it is by the serializer
  // too (no escape, nothing to replace): most of a report's strings skip it.
  if (std::all_of(text.begin(), text.end(),
                  [](char c) { return c >= 0x20 && c < 0x7F && c != '"' && c != '\\'; })) {
    text_ += '"';
    text_ += text;
    text_ += '"';
    return;
  }
  string_.get_ref<std::string&>().assign(text);
  serializer_.dump(string_, false, false, 0);
}

void ResultJsonWriter::Double(double value) {
  if (std::isnan(value)) return String("nan");
  if (std::isinf(value)) return String(value > 0 ? "inf" : "-inf");
  float_.get_ref<double&>() = value;
  serializer_.dump(float_, false, false, 0);
}

void ResultJsonWriter::Integer(std::int64_t value) {
  integer_.get_ref<std::int64_t&>() = value;
  serializer_.dump(integer_, false, false, 0);
}

void ResultJsonWriter::Bool(bool value) { text_ += value ? "true" : "false"; }

void ResultJsonWriter::Null() { text_ += "null"; }

void ResultJsonWriter::Dims(const mm::Dims& dims) {
  Open('[');
  for (std::int64_t d : dims) {
    Key("");
    Integer(d);
  }
  Close(']');
}

namespace {

// Reads a record's fields from JSON by its schema (result_schema.h); the first error stops it and
// names the key.
class JsonReader {
 public:
  explicit JsonReader(const json& object) : object_(object) {}
  const Status& status() const { return status_; }

  void Text(const std::string& key, std::string& s) {
    Do([&] { return Get(object_, key, s); });
  }
  void NullableText(const std::string& key, std::string& s) {
    Do([&] { return GetOptionalString(object_, key, s); });
  }
  void OmittedText(const std::string& key, std::string& s) { NullableText(key, s); }
  void OpName(const std::string& key, std::string& s);
  void Integer(const std::string& key, std::int64_t& i, schema::Presence presence) {
    if (presence == schema::Presence::kOptional && !object_.contains(key)) return;
    Do([&] { return Get(object_, key, i); });
  }
  void NullableInteger(const std::string& key, std::int64_t& i) {
    i = -1;
    if (auto it = object_.find(key); it != object_.end() && !it->is_null()) {
      Do([&] { return Get(object_, key, i); });
    }
  }
  void Real(const std::string& key, double& d) {
    Do([&] { return GetDouble(object_, key, d); });
  }
  void RealOfText(const std::string& key, double& d, const std::string& text);
  void Boolean(const std::string& key, bool& b) {
    Do([&] { return Get(object_, key, b); });
  }
  void Index(const std::string& key, Dims& dims) {
    Do([&] { return Get(object_, key, dims); });
  }
  void TypeName(const std::string& key, std::optional<DType>& dtype);
  void Shape(const std::string& key, Dims& dims, const std::optional<DType>& dtype);
  void VerdictName(const std::string& key, Verdict& verdict);
  void Derived(const std::string&, std::optional<double>) {}
  template <class T>
  void Object(const std::string& key, std::optional<T>& object) {
    object.reset();
    const json* nested = Nested(key);
    if (nested != nullptr)
      Read(key, *nested, [&](JsonReader& in) { schema::VisitFields(object.emplace(), in); });
  }
  void Worst(const std::string& key, std::optional<WorstElement>& worst, const char* centre,
             const char* radius) {
    worst.reset();
    const json* nested = Nested(key);
    if (nested != nullptr)
      Read(key, *nested,
           [&](JsonReader& in) { schema::VisitFields(worst.emplace(), in, centre, radius); });
  }

 private:
  template <class F>
  void Do(F read) {
    if (status_.ok()) status_ = read();
  }
  // The object under `key`; null (and no error) when absent or null, or when reading failed.
  const json* Nested(const std::string& key) {
    auto it = object_.find(key);
    if (!status_.ok() || it == object_.end() || it->is_null()) return nullptr;
    if (it->is_object()) return &*it;
    status_ = InvalidArgumentError("key \"" + key + "\" must be an object");
    return nullptr;
  }
  template <class F>
  void Read(const std::string& key, const json& nested, F visit) {
    JsonReader in(nested);
    visit(in);
    if (!in.status().ok()) status_ = in.status().WithContext("key \"" + key + "\"");
  }

  const json& object_;
  Status status_;
};

// The report's JSON has the exact decimal texts; an older one lacks their values, which read back
// from the texts.
void JsonReader::RealOfText(const std::string& key, double& d, const std::string& text) {
  if (object_.contains(key)) return Real(key, d);
  auto parsed = DoubleFromJson(json(text));
  d = parsed.ok() ? *parsed : std::strtod(text.c_str(), nullptr);
}

void JsonReader::OpName(const std::string& key, std::string& s) {
  s = "MatMul";
  if (!object_.contains(key)) return;
  Text(key, s);
  if (status_.ok() && !family::OpFromName(s).ok()) {
    status_ = InvalidArgumentError("key \"" + key + "\": '" + s +
                                   "' is not an operator (MatMul, Gemm, MatMulInteger, "
                                   "QLinearMatMul)");
  }
}

void JsonReader::TypeName(const std::string& key, std::optional<DType>& dtype) {
  std::string text;
  NullableText(key, text);
  dtype.reset();
  if (!status_.ok() || text.empty()) return;
  auto parsed = ElementTypeFromName(text);
  if (!parsed.ok()) status_ = parsed.status().WithContext("key \"" + key + "\"");
  if (parsed.ok()) dtype = *parsed;
}

void JsonReader::Shape(const std::string& key, Dims& dims, const std::optional<DType>& dtype) {
  if (!dtype) return;
  std::string text;
  Text(key, text);
  if (!status_.ok()) return;
  auto parsed = ParseDims(text);
  if (!parsed.ok()) status_ = parsed.status().WithContext("key \"" + key + "\"");
  if (parsed.ok()) dims = std::move(parsed).value();
}

void JsonReader::VerdictName(const std::string& key, Verdict& verdict) {
  std::string text;
  Text(key, text);
  if (!status_.ok()) return;
  auto parsed = VerdictFromName(text);
  if (!parsed.ok()) status_ = parsed.status().WithContext("key \"" + key + "\"");
  if (parsed.ok()) verdict = *parsed;
}

}  // namespace

StatusOr<Result> ResultFromJson(const json& object) {
  if (!object.is_object()) return InvalidArgumentError("a result must be an object");
  Result r;
  JsonReader reader(object);
  schema::VisitFields(r, reader);
  if (!reader.status().ok()) return reader.status();
  return r;
}

}  // namespace mm::conformance
