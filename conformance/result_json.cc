#include "conformance/result_json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace mm::conformance {
namespace {

using nlohmann::json;
using Ordered = nlohmann::ordered_json;

// Reads `key` of `object` into `out` with nlohmann's conversions; the error names the key.
template <class T>
Status Get(const json& object, const char* key, T& out) {
  auto it = object.find(key);
  if (it == object.end()) return InvalidArgumentError(std::string("missing key \"") + key + "\"");
  try {
    out = it->template get<T>();
  } catch (const json::exception& e) {
    return InvalidArgumentError(std::string("key \"") + key + "\": " + e.what());
  }
  return OkStatus();
}

// Like Get, where null (or absence) means "empty".
Status GetOptionalString(const json& object, const char* key, std::string& out) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    out.clear();
    return OkStatus();
  }
  return Get(object, key, out);
}

Status GetDouble(const json& object, const char* key, double& out) {
  auto it = object.find(key);
  if (it == object.end()) return InvalidArgumentError(std::string("missing key \"") + key + "\"");
  auto value = DoubleFromJson(*it);
  if (!value.ok()) return value.status().WithContext(std::string("key \"") + key + "\"");
  out = *value;
  return OkStatus();
}

// A WorstElement as JSON under the given names of its centre and radius ("expected"/"allowed" for
// ONNX's tolerance, "exact"/"bound" for the error bound), and back.
Ordered WorstToJson(const WorstElement& w, const char* centre, const char* radius) {
  Ordered out = {{"index", w.index},
                 {"flat_index", w.flat_index},
                 {centre, w.expected},
                 {"actual", w.actual},
                 {std::string(centre) + "_value", JsonDouble(w.expected_value)},
                 {"actual_value", JsonDouble(w.actual_value)},
                 {"abs_error", JsonDouble(w.abs_error)},
                 {"rel_error", JsonDouble(w.rel_error)},
                 {radius, JsonDouble(w.allowed)}};
  return out;
}

StatusOr<WorstElement> WorstFromJson(const json& w, const char* centre, const char* radius) {
  if (!w.is_object()) return InvalidArgumentError("key \"worst\" must be an object");
  WorstElement worst;
  MM_RETURN_IF_ERROR(Get(w, "index", worst.index));
  MM_RETURN_IF_ERROR(Get(w, "flat_index", worst.flat_index));
  MM_RETURN_IF_ERROR(Get(w, centre, worst.expected));
  MM_RETURN_IF_ERROR(Get(w, "actual", worst.actual));
  MM_RETURN_IF_ERROR(GetDouble(w, "abs_error", worst.abs_error));
  MM_RETURN_IF_ERROR(GetDouble(w, "rel_error", worst.rel_error));
  MM_RETURN_IF_ERROR(GetDouble(w, radius, worst.allowed));
  // The report's JSON has the exact decimal texts only; they read back to the same values.
  auto value_of = [&](const std::string& key, const std::string& text, double& out) -> Status {
    if (w.contains(key)) return GetDouble(w, key.c_str(), out);
    auto parsed = DoubleFromJson(json(text));
    out = parsed.ok() ? *parsed : std::strtod(text.c_str(), nullptr);
    return OkStatus();
  };
  MM_RETURN_IF_ERROR(
      value_of(std::string(centre) + "_value", worst.expected, worst.expected_value));
  MM_RETURN_IF_ERROR(value_of("actual_value", worst.actual, worst.actual_value));
  return worst;
}

StatusOr<std::optional<Comparison>> OptionalComparison(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::optional<Comparison>();
  auto c = ComparisonFromJson(*it);
  if (!c.ok()) return c.status().WithContext(std::string("key \"") + key + "\"");
  return std::optional<Comparison>(std::move(c).value());
}

// The figures of CallResources by their JSON names, in order; spinning_threads (-1: not looked)
// is null when not looked and comes last.
constexpr std::pair<const char*, std::int64_t CallResources::*> kCallFigures[] = {
    {"process", &CallResources::process},
    {"call", &CallResources::call},
    {"rss_bytes", &CallResources::rss_bytes},
    {"rss_growth_bytes", &CallResources::rss_growth_bytes},
    {"fds", &CallResources::fds},
    {"fd_growth", &CallResources::fd_growth},
    {"threads", &CallResources::threads},
    {"thread_growth", &CallResources::thread_growth}};

Ordered ResourcesToJson(const CallResources& r) {
  Ordered out = Ordered::object();
  for (const auto& [key, figure] : kCallFigures) out[key] = r.*figure;
  out["spinning_threads"] = r.spinning_threads >= 0 ? Ordered(r.spinning_threads) : Ordered();
  return out;
}

StatusOr<std::optional<CallResources>> ResourcesFromJson(const json& object) {
  auto it = object.find("resources");
  // Absent in reports of an older mm.
  if (it == object.end() || it->is_null()) return std::optional<CallResources>();
  if (!it->is_object()) return InvalidArgumentError("key \"resources\" must be an object");
  CallResources r;
  for (const auto& [key, figure] : kCallFigures) {
    MM_RETURN_IF_ERROR(Get(*it, key, r.*figure).WithContext("key \"resources\""));
  }
  if (auto spinning = it->find("spinning_threads"); spinning != it->end() && !spinning->is_null()) {
    MM_RETURN_IF_ERROR(
        Get(*it, "spinning_threads", r.spinning_threads).WithContext("key \"resources\""));
  }
  return std::optional<CallResources>(r);
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

Ordered ComparisonToJson(const Comparison& c) {
  Ordered out = {{"match", c.match},
                 {"elements", c.elements},
                 {"differing", c.differing},
                 {"bitwise_equal", c.bitwise_equal},
                 {"max_abs_error", JsonDouble(c.max_abs_error)},
                 {"max_rel_error", JsonDouble(c.max_rel_error)}};
  if (!c.mismatch.empty()) out["mismatch"] = c.mismatch;
  if (c.worst) out["worst"] = WorstToJson(*c.worst, "expected", "allowed");
  return out;
}

StatusOr<Comparison> ComparisonFromJson(const json& object) {
  if (!object.is_object()) return InvalidArgumentError("a comparison must be an object");
  Comparison c;
  MM_RETURN_IF_ERROR(Get(object, "match", c.match));
  MM_RETURN_IF_ERROR(Get(object, "elements", c.elements));
  MM_RETURN_IF_ERROR(Get(object, "differing", c.differing));
  MM_RETURN_IF_ERROR(Get(object, "bitwise_equal", c.bitwise_equal));
  MM_RETURN_IF_ERROR(GetDouble(object, "max_abs_error", c.max_abs_error));
  MM_RETURN_IF_ERROR(GetDouble(object, "max_rel_error", c.max_rel_error));
  MM_RETURN_IF_ERROR(GetOptionalString(object, "mismatch", c.mismatch));
  if (auto it = object.find("worst"); it != object.end() && !it->is_null()) {
    auto worst = WorstFromJson(*it, "expected", "allowed");
    if (!worst.ok()) return worst.status().WithContext("key \"worst\"");
    c.worst = std::move(worst).value();
  }
  return c;
}

Ordered BoundCheckToJson(const BoundCheck& b) {
  Ordered out = {{"elements", b.elements}, {"outside", b.outside}, {"unbounded", b.unbounded}};
  if (b.worst) out["worst"] = WorstToJson(*b.worst, "exact", "bound");
  return out;
}

StatusOr<BoundCheck> BoundCheckFromJson(const json& object) {
  if (!object.is_object()) return InvalidArgumentError("a bound check must be an object");
  BoundCheck b;
  MM_RETURN_IF_ERROR(Get(object, "elements", b.elements));
  MM_RETURN_IF_ERROR(Get(object, "outside", b.outside));
  MM_RETURN_IF_ERROR(Get(object, "unbounded", b.unbounded));
  if (auto it = object.find("worst"); it != object.end() && !it->is_null()) {
    auto worst = WorstFromJson(*it, "exact", "bound");
    if (!worst.ok()) return worst.status().WithContext("key \"worst\"");
    b.worst = std::move(worst).value();
  }
  return b;
}

Ordered ResultToJson(const Result& r) {
  const bool errors = r.vs_expected && r.vs_expected->mismatch.empty();
  return {{"case", r.case_name},
          {"case_index", r.case_index},
          {"source", r.source},
          {"data_set", r.data_set.empty() ? Ordered() : Ordered(r.data_set)},
          {"backend", r.backend},
          {"dtype", r.dtype ? Ordered(DTypeName(*r.dtype)) : Ordered()},
          {"a_shape", r.dtype ? Ordered(DimsToString(r.a_dims)) : Ordered()},
          {"b_shape", r.dtype ? Ordered(DimsToString(r.b_dims)) : Ordered()},
          {"verdict", VerdictName(r.verdict)},
          {"message", r.message},
          {"support_note", r.support_note.empty() ? Ordered() : Ordered(r.support_note)},
          {"expectation", r.expectation.empty() ? Ordered() : Ordered(r.expectation)},
          {"implementation", r.implementation.empty() ? Ordered() : Ordered(r.implementation)},
          {"data_suspect", r.data_suspect.empty() ? Ordered() : Ordered(r.data_suspect)},
          {"seconds", JsonDouble(r.seconds)},
          {"max_abs_error", errors ? JsonDouble(r.vs_expected->max_abs_error) : Ordered()},
          {"max_rel_error", errors ? JsonDouble(r.vs_expected->max_rel_error) : Ordered()},
          {"vs_expected", r.vs_expected ? ComparisonToJson(*r.vs_expected) : Ordered()},
          {"vs_bound", r.vs_bound ? BoundCheckToJson(*r.vs_bound) : Ordered()},
          {"vs_reference", r.vs_reference},
          {"vs_reference_detail",
           r.vs_reference_comparison ? ComparisonToJson(*r.vs_reference_comparison) : Ordered()},
          {"resources", r.resources ? ResourcesToJson(*r.resources) : Ordered()}};
}

ResultJsonWriter::ResultJsonWriter()
    : string_(std::string()),
      float_(0.0),
      integer_(std::int64_t{0}),
      serializer_(nlohmann::detail::output_adapter<char>(text_), ' ',
                  nlohmann::ordered_json::error_handler_t::replace) {}

const std::string& ResultJsonWriter::Render(const Result& r, int indent) {
  text_.clear();
  first_.clear();
  indent_ = indent;
  const bool errors = r.vs_expected && r.vs_expected->mismatch.empty();
  auto optional_string = [this](const std::string& text) {
    if (text.empty()) {
      Null();
    } else {
      String(text);
    }
  };
  Open('{');
  Key("case");
  String(r.case_name);
  Key("case_index");
  Integer(r.case_index);
  Key("source");
  String(r.source);
  Key("data_set");
  optional_string(r.data_set);
  Key("backend");
  String(r.backend);
  Key("dtype");
  r.dtype ? String(DTypeName(*r.dtype)) : Null();
  Key("a_shape");
  r.dtype ? String(DimsToString(r.a_dims)) : Null();
  Key("b_shape");
  r.dtype ? String(DimsToString(r.b_dims)) : Null();
  Key("verdict");
  String(VerdictName(r.verdict));
  Key("message");
  String(r.message);
  Key("support_note");
  optional_string(r.support_note);
  Key("expectation");
  optional_string(r.expectation);
  Key("implementation");
  optional_string(r.implementation);
  Key("data_suspect");
  optional_string(r.data_suspect);
  Key("seconds");
  Double(r.seconds);
  Key("max_abs_error");
  errors ? Double(r.vs_expected->max_abs_error) : Null();
  Key("max_rel_error");
  errors ? Double(r.vs_expected->max_rel_error) : Null();
  Key("vs_expected");
  r.vs_expected ? Compare(*r.vs_expected) : Null();
  Key("vs_bound");
  r.vs_bound ? Bound(*r.vs_bound) : Null();
  Key("vs_reference");
  String(r.vs_reference);
  Key("vs_reference_detail");
  r.vs_reference_comparison ? Compare(*r.vs_reference_comparison) : Null();
  Key("resources");
  r.resources ? Resources(*r.resources) : Null();
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

void ResultJsonWriter::Worst(const WorstElement& w, std::string_view centre,
                             std::string_view radius) {
  Open('{');
  Key("index");
  Dims(w.index);
  Key("flat_index");
  Integer(w.flat_index);
  Key(centre);
  String(w.expected);
  Key("actual");
  String(w.actual);
  Key(std::string(centre) + "_value");
  Double(w.expected_value);
  Key("actual_value");
  Double(w.actual_value);
  Key("abs_error");
  Double(w.abs_error);
  Key("rel_error");
  Double(w.rel_error);
  Key(radius);
  Double(w.allowed);
  Close('}');
}

void ResultJsonWriter::Compare(const Comparison& c) {
  Open('{');
  Key("match");
  Bool(c.match);
  Key("elements");
  Integer(c.elements);
  Key("differing");
  Integer(c.differing);
  Key("bitwise_equal");
  Bool(c.bitwise_equal);
  Key("max_abs_error");
  Double(c.max_abs_error);
  Key("max_rel_error");
  Double(c.max_rel_error);
  if (!c.mismatch.empty()) {
    Key("mismatch");
    String(c.mismatch);
  }
  if (c.worst) {
    Key("worst");
    Worst(*c.worst, "expected", "allowed");
  }
  Close('}');
}

void ResultJsonWriter::Resources(const CallResources& r) {
  Open('{');
  for (const auto& [key, figure] : kCallFigures) {
    Key(key);
    Integer(r.*figure);
  }
  Key("spinning_threads");
  r.spinning_threads >= 0 ? Integer(r.spinning_threads) : Null();
  Close('}');
}

void ResultJsonWriter::Bound(const BoundCheck& b) {
  Open('{');
  Key("elements");
  Integer(b.elements);
  Key("outside");
  Integer(b.outside);
  Key("unbounded");
  Integer(b.unbounded);
  if (b.worst) {
    Key("worst");
    Worst(*b.worst, "exact", "bound");
  }
  Close('}');
}

StatusOr<Result> ResultFromJson(const json& object) {
  if (!object.is_object()) return InvalidArgumentError("a result must be an object");
  Result r;
  MM_RETURN_IF_ERROR(Get(object, "case", r.case_name));
  if (object.contains("case_index")) MM_RETURN_IF_ERROR(Get(object, "case_index", r.case_index));
  MM_RETURN_IF_ERROR(Get(object, "source", r.source));
  MM_RETURN_IF_ERROR(GetOptionalString(object, "data_set", r.data_set));
  MM_RETURN_IF_ERROR(Get(object, "backend", r.backend));
  std::string text;
  MM_RETURN_IF_ERROR(GetOptionalString(object, "dtype", text));
  if (!text.empty()) {
    auto dtype = DTypeFromName(text);
    if (!dtype.ok()) return dtype.status().WithContext("key \"dtype\"");
    r.dtype = *dtype;
    for (auto [key, dims] : {std::pair{"a_shape", &r.a_dims}, {"b_shape", &r.b_dims}}) {
      MM_RETURN_IF_ERROR(Get(object, key, text));
      auto parsed = ParseDims(text);
      if (!parsed.ok()) return parsed.status().WithContext(std::string("key \"") + key + "\"");
      *dims = std::move(parsed).value();
    }
  }
  MM_RETURN_IF_ERROR(Get(object, "verdict", text));
  auto verdict = VerdictFromName(text);
  if (!verdict.ok()) return verdict.status().WithContext("key \"verdict\"");
  r.verdict = *verdict;
  MM_RETURN_IF_ERROR(Get(object, "message", r.message));
  MM_RETURN_IF_ERROR(GetOptionalString(object, "support_note", r.support_note));
  MM_RETURN_IF_ERROR(GetOptionalString(object, "expectation", r.expectation));
  MM_RETURN_IF_ERROR(GetOptionalString(object, "implementation", r.implementation));
  MM_RETURN_IF_ERROR(GetOptionalString(object, "data_suspect", r.data_suspect));
  MM_RETURN_IF_ERROR(GetDouble(object, "seconds", r.seconds));
  MM_ASSIGN_OR_RETURN(r.vs_expected, OptionalComparison(object, "vs_expected"));
  if (auto it = object.find("vs_bound"); it != object.end() && !it->is_null()) {
    auto bound = BoundCheckFromJson(*it);
    if (!bound.ok()) return bound.status().WithContext("key \"vs_bound\"");
    r.vs_bound = std::move(bound).value();
  }
  MM_RETURN_IF_ERROR(Get(object, "vs_reference", r.vs_reference));
  MM_ASSIGN_OR_RETURN(r.vs_reference_comparison, OptionalComparison(object, "vs_reference_detail"));
  MM_ASSIGN_OR_RETURN(r.resources, ResourcesFromJson(object));
  return r;
}

}  // namespace mm::conformance
