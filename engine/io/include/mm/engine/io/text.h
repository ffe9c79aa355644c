// Text mm takes from outside (files, command lines, drivers' stderr, plugins) and shows or matches
// against: one rule for what a control character is, one walk over UTF-8, and one cleaner for
// the console.
#ifndef MM_ENGINE_IO_TEXT_H_
#define MM_ENGINE_IO_TEXT_H_

#include <optional>
#include <string>
#include <string_view>

#include "mm/engine/status.h"

namespace mm::io {

// Whether code point `cp` is a control character: C0 (U+0000 to U+001F, NUL included), DEL
// (U+007F) or C1 (U+0080 to U+009F, which a terminal may take as CSI, OSC and the like).
constexpr bool IsControl(char32_t cp) { return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F); }

// What ForEachCodePoint passes for each byte of an invalid UTF-8 sequence (never a code point).
inline constexpr char32_t kNotUtf8 = 0xFFFFFFFF;

// Calls emit(code_point, bytes) for each code point of `text` in order, `bytes` being its UTF-8
// encoding in `text`. Each byte of an invalid sequence (a stray continuation byte such as a raw
// 0x9B, a truncated sequence, an overlong form, a surrogate, a value past U+10FFFF) is passed on
// its own as kNotUtf8.
template <class Emit>
void ForEachCodePoint(std::string_view text, Emit emit) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t length = c < 0x80           ? 1
                               : (c >> 5) == 0x6  ? 2
                               : (c >> 4) == 0xE  ? 3
                               : (c >> 3) == 0x1E ? 4
                                                  : 0;
    bool valid = length > 0 && i + length <= text.size();
    char32_t cp = length == 1   ? c
                  : length == 2 ? (c & 0x1F)
                  : length == 3 ? (c & 0x0F)
                                : (c & 0x07);
    for (std::size_t k = 1; valid && k < length; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + k]);
      valid = (cc >> 6) == 0x2;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Overlong forms, surrogates and values beyond U+10FFFF are invalid too.
    if (valid &&
        ((length == 2 && cp < 0x80) || (length == 3 && cp < 0x800) ||
         (length == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))) {
      valid = false;
    }
    if (!valid) {
      emit(kNotUtf8, text.substr(i, 1));
      ++i;
      continue;
    }
    emit(cp, text.substr(i, length));
    i += length;
  }
}

// The first control character of `text` (IsControl), named with its code and byte offset:
// "U+0000 at byte 1", "U+009B at byte 4"; a raw byte 0x80 to 0x9F outside valid UTF-8 counts too
// ("byte 0x9B at byte 4"). nullopt when there is none.
std::optional<std::string> FirstControlCharacter(std::string_view text);

// OK when pattern `pattern` (an expectations glob, a --filter expression) holds no control
// character; else INVALID_ARGUMENT "<what> "<pattern, cleaned by ConsoleText>" holds the control
// character U+001B at byte 3; a pattern is printable text" (`what`: "the regular expression",
// "known.json: entry 2 (case ...): the "case" pattern"). A NUL would cut the pattern short where
// C strings are used (fnmatch), an escape would drive the terminal that shows the error.
Status CheckPatternText(std::string_view pattern, std::string_view what);

// `text` with every control character (IsControl; newline and tab included) and every byte of
// invalid UTF-8 replaced by `replacement`; the rest kept as it is.
std::string ReplacingControls(std::string_view text, std::string_view replacement);

// `text` safe to show on one console line: ReplacingControls with U+FFFD.
std::string ConsoleText(std::string_view text);

}  // namespace mm::io

#endif  // MM_ENGINE_IO_TEXT_H_
