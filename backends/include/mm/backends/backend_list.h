// The explicit list of every backend this build provides.
#ifndef MM_BACKENDS_BACKEND_LIST_H_
#define MM_BACKENDS_BACKEND_LIST_H_

#include "mm/engine/registry.h"

namespace mm {

// A registry holding every backend built into mm, in a fixed order with "reference" first.
// Adding a backend means adding one line to backend_list.cc.
BackendRegistry BuiltinBackends();

// Every built-in backend but auto, in the same order: the backends auto chooses from (and
// mm-bench --mm_calibrate measures).
BackendRegistry AutoCandidateBackends();

}  // namespace mm

#endif  // MM_BACKENDS_BACKEND_LIST_H_
