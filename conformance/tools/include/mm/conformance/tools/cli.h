// The mm-conformance command line, as a function so tests can run it in-process.
#ifndef MM_CONFORMANCE_TOOLS_CLI_H_
#define MM_CONFORMANCE_TOOLS_CLI_H_

#include <ostream>
#include <string>
#include <vector>

#include "mm/conformance/loader/catalog.h"
#include "mm/conformance/report/report.h"
#include "mm/engine/registry.h"

namespace mm::conformance {

// Exit codes of mm-conformance.
inline constexpr int kExitPassed = 0;    // Every selected result passed (UNSUPPORTED allowed
                                         // unless --strict).
inline constexpr int kExitFailed = 1;    // Any FAIL or ERROR (or UNSUPPORTED under --strict).
inline constexpr int kExitUsage = 2;     // Usage error, unwritable report, or no MatMul case.
inline constexpr int kExitOfficial = 3;  // --require-official and an official case is missing
                                         // or altered.

// What --self-check runs: the self-check over `roots` (plus the built-in cases when `builtin`) in
// `jobs` worker processes, printing to `out` (only the misses and the summary when `quiet`);
// returns the exit code. This library does not link
// the planted backends, so the program installs it: mm-conformance's main installs
// mm::self_check::RunSelfCheckCommand (conformance/self_check/self_check.h).
using SelfCheckCommand = int (*)(const std::vector<DataRoot>& roots, bool builtin, int jobs,
                                 bool quiet, std::ostream& out);
// Installs `command` for --self-check; without one (nullptr), --self-check is a usage error.
void SetSelfCheckCommand(SelfCheckCommand command);

// For tests only (a seam, never set by the tool): called with "load-backends" before the plugins
// are loaded and probed, "discover" before the cases are found and "describe" before the backends
// are described, so a test can deliver a signal at a known point of a run's start instead of
// racing it. nullptr (the default) calls nothing.
using StartHook = void (*)(const char* stage);
void SetStartHookForTesting(StartHook hook);

// Which cases and results `selected` (cases of `catalog`, run on `num_backends` backends) are, with
// a fingerprint: the exclusive or, over the cases, of a hash (FNV-1a, 64 bits) of each case's
// catalog index, name and data sets, so the shards of a run combine into the fingerprint of the
// whole run (MergeShardHeaders checks that they do).
Selection SelectionOf(const Catalog& catalog, const std::vector<CaseStart>& selected,
                      std::size_t num_backends);

// Runs mm-conformance with `args` (without the program name), printing to `out` and `err`.
// `env_onnx_data` is the value of MM_ONNX_DATA and `env_expectations` of MM_EXPECTATIONS (nullptr
// when unset). Runs the backends of `builtin` and the plugins of MM_BACKEND_LIBS (read from the
// environment) and --backend-lib. `args` starting with "merge" merge shard reports instead.
// Returns the exit code.
int RunConformanceCli(const std::vector<std::string>& args, const BackendRegistry& builtin,
                      const char* env_onnx_data, std::ostream& out, std::ostream& err,
                      const char* env_expectations = nullptr);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_TOOLS_CLI_H_
