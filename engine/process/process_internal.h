// What the files of mm::process share (not an API): the children this process started and
// those the kernel lists.
#ifndef MM_ENGINE_PROCESS_PROCESS_INTERNAL_H_
#define MM_ENGINE_PROCESS_PROCESS_INTERNAL_H_

#include <sys/types.h>

#include <optional>
#include <set>
#include <vector>

namespace mm::process::internal {

// The children Fork() started in this process and Reap() has not reaped yet (never strays:
// EndStrays). A forked child starts with none.
std::set<pid_t> StartedChildren();

// This process's children, from every thread's /proc children list; nullopt where the kernel
// does not list them.
std::optional<std::vector<pid_t>> ListedChildren();

}  // namespace mm::process::internal

#endif  // MM_ENGINE_PROCESS_PROCESS_INTERNAL_H_
