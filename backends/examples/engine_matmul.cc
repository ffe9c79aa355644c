// The README's example of calling the engine from C++ (README.md quotes the lines between the
// markers; the test readme_example.quoted checks that it does, readme_example.runs that they work):
// Y = A x B for float A [2,3] and B [3,2] on a built-in backend, with every error a Status.
#include <cstdio>
#include <iostream>
#include <memory>

#include "mm/backends/backend_list.h"

int main() {
  const float a[] = {1, 2, 3, 4, 5, 6}, b[] = {1, 0, 0, 1, 1, 1};
  // [readme]
  mm::BackendRegistry registry = mm::BuiltinBackends();  // reference, onednn, eigen, BLAS, auto
  std::unique_ptr<mm::Backend> backend = registry.Create("eigen").value();
  mm::Tensor A = mm::Tensor::FromValues<float>({2, 3}, a).value();  // row-major [2,3]
  mm::Tensor B = mm::Tensor::FromValues<float>({3, 2}, b).value();
  mm::StatusOr<mm::Tensor> Y = mm::MatMul(*backend, A.view(), B.view());  // numpy.matmul rules
  if (!Y.ok()) std::cerr << Y.status() << "\n";  // e.g. "INVALID_ARGUMENT: K mismatch: ..."
  // [/readme]
  if (!Y.ok()) return 1;
  const float* y = Y->Data<float>();
  std::printf("Y [2,2] = %g %g %g %g\n", y[0], y[1], y[2], y[3]);
  return 0;
}
