// mm-conformance and mm-fuzz run in the test's process (mm::testing::RunCli over their in-process
// entry points): the one place the tests call those entry points.
#ifndef MM_CONFORMANCE_TESTING_CLI_RUNS_H_
#define MM_CONFORMANCE_TESTING_CLI_RUNS_H_

#include <string>
#include <vector>

#include "mm/backends/backend_list.h"
#include "mm/conformance/fuzz/fuzz_cli.h"
#include "mm/conformance/tools/cli.h"
#include "mm/engine/registry.h"
#include "mm/engine/testing/cli_run.h"

namespace mm::conformance::testing {

using ::mm::testing::CliRun;

// Runs mm-conformance with `args` (without the program name) over the backends of `registry`,
// with MM_ONNX_DATA read as `env_onnx_data` and MM_EXPECTATIONS as `env_expectations` (nullptr:
// unset).
inline CliRun ConformanceCli(const std::vector<std::string>& args,
                             const BackendRegistry& registry = BuiltinBackends(),
                             const char* env_onnx_data = nullptr,
                             const char* env_expectations = nullptr) {
  return ::mm::testing::RunCli(
      [&](const std::vector<std::string>& a, std::ostream& out, std::ostream& err) {
        return RunConformanceCli(a, registry, env_onnx_data, out, err, env_expectations);
      },
      args);
}

}  // namespace mm::conformance::testing

namespace mm::testing {

// Runs mm-fuzz with `args` (without the program name) over the backends of `registry`.
inline CliRun FuzzCli(const std::vector<std::string>& args,
                      const BackendRegistry& registry = BuiltinBackends()) {
  return RunCli([&](const std::vector<std::string>& a, std::ostream& out,
                    std::ostream& err) { return fuzz::RunFuzzCli(a, registry, out, err); },
                args);
}

}  // namespace mm::testing

#endif  // MM_CONFORMANCE_TESTING_CLI_RUNS_H_
