#include "mm/engine/testdata/onnx_matmul_examples.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <sstream>

#include "mm/engine/dtype.h"

namespace mm {
namespace {

struct Line {
  int number;
  std::string_view text;
};

std::string_view Trim(std::string_view s) {
  const auto begin = s.find_first_not_of(" \t\r");
  if (begin == std::string_view::npos) return {};
  const auto end = s.find_last_not_of(" \t\r");
  return s.substr(begin, end - begin + 1);
}

std::vector<std::string_view> Words(std::string_view s) {
  std::vector<std::string_view> words;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    std::size_t j = i;
    while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
    if (j > i) words.push_back(s.substr(i, j - i));
    i = j;
  }
  return words;
}

class Parser {
 public:
  Parser(std::string_view text, std::string_view source) : source_(source) {
    int number = 0;
    while (!text.empty()) {
      ++number;
      const auto eol = text.find('\n');
      std::string_view line = Trim(text.substr(0, eol));
      text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
      if (line.empty() || line.front() == '#') continue;
      lines_.push_back({number, line});
    }
  }

  StatusOr<std::vector<ExampleCase>> Parse() {
    std::vector<ExampleCase> cases;
    while (pos_ < lines_.size()) {
      const Line& header = lines_[pos_++];
      auto words = Words(header.text);
      if (words.size() != 2 || words[0] != "case") {
        return Error(header, "expected 'case NAME', found '" + std::string(header.text) + "'");
      }
      ExampleCase example;
      example.name = std::string(words[1]);
      for (auto [role, target] :
           {std::pair{"a", &example.a}, std::pair{"b", &example.b}, std::pair{"y", &example.y}}) {
        MM_ASSIGN_OR_RETURN(*target, ParseTensor(role));
      }
      if (pos_ >= lines_.size() || lines_[pos_].text != "end") {
        return Error(pos_ < lines_.size() ? lines_[pos_] : header,
                     "expected 'end' after the tensors of case " + example.name);
      }
      ++pos_;
      cases.push_back(std::move(example));
    }
    if (cases.empty()) return InvalidArgumentError(std::string(source_) + ": no cases");
    return cases;
  }

 private:
  Status Error(const Line& line, const std::string& what) const {
    return InvalidArgumentError(std::string(source_) + ":" + std::to_string(line.number) + ": " +
                                what);
  }

  StatusOr<Dims> ParseDims(const Line& line, std::string_view s) {
    if (s.size() < 2 || s.front() != '[' || s.back() != ']') {
      return Error(line, "expected dims like [2,3], found '" + std::string(s) + "'");
    }
    Dims dims;
    s = s.substr(1, s.size() - 2);
    while (!s.empty()) {
      const auto comma = s.find(',');
      std::string_view part = s.substr(0, comma);
      std::int64_t d = 0;
      auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), d);
      if (ec != std::errc() || ptr != part.data() + part.size() || d < 0) {
        return Error(line, "bad dimension '" + std::string(part) + "'");
      }
      dims.push_back(d);
      s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
    }
    return dims;
  }

  StatusOr<Tensor> ParseTensor(std::string_view role) {
    if (pos_ >= lines_.size()) {
      return InvalidArgumentError(std::string(source_) + ": missing tensor " + std::string(role));
    }
    const Line& header = lines_[pos_++];
    auto words = Words(header.text);
    if (words.size() != 3 || words[0] != role) {
      return Error(header, "expected '" + std::string(role) + " DTYPE [dims]', found '" +
                               std::string(header.text) + "'");
    }
    auto dtype = DTypeFromName(words[1]);
    if (!dtype.ok()) return Error(header, dtype.status().message());
    MM_ASSIGN_OR_RETURN(Dims dims, ParseDims(header, words[2]));
    auto tensor = Tensor::Create(*dtype, dims);
    if (!tensor.ok()) return Error(header, tensor.status().message());
    std::int64_t filled = 0;
    const std::int64_t count = tensor->NumElements();
    while (filled < count) {
      if (pos_ >= lines_.size()) {
        return Error(header, "tensor " + std::string(role) + " needs " + std::to_string(count) +
                                 " values, found " + std::to_string(filled));
      }
      const Line& line = lines_[pos_];
      auto values = Words(line.text);
      if (!values.empty() && (values[0] == "end" || values[0] == "a" || values[0] == "b" ||
                              values[0] == "y" || values[0] == "case")) {
        return Error(line, "tensor " + std::string(role) + " needs " + std::to_string(count) +
                               " values, found " + std::to_string(filled));
      }
      ++pos_;
      for (std::string_view word : values) {
        if (filled == count) {
          return Error(line, "tensor " + std::string(role) + " has more than " +
                                 std::to_string(count) + " values");
        }
        MM_RETURN_IF_ERROR(Store(line, word, *tensor, filled++));
      }
    }
    return std::move(tensor).value();
  }

  Status Store(const Line& line, std::string_view word, Tensor& tensor, std::int64_t index) {
    const std::string s(word);
    return VisitDType(tensor.dtype(), [&](auto tag) -> Status {
      using T = CppType<decltype(tag)::value>;
      T* data = tensor.Data<T>();
      if constexpr (std::is_integral_v<T>) {
        T value{};
        auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
        if (ec != std::errc() || ptr != s.data() + s.size()) {
          return Error(line, "'" + s + "' is not a " + std::string(DTypeName(tensor.dtype())));
        }
        data[index] = value;
      } else {
        char* end = nullptr;
        errno = 0;
        const double value = std::strtod(s.c_str(), &end);
        if (end != s.c_str() + s.size() || s.empty()) {
          return Error(line, "'" + s + "' is not a number");
        }
        // strtof rounds decimal -> float once; the 16-bit types go through double.
        if constexpr (std::is_same_v<T, float>) {
          data[index] = std::strtof(s.c_str(), nullptr);
        } else {
          data[index] = RoundFromDouble<T>(value);
        }
      }
      return OkStatus();
    });
  }

  std::string_view source_;
  std::vector<Line> lines_;
  std::size_t pos_ = 0;
};

}  // namespace

StatusOr<std::vector<ExampleCase>> ParseExamples(std::string_view text, std::string_view source) {
  return Parser(text, source).Parse();
}

StatusOr<std::vector<ExampleCase>> BuiltinExamples() {
  return ParseExamples(BuiltinExamplesText(), "builtin:onnx_matmul_examples.txt");
}

}  // namespace mm
