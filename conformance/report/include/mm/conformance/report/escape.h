// Escapers for the text of reports (paths, messages, names from files and backends): any byte is
// safe in every format.
#ifndef MM_CONFORMANCE_REPORT_ESCAPE_H_
#define MM_CONFORMANCE_REPORT_ESCAPE_H_

#include <string>
#include <string_view>

namespace mm::conformance {

// Escapers. All replace invalid UTF-8 with U+FFFD.
// Text XML 1.0 can hold: invalid UTF-8 and the control characters XML 1.0 forbids (all below
// U+0020 but tab, newline and carriage return, and U+FFFE/U+FFFF) become U+FFFD. Escaping itself
// is pugixml's.
std::string XmlSafeText(std::string_view text);
// Valid UTF-8: each byte of an invalid sequence becomes U+FFFD.
std::string ValidUtf8(std::string_view text);
// A Markdown table cell: one line, | and markup escaped.
std::string MarkdownEscape(std::string_view text);
// A terminal or CI log line (io::ConsoleText): control characters, C0 with newlines and tabs, DEL
// and C1 (U+0080 to U+009F), become U+FFFD, so text from a file can neither break a line nor drive
// the terminal.
std::string PrintableText(std::string_view text);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_REPORT_ESCAPE_H_
