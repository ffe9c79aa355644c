#include "mm/engine/io/names.h"

namespace mm::io {

std::string Printable(std::string_view text) {
  std::string shown;
  shown.reserve(text.size());
  for (char c : text) shown += (c >= 0x20 && c < 0x7f) ? c : '?';
  return shown;
}

Status CheckName(std::string_view name, std::string_view what) {
  const std::string who(what);
  if (name.empty()) return InvalidArgumentError(who + " is empty");
  if (name.size() > kMaxNameLength) {
    return InvalidArgumentError(who + " '" + Printable(name.substr(0, kMaxNameLength)) +
                                "...' is longer than " + std::to_string(kMaxNameLength) +
                                " characters");
  }
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) {
      return InvalidArgumentError(who + " '" + Printable(name) +
                                  "' has a character outside [A-Za-z0-9_-]");
    }
  }
  return OkStatus();
}

}  // namespace mm::io
