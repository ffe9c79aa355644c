#include "mm/backends/testing/reference_kernel.h"

#include <memory>

#include "mm/backends/reference/reference_backend.h"

namespace mm::testing {

FakeKernel ReferenceKernel() {
  return [](const MatMulPlan& plan, TensorView a, TensorView b, MutableTensorView y) -> Status {
    ReferenceBackend reference;
    MM_ASSIGN_OR_RETURN(std::unique_ptr<MatMulPrimitive> primitive, reference.Prepare(plan));
    return primitive->Execute(a, b, y);
  };
}

}  // namespace mm::testing
