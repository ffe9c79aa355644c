// The mm-fuzz command line, as a function so tests can run it in-process.
#ifndef MM_CONFORMANCE_FUZZ_FUZZ_CLI_H_
#define MM_CONFORMANCE_FUZZ_FUZZ_CLI_H_

#include <ostream>
#include <string>
#include <vector>

#include "mm/engine/registry.h"

namespace mm::fuzz {

// Exit codes of mm-fuzz.
inline constexpr int kExitClean = 0;   // Nothing failed.
inline constexpr int kExitFailed = 1;  // Any FAIL or ERROR (or, by the rule, IMPRECISE / BOUND).
inline constexpr int kExitUsage = 2;   // Usage error or unwritable output.

// Runs mm-fuzz with `args` (without the program name) over `registry` plus the plugins of
// MM_BACKEND_LIBS and --backend-lib, printing to `out` and `err`. Returns the exit code.
int RunFuzzCli(const std::vector<std::string>& args, const BackendRegistry& registry,
               std::ostream& out, std::ostream& err);

}  // namespace mm::fuzz

#endif  // MM_CONFORMANCE_FUZZ_FUZZ_CLI_H_
