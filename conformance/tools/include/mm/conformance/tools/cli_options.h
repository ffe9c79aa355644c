// The mm-conformance command line, defined once with CLI11: the options struct and the function
// that builds the parser (and so the --help text and the usage errors) from it.
#ifndef MM_CONFORMANCE_TOOLS_CLI_OPTIONS_H_
#define MM_CONFORMANCE_TOOLS_CLI_OPTIONS_H_

#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "mm/conformance/cli/cli_support.h"  // CLI::App (declared only)
#include "mm/conformance/judging/compare.h"
#include "mm/conformance/report/merge.h"
#include "mm/conformance/running/runner.h"
#include "mm/conformance/session/session.h"

namespace mm::conformance {

// The options of mm-conformance (conformance/session/session.h).
using CliOptions = ConformanceOptions;

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

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_TOOLS_CLI_OPTIONS_H_
