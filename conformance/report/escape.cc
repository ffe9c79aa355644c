#include "mm/conformance/report/escape.h"

#include <algorithm>

#include "mm/engine/io/text.h"

namespace mm::conformance {
namespace {

// Splits `text` into code points (io::ForEachCodePoint), each byte of an invalid UTF-8 sequence
// becoming U+FFFD.
template <class Emit>
void ForEachCodePoint(std::string_view text, Emit emit) {
  io::ForEachCodePoint(text, [&](char32_t cp, std::string_view bytes) {
    if (cp == io::kNotUtf8) return emit(U'\uFFFD', std::string_view("\xEF\xBF\xBD"));
    emit(cp, bytes);
  });
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
    } else if (io::IsControl(cp)) {
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

std::string PrintableText(std::string_view text) { return io::ConsoleText(text); }

}  // namespace mm::conformance
