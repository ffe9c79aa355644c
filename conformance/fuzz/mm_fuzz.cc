// mm-fuzz: differential fuzzing of every MatMul backend against an exact oracle. See --help and
// docs/differential-fuzzing.md.
#include <iostream>
#include <string>
#include <vector>

#include "mm/backends/backend_list.h"
#include "mm/backends/openmp_wait_policy.h"
#include "mm/conformance/fuzz/fuzz_cli.h"
#include "mm/engine/memory_reuse.h"

int main(int argc, char** argv) {
  mm::RunAgainWithPassiveOpenMpWaitIfUnset(argv, std::cerr);
  // The oracle's and the backends' arrays reused from call to call (false under a sanitizer).
  mm::KeepFreedMemoryForReuse();
  std::vector<std::string> args(argv + 1, argv + argc);
  const mm::BackendRegistry registry = mm::BuiltinBackends();
  return mm::fuzz::RunFuzzCli(args, registry, std::cout, std::cerr);
}
