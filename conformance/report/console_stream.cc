#include "mm/conformance/report/console_stream.h"

#include "mm/engine/io/text.h"

namespace mm::conformance {
namespace {

// Where a UTF-8 sequence begun but not finished at the end of `text` starts; text.size() when the
// text ends on a boundary (or on bytes that can never become valid).
std::size_t UnfinishedTail(std::string_view text) {
  for (std::size_t back = 1; back <= 3 && back <= text.size(); ++back) {
    const auto c = static_cast<unsigned char>(text[text.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // A continuation byte: its lead is further back.
    const std::size_t length = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    return length > back ? text.size() - back : text.size();
  }
  return text.size();
}

}  // namespace

void ConsoleStream::Buffer::Emit(bool all) {
  const std::size_t end = all ? pending_.size() : UnfinishedTail(pending_);
  std::string clean;
  clean.reserve(end);
  io::ForEachCodePoint(std::string_view(pending_).substr(0, end), [&](char32_t cp,
                                                                      std::string_view bytes) {
    const bool layout = cp == U'\n' || cp == U'\t';
    clean += !layout && (cp == io::kNotUtf8 || io::IsControl(cp)) ? std::string_view("\xEF\xBF\xBD")
                                                                  : bytes;
  });
  target_ << clean;
  pending_.erase(0, end);
}

ConsoleStream::Buffer::int_type ConsoleStream::Buffer::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  pending_ += traits_type::to_char_type(c);
  if (c == '\n') Emit(false);
  return c;
}

std::streamsize ConsoleStream::Buffer::xsputn(const char* s, std::streamsize n) {
  pending_.append(s, static_cast<std::size_t>(n));
  if (pending_.find('\n') != std::string::npos) Emit(false);
  return n;
}

int ConsoleStream::Buffer::sync() {
  Emit(false);
  target_.flush();
  return target_ ? 0 : -1;
}

ConsoleStream::ConsoleStream(std::ostream& target) : std::ostream(nullptr), buffer_(target) {
  rdbuf(&buffer_);
}

ConsoleStream::~ConsoleStream() {
  buffer_.Emit(true);
  buffer_.pubsync();
}

}  // namespace mm::conformance
