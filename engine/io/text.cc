#include "mm/engine/io/text.h"

#include <cstdio>

namespace mm::io {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD in UTF-8.

}  // namespace

std::optional<std::string> FirstControlCharacter(std::string_view text) {
  std::optional<std::string> found;
  std::size_t offset = 0;
  ForEachCodePoint(text, [&](char32_t cp, std::string_view bytes) {
    if (!found) {
      char name[32] = "";
      const auto byte = static_cast<unsigned char>(bytes.front());
      if (cp == kNotUtf8 && byte >= 0x80 && byte <= 0x9F) {
        std::snprintf(name, sizeof name, "byte 0x%02X", byte);
      } else if (cp != kNotUtf8 && IsControl(cp)) {
        std::snprintf(name, sizeof name, "U+%04X", static_cast<unsigned>(cp));
      }
      if (name[0] != '\0') found = std::string(name) + " at byte " + std::to_string(offset);
    }
    offset += bytes.size();
  });
  return found;
}

Status CheckPatternText(std::string_view pattern, std::string_view what) {
  const std::optional<std::string> control = FirstControlCharacter(pattern);
  if (!control) return OkStatus();
  return InvalidArgumentError(std::string(what) + " \"" + ConsoleText(pattern) +
                              "\" holds the control character " + *control +
                              "; a pattern is printable text");
}

std::string ReplacingControls(std::string_view text, std::string_view replacement) {
  std::string out;
  out.reserve(text.size());
  ForEachCodePoint(text, [&](char32_t cp, std::string_view bytes) {
    out += cp == kNotUtf8 || IsControl(cp) ? replacement : bytes;
  });
  return out;
}

std::string ConsoleText(std::string_view text) { return ReplacingControls(text, kReplacement); }

}  // namespace mm::io
