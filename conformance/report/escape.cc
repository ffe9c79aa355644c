#include "mm/conformance/report/escape.h"

#include <algorithm>

namespace mm::conformance {
namespace {

// Splits `text` into code points, replacing each byte of an invalid UTF-8 sequence with U+FFFD.
template <class Emit>
void ForEachCodePoint(std::string_view text, Emit emit) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    int length = c < 0x80           ? 1
                 : (c >> 5) == 0x6  ? 2
                 : (c >> 4) == 0xE  ? 3
                 : (c >> 3) == 0x1E ? 4
                                    : 0;
    bool valid = length > 0 && i + length <= text.size();
    char32_t cp = length == 1   ? c
                  : length == 2 ? (c & 0x1F)
                  : length == 3 ? (c & 0x0F)
                                : (c & 0x07);
    for (int k = 1; valid && k < length; ++k) {
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
      emit(U'\uFFFD', std::string_view("\xEF\xBF\xBD"));
      ++i;
      continue;
    }
    emit(cp, text.substr(i, length));
    i += length;
  }
}

}  // namespace

std::string ValidUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  ForEachCodePoint(text, [&](char32_t, std::string_view bytes) { out += bytes; });
  return out;
}

std::string XmlSafeText(std::string_view text) {
  // Most text is printable ASCII, which XML holds as it is: one scan instead of a decode.
  if (std::all_of(text.begin(), text.end(), [](char c) {
        return (c >= 0x20 && c < 0x7F) || c == '\t' || c == '\n' || c == '\r';
      })) {
    return std::string(text);
  }
  std::string out;
  out.reserve(text.size());
  ForEachCodePoint(text, [&](char32_t cp, std::string_view bytes) {
    // XML 1.0 cannot hold other control characters, even as references.
    const bool allowed =
        cp == U'\t' || cp == U'\n' || cp == U'\r' || (cp >= 0x20 && cp != 0xFFFE && cp != 0xFFFF);
    out += allowed ? bytes : std::string_view("\xEF\xBF\xBD");
  });
  return out;
}

std::string MarkdownEscape(std::string_view text) {
  std::string out;
  char32_t previous = 0;
  ForEachCodePoint(text, [&](char32_t cp, std::string_view bytes) {
    if (cp == U'\n' || cp == U'\r') {
      out += "<br>";
    } else if (cp < 0x20 || cp == 0x7F) {
      out += ' ';
    } else if (cp == U'<') {
      out += "&lt;";
    } else if (cp == U'>') {
      out += "&gt;";
    } else if (cp == U'&') {
      out += "&amp;";
    } else if (cp < 0x80 &&
               std::string_view("|\\`*_").find(static_cast<char>(cp)) != std::string_view::npos) {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == U'(' && previous == U']') {
      out += "\\(";  // "](" would start a link.
    } else {
      out += bytes;
    }
    previous = cp;
  });
  return out;
}

std::string PrintableText(std::string_view text) {
  std::string out;
  ForEachCodePoint(text, [&](char32_t cp, std::string_view bytes) {
    out += (cp < 0x20 || cp == 0x7F) ? std::string_view("\xEF\xBF\xBD") : bytes;
  });
  return out;
}

}  // namespace mm::conformance
