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
#include "mm/engine/memory_reuse.h"

int main(int argc, char** argv) {
  mm::RunAgainWithPassiveOpenMpWaitIfUnset(argv, std::cerr);
  // The oracle's and the backends' arrays reused from call to call (false under a sanitizer).
  mm::KeepFreedMemoryForReuse();
  const mm::BackendRegistry registry = mm::BuiltinBackends();
  mm::conformance::RunEnvironment env;
  env.builtin = &registry;
  env.onnx_data = std::getenv("MM_ONNX_DATA");
  env.expectations = std::getenv("MM_EXPECTATIONS");
  env.self_check = mm::self_check::RunSelfCheckCommand;
  return mm::conformance::RunConformanceCli({argv + 1, argv + argc}, env, std::cout, std::cerr);
}
