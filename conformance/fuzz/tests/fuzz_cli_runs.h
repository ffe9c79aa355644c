// mm-fuzz run in the test's process (mm::testing::RunCli over its in-process entry point): the one
// place the tests call that entry point.
#ifndef MM_CONFORMANCE_FUZZ_TESTS_FUZZ_CLI_RUNS_H_
#define MM_CONFORMANCE_FUZZ_TESTS_FUZZ_CLI_RUNS_H_

#include <string>
#include <vector>

#include "mm/backends/backend_list.h"
#include "mm/conformance/fuzz/fuzz_cli.h"
#include "mm/engine/registry.h"
#include "mm/engine/testing/cli_run.h"

namespace mm::testing {

// Runs mm-fuzz with `args` (without the program name) over the backends of `registry`.
inline CliRun FuzzCli(const std::vector<std::string>& args,
                      const BackendRegistry& registry = BuiltinBackends()) {
  return RunCli([&](const std::vector<std::string>& a, std::ostream& out,
                    std::ostream& err) { return fuzz::RunFuzzCli(a, registry, out, err); },
                args);
}

}  // namespace mm::testing

#endif  // MM_CONFORMANCE_FUZZ_TESTS_FUZZ_CLI_RUNS_H_
