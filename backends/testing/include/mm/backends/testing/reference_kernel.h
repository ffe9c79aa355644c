// The reference backend's answer as a fake backend's kernel, for fakes that must compute exactly
// as the reference does (byte for byte) before they go wrong.
#ifndef MM_BACKENDS_TESTING_REFERENCE_KERNEL_H_
#define MM_BACKENDS_TESTING_REFERENCE_KERNEL_H_

#include "mm/engine/testing/fake_backend.h"

namespace mm::testing {

// Computes Y as ReferenceBackend does (FakeBackend::Computing(ReferenceKernel())).
FakeKernel ReferenceKernel();

}  // namespace mm::testing

#endif  // MM_BACKENDS_TESTING_REFERENCE_KERNEL_H_
