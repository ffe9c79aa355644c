// One conformance Result as JSON and back: the form of a result in the JSON report, in the messages
// of isolated workers, and what `mm-conformance merge` reads back from shard reports.
#ifndef MM_CONFORMANCE_RESULTS_RESULT_JSON_H_
#define MM_CONFORMANCE_RESULTS_RESULT_JSON_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "mm/conformance/judging/result.h"
#include "mm/engine/status.h"

namespace mm::conformance {

// The JSON report's form of a result: its fields as conformance/results/result_schema.h lists them,
// in that order (nested comparisons, bound checks and resources as objects, null when absent).
// Non-finite numbers are the strings "nan", "inf", "-inf". Strings are copied as they are; dump
// with error_handler_t::replace to turn invalid UTF-8 into U+FFFD.
nlohmann::ordered_json ResultToJson(const Result& result);

// ResultToJson(result) as text, written without building it (the JSON report's hot path): the
// bytes nlohmann's dump gives for it with an indent step of 2 from `indent` spaces, or on one line
// (kOneLine: dump without indent), invalid UTF-8 replaced, nothing escaped as ASCII. Keeps its
// buffers from result to result.
class ResultJsonWriter {
 public:
  // Render's indent for a result on one line.
  static constexpr int kOneLine = -1;

  ResultJsonWriter();
  // The text of `result`, valid until the next call.
  const std::string& Render(const Result& result, int indent);

 private:
  void Open(char bracket);
  void Key(std::string_view key);
  void Close(char bracket);
  void String(std::string_view text);
  void Double(double value);  // As JsonDouble.
  void Integer(std::int64_t value);
  void Bool(bool value);
  void Null();
  void Dims(const mm::Dims& dims);
  class Fields;  // The visitor of result_schema.h that calls the primitives above.

  std::string text_;
  nlohmann::ordered_json string_, float_, integer_;  // Reused values the serializer writes.
  nlohmann::detail::serializer<nlohmann::ordered_json> serializer_;
  std::vector<bool> first_;  // Per open object or array: no member written yet.
  int indent_ = 0;
};

// The inverse of ResultToJson: every field it writes reads back equal. INVALID_ARGUMENT naming the
// key when something is missing or of the wrong type; never throws.
StatusOr<Result> ResultFromJson(const nlohmann::json& json);

// A double as JSON: a number, or "nan", "inf", "-inf"; and back (also from those strings).
nlohmann::ordered_json JsonDouble(double value);
StatusOr<double> DoubleFromJson(const nlohmann::json& json);

// "[2,3,4]" -> {2, 3, 4}; "[]" -> {}. INVALID_ARGUMENT otherwise.
StatusOr<Dims> ParseDims(std::string_view text);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_RESULTS_RESULT_JSON_H_
