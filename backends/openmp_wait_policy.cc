#include "mm/backends/openmp_wait_policy.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace mm {

void RunAgainWithPassiveOpenMpWaitIfUnset(char** argv, std::ostream& err) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0) return;
  execv("/proc/self/exe", argv);
  const int error = errno;
  unsetenv("OMP_WAIT_POLICY");
  err << "mm: cannot run again with OMP_WAIT_POLICY=passive (exec /proc/self/exe: "
      << std::strerror(error) << "); idle OpenMP threads spin between parallel regions\n";
}

}  // namespace mm
