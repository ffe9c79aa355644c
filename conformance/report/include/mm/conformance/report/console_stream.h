// The console as mm's command lines write it: whatever a line holds from outside (a case name, a
// path, a driver's stderr, a plugin's note, a pattern in an error), no control character reaches
// the terminal but the newlines and tabs that lay out mm's own lines.
#ifndef MM_CONFORMANCE_REPORT_CONSOLE_STREAM_H_
#define MM_CONFORMANCE_REPORT_CONSOLE_STREAM_H_

#include <ostream>
#include <streambuf>
#include <string>

namespace mm::conformance {

// An output stream onto `target` that keeps newlines and tabs and turns every other control
// character (C0, DEL, C1: io::IsControl) and every byte of invalid UTF-8 into U+FFFD. Text goes to
// `target` at each newline, at each flush (which flushes `target` too) and when the stream is
// destroyed; a UTF-8 sequence cut by a flush waits for its end. A newline inside text from outside
// still breaks the line: such text is cleaned where it is put into a line (PrintableText).
class ConsoleStream : public std::ostream {
 public:
  explicit ConsoleStream(std::ostream& target);
  ~ConsoleStream() override;
  ConsoleStream(const ConsoleStream&) = delete;
  ConsoleStream& operator=(const ConsoleStream&) = delete;

 private:
  class Buffer : public std::streambuf {
   public:
    explicit Buffer(std::ostream& target) : target_(target) {}
    // Writes out what is pending; `all`: an unfinished UTF-8 sequence at the end too.
    void Emit(bool all);

   protected:
    int_type overflow(int_type c) override;
    std::streamsize xsputn(const char* s, std::streamsize n) override;
    int sync() override;

   private:
    std::ostream& target_;
    std::string pending_;
  };
  Buffer buffer_;
};

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_REPORT_CONSOLE_STREAM_H_
