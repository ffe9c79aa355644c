// The OpenMP wait policy mm's tools run with when the user sets none.
#ifndef MM_BACKENDS_OPENMP_WAIT_POLICY_H_
#define MM_BACKENDS_OPENMP_WAIT_POLICY_H_

#include <ostream>

namespace mm {

// For a tool's main, before anything else: when OMP_WAIT_POLICY is unset, runs this executable
// again in the same process (execv of /proc/self/exe: same pid, arguments, descriptors and
// environment) with OMP_WAIT_POLICY=passive, so that idle OpenMP threads (oneDNN's, Eigen's,
// BLIS's) sleep between parallel regions instead of spinning. The OpenMP runtime reads the
// variable when it loads, before main, so it cannot be set in-process. A run of many tiny cases
// spends most of its time in that spinning otherwise. Returns when the variable was set (the user's
// choice, "active" included, wins), or when the exec failed: then the environment is as it was and
// `err` says why.
void RunAgainWithPassiveOpenMpWaitIfUnset(char** argv, std::ostream& err);

}  // namespace mm

#endif  // MM_BACKENDS_OPENMP_WAIT_POLICY_H_
