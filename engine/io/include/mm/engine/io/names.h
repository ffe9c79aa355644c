// Names that mm takes from files and command lines and prints (backend names of plugins and of
// --outputs trees): one rule, so a name can never carry a newline or an escape sequence into a
// console line or a report.
#ifndef MM_ENGINE_IO_NAMES_H_
#define MM_ENGINE_IO_NAMES_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "mm/engine/status.h"

namespace mm::io {

// The longest name CheckName accepts.
inline constexpr std::size_t kMaxNameLength = 64;

// OK when `name` is 1 to kMaxNameLength characters of [A-Za-z0-9_-]; else INVALID_ARGUMENT
// "<what> is empty", "<what> '<first 64>...' is longer than 64 characters" or "<what> '<name>' has
// a character outside [A-Za-z0-9_-]" (the name shown with each unprintable byte as '?').
Status CheckName(std::string_view name, std::string_view what);

// `text` with every byte outside printable ASCII shown as '?': safe to print on one line.
std::string Printable(std::string_view text);

}  // namespace mm::io

#endif  // MM_ENGINE_IO_NAMES_H_
