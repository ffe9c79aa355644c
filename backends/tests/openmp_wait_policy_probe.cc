// A tool's main in miniature, for openmp_wait_policy_test: calls
// RunAgainWithPassiveOpenMpWaitIfUnset first, then prints on stdout the process it ended up in
// (pid, OMP_WAIT_POLICY, arguments) and on stderr the OpenMP runtime's own settings
// (omp_display_env), which show whether the runtime, not only the environment, took the policy.
#include <omp.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "mm/backends/openmp_wait_policy.h"

int main(int argc, char** argv) {
  mm::RunAgainWithPassiveOpenMpWaitIfUnset(argv, std::cerr);
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  std::cout << "pid=" << getpid() << "\n"
            << "OMP_WAIT_POLICY=" << (policy != nullptr ? policy : "unset") << "\n"
            << "args=";
  for (int i = 1; i < argc; ++i) std::cout << "[" << argv[i] << "]";
  std::cout << std::endl;
  omp_display_env(1);
  return 0;
}
