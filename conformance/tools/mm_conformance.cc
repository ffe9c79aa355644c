// mm-conformance: runs ONNX MatMul node tests on every backend and says which conform. See
// --help and docs/conformance.md.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "mm/backends/backend_list.h"
#include "mm/backends/openmp_wait_policy.h"
#include "mm/conformance/self_check/self_check.h"
#include "mm/conformance/tools/cli.h"

int main(int argc, char** argv) {
  mm::RunAgainWithPassiveOpenMpWaitIfUnset(argv, std::cerr);
  std::vector<std::string> args(argv + 1, argv + argc);
  mm::conformance::SetSelfCheckCommand(mm::self_check::RunSelfCheckCommand);
  const mm::BackendRegistry registry = mm::BuiltinBackends();
  return mm::conformance::RunConformanceCli(args, registry, std::getenv("MM_ONNX_DATA"), std::cout,
                                            std::cerr, std::getenv("MM_EXPECTATIONS"));
}
