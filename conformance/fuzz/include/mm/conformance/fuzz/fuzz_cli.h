// The mm-fuzz command line as library functions: parse the arguments into FuzzCliOptions, build a
// FuzzRun from them, run it, finish the report. RunFuzzCli chains them (tests run it in-process).
#ifndef MM_CONFORMANCE_FUZZ_FUZZ_CLI_H_
#define MM_CONFORMANCE_FUZZ_FUZZ_CLI_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "mm/backends/auto/auto_backend.h"
#include "mm/conformance/fuzz/fuzzer.h"
#include "mm/conformance/judging/expectations.h"
#include "mm/engine/registry.h"
#include "mm/engine/status.h"

namespace mm::fuzz {

// Exit codes of mm-fuzz.
inline constexpr int kExitClean = 0;   // Nothing failed.
inline constexpr int kExitFailed = 1;  // Any FAIL or ERROR (or, by the rule, IMPRECISE / BOUND).
inline constexpr int kExitUsage = 2;   // Usage error or unwritable output.

// The command the arguments name: a fuzz run, or one of the subcommands.
enum class FuzzCommand { kRun, kGenerate, kMerge, kExportBuiltin };

// What mm-fuzz's command line says, as given (FuzzRun is what a run makes of it).
struct FuzzCliOptions {
  FuzzCommand command = FuzzCommand::kRun;
  FuzzOptions fuzz;                 // Filled by the options that map onto it one to one.
  std::vector<std::string> dtypes;  // --dtype, in order given, each once.
  std::string tolerance = "bound";  // --tolerance: "bound" or "onnx".
  bool no_shrink = false, quiet = false, version = false;
  std::string json;
  std::string expectations;               // --expectations FILE, else MM_EXPECTATIONS.
  std::vector<std::string> backend_libs;  // Plugins to load (after MM_BACKEND_LIBS's).
  std::vector<std::string> backend_cmds;  // Drivers, "NAME=COMMAND" (--backend-cmd).
  std::string out_dir;                    // generate, export-builtin: --out.
  std::int64_t generate_cases = 100;      // generate --cases.
  std::int64_t cases_per_dtype = 0;       // generate --cases-per-dtype N; 0: --cases decides.
  bool keep_unfair = false;
  bool overwrite = false;  // generate --overwrite: write into a directory that is not empty.
  bool sharded = false;    // --shard given (1/1 included): the report is a shard's.
  bool large = false;      // --large: the large-shape family (--large-products, else sized).
  std::vector<std::string> merge_inputs;  // merge: the shards' reports.
};

// The parsed arguments, or the exit code when parsing already ended the command (--help and
// --version printed to `out`: 0; a usage error printed to `err`, naming the option: 2).
struct ParsedFuzzCli {
  FuzzCliOptions options;
  std::optional<int> exit_code;
};

// Parses `args` (without the program name). `backends` are the names --help lists as the default.
// Checks the options against each other (--first with --cases, --large-products with --large) and
// sizes --large's products when not given.
ParsedFuzzCli ParseFuzzCli(const std::vector<std::string>& args,
                           const std::vector<std::string>& backends, std::ostream& out,
                           std::ostream& err);

// A fuzz run built from the options: the registry with MM_BACKEND_LIBS's and --backend-lib's
// plugins and --backend-cmd's drivers, and the complete FuzzOptions (backends, dtypes, rule,
// replay words, expectations and what auto runs on). options.expectations points into it.
struct FuzzRun {
  BackendRegistry registry;
  FuzzOptions options;
  std::unique_ptr<conformance::Expectations> expectations;  // Null: none.
  std::unique_ptr<ScopedAutoDeviations> auto_deviations;    // Held for the run's duration.
};

// Builds the run of `cli` (command kRun) over `builtin`. INVALID_ARGUMENT with the usage error's
// text (a plugin or driver that does not load, an unknown or unavailable backend, unreadable
// expectations); the text ends in "Try 'mm-fuzz --help'." where the arguments are at fault.
StatusOr<std::unique_ptr<FuzzRun>> BuildFuzzRun(const FuzzCliOptions& cli,
                                                const BackendRegistry& builtin);

// Runs `run` with SIGINT/SIGTERM stopping it, inside a problem too, within 2 s (the report then
// says so; FuzzOptions::stop), and auto's first-use waits with it (ScopedAutoStop); a second
// signal ends the process. Findings are written to `log` as found (may be null). A report that
// says `abandoned` must be written and the process ended (RunFuzzCli does so).
FuzzReport RunFuzzCampaign(FuzzRun& run, std::ostream* log);

// The exit code of a finished run: 128 + the signal when interrupted, else FuzzReport::ExitCode.
int FuzzExitCode(const FuzzRun& run, const FuzzReport& report);

// Prints the run's end (interruption, `findings_log`, the per-backend counts unless --quiet,
// the declared deviations, the summary) and writes --json. Returns the exit code (kExitUsage
// when the JSON cannot be written).
int FinishFuzzReport(const FuzzCliOptions& cli, const FuzzRun& run, const FuzzReport& report,
                     const std::string& findings_log, std::ostream& out, std::ostream& err);

// Runs mm-fuzz with `args` (without the program name) over `registry` plus the plugins of
// MM_BACKEND_LIBS and --backend-lib, printing to `out` and `err` through ConsoleStream (no
// control character but mm's own newlines and tabs). Returns the exit code.
int RunFuzzCli(const std::vector<std::string>& args, const BackendRegistry& registry,
               std::ostream& out, std::ostream& err);

}  // namespace mm::fuzz

#endif  // MM_CONFORMANCE_FUZZ_FUZZ_CLI_H_
