// The explicit list of every backend this build provides.
#ifndef MM_BACKENDS_BACKEND_LIST_H_
#define MM_BACKENDS_BACKEND_LIST_H_

#include "engine/registry.h"

namespace mm {

// A registry holding every backend built into mm, in a fixed order with "reference" first.
// Adding a backend means adding one line to backend_list.cc.
BackendRegistry BuiltinBackends();

}  // namespace mm

#endif  // MM_BACKENDS_BACKEND_LIST_H_
