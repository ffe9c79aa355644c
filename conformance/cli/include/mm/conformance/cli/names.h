// Names on mm's command lines, without CLI11: the --filter/--exclude patterns cases are selected
// by, and lists of backend names.
#ifndef MM_CONFORMANCE_CLI_NAMES_H_
#define MM_CONFORMANCE_CLI_NAMES_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mm/engine/status.h"

namespace re2 {
class RE2;
}  // namespace re2

namespace mm::conformance {

// A --filter/--exclude pattern: an RE2 regular expression (github.com/google/re2/wiki/Syntax),
// matched in time linear in the name, never backtracking (a pattern such as (a*)*b ends as fast
// as any). Mostly ECMAScript's syntax as std::regex took it; what differs (no backreferences, no
// lookahead or lookbehind) is refused when compiled. Copies share the compiled expression.
class NamePattern {
 public:
  // INVALID_ARGUMENT naming the pattern and what is wrong with it (its syntax, or a construct RE2
  // does not have).
  static StatusOr<NamePattern> Compile(std::string_view pattern);
  // Whether the pattern matches anywhere in `name` (a partial match, as std::regex_search).
  bool Matches(std::string_view name) const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  std::shared_ptr<const re2::RE2> re_;
};

namespace cli {

// Appends `value` to `list` unless already there (a name given twice counts once).
void AppendOnce(std::vector<std::string>& list, const std::string& value);
// Joins `items` with ", ".
std::string Joined(const std::vector<std::string>& items);
// The names of `after` that `before` has not, in order: the backends an option registered.
std::vector<std::string> NewNames(const std::vector<std::string>& before,
                                  const std::vector<std::string>& after);
}  // namespace cli
}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_CLI_NAMES_H_
