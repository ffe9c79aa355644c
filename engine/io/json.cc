#include "mm/engine/io/json.h"

#include <algorithm>

namespace mm::io {
namespace {

template <class Json>
StatusOr<Json> Parse(std::string_view text, std::string_view what, int max_depth) {
  std::size_t offset = 0;
  if (JsonNestingDepth(text, max_depth, &offset) > max_depth) {
    return InvalidArgumentError(std::string(what) + ": JSON nested deeper than " +
                                std::to_string(max_depth) + " levels at byte " +
                                std::to_string(offset));
  }
  try {
    return Json::parse(text, nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const nlohmann::json::parse_error& e) {
    // what() is "[json.exception.parse_error.N] parse error at line L, column C: why".
    std::string why = e.what();
    if (const auto at = why.find(" at line "); at != std::string::npos) why = why.substr(at + 4);
    return InvalidArgumentError(std::string(what) + ": not valid JSON: at byte " +
                                std::to_string(e.byte) + " (" + why + ")");
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(std::string(what) + ": not valid JSON: " + e.what());
  }
}

template <class Json>
std::string_view TypeName(const Json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::object:
      return "an object";
    case nlohmann::json::value_t::array:
      return "an array";
    case nlohmann::json::value_t::string:
      return "a string";
    case nlohmann::json::value_t::boolean:
      return "a boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float:
      return "a number";
    default:
      return "something else";
  }
}

}  // namespace

int JsonNestingDepth(std::string_view text, int max_depth, std::size_t* offset) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) {
        if (offset != nullptr) *offset = i;
        return max_depth + 1;
      }
      deepest = std::max(deepest, depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

StatusOr<nlohmann::json> ParseJson(std::string_view text, std::string_view what, int max_depth) {
  return Parse<nlohmann::json>(text, what, max_depth);
}

StatusOr<nlohmann::ordered_json> ParseOrderedJson(std::string_view text, std::string_view what,
                                                  int max_depth) {
  return Parse<nlohmann::ordered_json>(text, what, max_depth);
}

std::string_view JsonTypeName(const nlohmann::json& value) { return TypeName(value); }
std::string_view JsonTypeName(const nlohmann::ordered_json& value) { return TypeName(value); }

template <class Json>
std::string JsonField<Json>::Where() const {
  return path_.empty() ? what_ : what_ + ": " + path_;
}

template <class Json>
Status JsonField<Json>::Error(std::string_view message) const {
  return InvalidArgumentError(Where() + ": " + std::string(message));
}

template <class Json>
Status JsonField<Json>::Expected(std::string_view expected) const {
  return Error("expected " + std::string(expected) + ", found " + std::string(TypeName(*value_)));
}

template <class Json>
std::string JsonField<Json>::Child(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

template <class Json>
std::string JsonField<Json>::Child(std::size_t index) const {
  return path_ + "[" + std::to_string(index) + "]";
}

template <class Json>
StatusOr<JsonField<Json>> JsonField<Json>::Member(std::string_view key) const {
  MM_ASSIGN_OR_RETURN(std::optional<JsonField> member, OptionalMember(key));
  if (!member) return InvalidArgumentError(what_ + ": " + Child(key) + ": missing");
  return *std::move(member);
}

template <class Json>
StatusOr<std::optional<JsonField<Json>>> JsonField<Json>::OptionalMember(
    std::string_view key) const {
  if (!value_->is_object()) return Expected("an object");
  const auto it = value_->find(std::string(key));
  if (it == value_->end()) return std::optional<JsonField>();
  return std::optional<JsonField>(JsonField(*it, what_, Child(key)));
}

template <class Json>
Status JsonField<Json>::OnlyKeys(const std::vector<std::string_view>& allowed) const {
  if (!value_->is_object()) return Expected("an object");
  for (const auto& [key, value] : value_->items()) {
    if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
    std::string list;
    for (std::string_view a : allowed) list += (list.empty() ? "" : ", ") + std::string(a);
    return Error("unknown key '" + key + "' (allowed: " + list + ")");
  }
  return OkStatus();
}

template <class Json>
StatusOr<std::vector<JsonField<Json>>> JsonField<Json>::Elements() const {
  if (!value_->is_array()) return Expected("an array");
  std::vector<JsonField> out;
  out.reserve(value_->size());
  for (std::size_t i = 0; i < value_->size(); ++i) {
    out.emplace_back((*value_)[i], what_, Child(i));
  }
  return out;
}

template <class Json>
StatusOr<std::vector<std::pair<std::string, JsonField<Json>>>> JsonField<Json>::Members() const {
  if (!value_->is_object()) return Expected("an object");
  std::vector<std::pair<std::string, JsonField>> out;
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    out.emplace_back(it.key(), JsonField(it.value(), what_, Child(it.key())));
  }
  return out;
}

template <class Json>
StatusOr<std::string> JsonField<Json>::String() const {
  if (!value_->is_string()) return Expected("a string");
  return value_->template get<std::string>();
}

template <class Json>
StatusOr<bool> JsonField<Json>::Bool() const {
  if (!value_->is_boolean()) return Expected("a boolean");
  return value_->template get<bool>();
}

template <class Json>
StatusOr<std::int64_t> JsonField<Json>::Int(std::int64_t min, std::int64_t max) const {
  const std::string range =
      "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  std::int64_t v = 0;
  if (value_->is_number_unsigned()) {
    const auto u = value_->template get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(max))
      return Error("expected " + range + ", found " + std::to_string(u));
    v = static_cast<std::int64_t>(u);
  } else if (value_->is_number_integer()) {
    v = value_->template get<std::int64_t>();
  } else {
    return Expected(range);
  }
  if (v < min || v > max) return Error("expected " + range + ", found " + std::to_string(v));
  return v;
}

template <class Json>
StatusOr<std::uint64_t> JsonField<Json>::UInt() const {
  if (value_->is_number_unsigned()) return value_->template get<std::uint64_t>();
  if (value_->is_number_integer()) {
    return Error("expected an integer >= 0, found " +
                 std::to_string(value_->template get<std::int64_t>()));
  }
  return Expected("an integer >= 0");
}

template <class Json>
StatusOr<double> JsonField<Json>::Number() const {
  if (!value_->is_number()) return Expected("a number");
  return value_->template get<double>();
}

template <class Json>
StatusOr<std::vector<std::string>> JsonField<Json>::Strings() const {
  MM_ASSIGN_OR_RETURN(std::vector<JsonField> elements, Elements());
  std::vector<std::string> out;
  out.reserve(elements.size());
  for (const JsonField& e : elements) {
    MM_ASSIGN_OR_RETURN(std::string s, e.String());
    out.push_back(std::move(s));
  }
  return out;
}

template <class Json>
StatusOr<std::string> JsonField<Json>::StringAt(std::string_view key) const {
  MM_ASSIGN_OR_RETURN(JsonField member, Member(key));
  return member.String();
}

template <class Json>
StatusOr<bool> JsonField<Json>::BoolAt(std::string_view key) const {
  MM_ASSIGN_OR_RETURN(JsonField member, Member(key));
  return member.Bool();
}

template <class Json>
StatusOr<std::int64_t> JsonField<Json>::IntAt(std::string_view key, std::int64_t min,
                                              std::int64_t max) const {
  MM_ASSIGN_OR_RETURN(JsonField member, Member(key));
  return member.Int(min, max);
}

template <class Json>
StatusOr<double> JsonField<Json>::NumberAt(std::string_view key) const {
  MM_ASSIGN_OR_RETURN(JsonField member, Member(key));
  return member.Number();
}

template class JsonField<nlohmann::json>;
template class JsonField<nlohmann::ordered_json>;

}  // namespace mm::io
