// What mm's command lines (mm-conformance, mm-fuzz) share: CLI11 validators, the help layout and
// shard parsing (names and name patterns, which need no CLI11: cli/names.h).
#ifndef MM_CONFORMANCE_CLI_CLI_SUPPORT_H_
#define MM_CONFORMANCE_CLI_CLI_SUPPORT_H_

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

#include "mm/conformance/cli/names.h"
#include "mm/conformance/running/runner.h"

namespace CLI {
class Validator;  // CLI/Validators.hpp, included by the files that use the validators below.
}  // namespace CLI

namespace mm::conformance {

// Parses "I/N" (1 <= I <= N) into `shard`; the error says what is wrong.
std::optional<std::string> ParseShard(const std::string& text, Shard& shard);

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
}  // namespace cli

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_CLI_CLI_SUPPORT_H_
