// JSON from files mm reads, without exceptions: parsing with a depth limit, and typed access to
// fields whose errors name the file, the field's path and what was expected:
//   calibration table 'x.json': cells[3].backend: expected a string, found a number
#ifndef MM_ENGINE_IO_JSON_H_
#define MM_ENGINE_IO_JSON_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mm/engine/status.h"

namespace mm::io {

// The nesting of any file mm reads is a few levels; 64 leaves room and keeps every recursive
// walk of a parsed value (copies, comparisons, dumps) shallow.
inline constexpr int kMaxJsonDepth = 64;

// The depth of the deepest nesting of `text`, counting [ and { outside strings. When it exceeds
// `max_depth`, sets `*offset` to the byte that opens the first level too deep and returns
// max_depth + 1 without looking further.
int JsonNestingDepth(std::string_view text, int max_depth, std::size_t* offset);

// Parses `text` (the contents of the file `what` names, e.g. "calibration table 'x.json'").
// INVALID_ARGUMENT naming `what` and the byte offset for invalid JSON or nesting deeper than
// `max_depth` (found by a scan before the parser runs). Never throws.
StatusOr<nlohmann::json> ParseJson(std::string_view text, std::string_view what,
                                   int max_depth = kMaxJsonDepth);
// The same, keeping the members of objects in file order.
StatusOr<nlohmann::ordered_json> ParseOrderedJson(std::string_view text, std::string_view what,
                                                  int max_depth = kMaxJsonDepth);

// "a string", "a number", "an object", ...: what a value is, for messages.
std::string_view JsonTypeName(const nlohmann::json& value);
std::string_view JsonTypeName(const nlohmann::ordered_json& value);

// A value inside a parsed file, with where it is: the file (`what`) and the path from the root
// ("cells[3].backend"; empty at the root). Accessors check the type and return INVALID_ARGUMENT
// "<what>: <path>: expected <type>, found <type>" (or "...: missing" for an absent member).
// Holds a reference: the parsed document must outlive it. Json is nlohmann::json or
// nlohmann::ordered_json.
template <class Json>
class JsonField {
 public:
  JsonField(const Json& value, std::string what, std::string path = "")
      : value_(&value), what_(std::move(what)), path_(std::move(path)) {}

  const Json& json() const { return *value_; }
  const std::string& path() const { return path_; }
  // "<what>: <path>" (or "<what>" at the root), how messages about this value start.
  std::string Where() const;
  // INVALID_ARGUMENT "<Where()>: <message>".
  Status Error(std::string_view message) const;
  // INVALID_ARGUMENT "<Where()>: expected <expected>, found <JsonTypeName>".
  Status Expected(std::string_view expected) const;

  // Member `key` of this object; errors when this is not an object or has no such member.
  StatusOr<JsonField> Member(std::string_view key) const;
  // Member `key`, or nullopt when absent; an error when this is not an object.
  StatusOr<std::optional<JsonField>> OptionalMember(std::string_view key) const;
  // Checks that this is an object whose keys are all in `allowed` (a typo must not be ignored).
  Status OnlyKeys(const std::vector<std::string_view>& allowed) const;
  // The elements of this array; an error when it is not an array.
  StatusOr<std::vector<JsonField>> Elements() const;
  // The members of this object, in the document's order; an error when it is not an object.
  StatusOr<std::vector<std::pair<std::string, JsonField>>> Members() const;

  StatusOr<std::string> String() const;
  StatusOr<bool> Bool() const;
  // An integer in [min, max] (a number with a fraction, or out of range, is refused).
  StatusOr<std::int64_t> Int(std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                             std::int64_t max = std::numeric_limits<std::int64_t>::max()) const;
  StatusOr<std::uint64_t> UInt() const;
  // Any number, as a double.
  StatusOr<double> Number() const;
  // An array of strings.
  StatusOr<std::vector<std::string>> Strings() const;

  // Shorthands: Member(key) then the accessor.
  StatusOr<std::string> StringAt(std::string_view key) const;
  StatusOr<bool> BoolAt(std::string_view key) const;
  StatusOr<std::int64_t> IntAt(std::string_view key,
                               std::int64_t min = std::numeric_limits<std::int64_t>::min(),
                               std::int64_t max = std::numeric_limits<std::int64_t>::max()) const;
  StatusOr<double> NumberAt(std::string_view key) const;

 private:
  std::string Child(std::string_view key) const;
  std::string Child(std::size_t index) const;

  const Json* value_;
  std::string what_;
  std::string path_;
};

extern template class JsonField<nlohmann::json>;
extern template class JsonField<nlohmann::ordered_json>;

}  // namespace mm::io

#endif  // MM_ENGINE_IO_JSON_H_
