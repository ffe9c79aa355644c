// What mm's command lines (mm-conformance, mm-fuzz) share: CLI11 validators, the help layout and
// small helpers for lists of names.
#ifndef MM_CONFORMANCE_CLI_SUPPORT_H_
#define MM_CONFORMANCE_CLI_SUPPORT_H_

// Only CLI11's formatter and its forward declarations (CLI::App, CLI::Option): the whole of CLI11
// defines its validators as objects in every file that includes it, so only the files that build
// a parser include <CLI/CLI.hpp>. FormatterFwd.hpp uses std::function without including it.
// clang-format off
#include <functional>
#include <CLI/FormatterFwd.hpp>
// clang-format on
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mm/conformance/runner.h"

namespace CLI {
class Validator;  // CLI/Validators.hpp, included by the files that use the validators below.
}  // namespace CLI

namespace re2 {
class RE2;
}  // namespace re2

namespace mm::conformance {

// Parses "I/N" (1 <= I <= N) into `shard`; the error says what is wrong.
std::optional<std::string> ParseShard(const std::string& text, Shard& shard);

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

// CLI11 validators shared by mm's command lines; each names the offending value.
namespace cli {
// Rejects an empty value ("needs a non-empty value").
const CLI::Validator& NonEmpty();
// Accepts a finite decimal number >= 0.
const CLI::Validator& FiniteNonNegative();
// Accepts a pattern without a control character (io::CheckPatternText) that NamePattern::Compile
// accepts.
const CLI::Validator& Regex();
// mm's help layout: an option's value shown as its option_text alone ("--data-dir DIR"), and
// descriptions wrapped to 100 columns.
class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter();
  std::string make_option_opts(const CLI::Option* opt) const override;
  std::string make_option_desc(const CLI::Option* opt) const override;
};
// Appends `value` to `list` unless already there (a name given twice counts once).
void AppendOnce(std::vector<std::string>& list, const std::string& value);
// Joins `items` with ", ".
std::string Joined(const std::vector<std::string>& items);
// The names of `after` that `before` has not, in order: the backends an option registered.
std::vector<std::string> NewNames(const std::vector<std::string>& before,
                                  const std::vector<std::string>& after);
}  // namespace cli

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_CLI_SUPPORT_H_
