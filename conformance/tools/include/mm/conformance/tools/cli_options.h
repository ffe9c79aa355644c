// The mm-conformance command line, defined once with CLI11: the options struct and the function
// that builds the parser (and so the --help text and the usage errors) from it.
#ifndef MM_CONFORMANCE_TOOLS_CLI_OPTIONS_H_
#define MM_CONFORMANCE_TOOLS_CLI_OPTIONS_H_

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "conformance/compare.h"
#include "conformance/report/merge.h"
#include "conformance/runner.h"
#include "conformance/session.h"

namespace mm::conformance {

// The options of mm-conformance (conformance/session.h).
using CliOptions = ConformanceOptions;

// Parses "I/N" (1 <= I <= N) into `shard`; the error says what is wrong.
std::optional<std::string> ParseShard(const std::string& text, Shard& shard);

// Parses the arguments after "merge"; nullopt on success, "" for --help (text in `help`), or the
// usage error (also: two of --json, --junit, --markdown naming one file).
std::optional<std::string> ParseMergeArgs(const std::vector<std::string>& args,
                                          MergeOptions& options, std::string& help);

// Builds the mm-conformance parser writing into `options` (which must outlive it). Every option
// is declared here once, with its help text, value checks and group; to add an option, add a
// field to CliOptions and one declaration here. `backend_names` are listed in --help.
std::unique_ptr<CLI::App> MakeConformanceApp(CliOptions& options,
                                             const std::vector<std::string>& backend_names);

// Parses `args` (without the program name) into `options`. Returns nullopt on success, "" when
// --help was asked (the help text is then in `help`), or the usage error's message (also: two of
// --json, --junit, --markdown naming one file, CheckDistinctOutputs).
std::optional<std::string> ParseConformanceArgs(const std::vector<std::string>& args,
                                                const std::vector<std::string>& backend_names,
                                                CliOptions& options, std::string& help);

// CLI11 validators shared by mm's command lines; each names the offending value.
namespace cli {
// Rejects an empty value ("needs a non-empty value").
const CLI::Validator& NonEmpty();
// Accepts a finite decimal number >= 0.
const CLI::Validator& FiniteNonNegative();
// Accepts an ECMAScript regular expression.
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

#endif  // MM_CONFORMANCE_TOOLS_CLI_OPTIONS_H_
