// The reference backend: plain loops, the oracle every other backend is compared with.
#ifndef MM_BACKENDS_REFERENCE_REFERENCE_BACKEND_H_
#define MM_BACKENDS_REFERENCE_REFERENCE_BACKEND_H_

#include <memory>

#include "mm/engine/backend.h"
#include "mm/family/backend.h"

namespace mm {

// Computes every MatMul-13 dtype with i-k-j loops over the engine's plan.
//  - float types (float, double, float16, bfloat16) accumulate every dot product in double and
//  round
//    once to the output type, to nearest even (float16/bfloat16 through RoundFromDouble, which
//    avoids double rounding). For float and double this is at least as accurate as any
//    float32-accumulating implementation, which is what makes it an oracle rather than one more
//    implementation.
//  - integer types wrap around modulo 2^bits, as numpy's integer matmul does: products and sums are
//    formed in the unsigned type of the same width, where C++ defines wraparound, and the bits are
//    reinterpreted as the signed type (two's complement, defined since C++20).
// Supports() is kNative for every dtype. MatMul's family (Gemm, MatMulInteger, QLinearMatMul)
// in every version and type, through its own loops (family(): family_kernels.h).
class ReferenceBackend final : public Backend {
 public:
  ReferenceBackend();
  ~ReferenceBackend() override;
  std::string_view name() const override { return "reference"; }
  Support Supports(const MatMulDesc& desc) const override;
  // "mm reference: i-k-j loops, ..." (no library, no SIMD choice: the same on every CPU).
  std::string RunsOn() const override;
  // Float dtypes accumulate in double and round once; integers are exact modulo 2^bits.
  Arithmetic DeclaredArithmetic(DType dtype) const override;
  family::FamilyBackend* family() override { return family_.get(); }

 protected:
  StatusOr<std::unique_ptr<MatMulPrimitive>> PrepareProduct(const MatMulPlan& plan) override;

 private:
  std::unique_ptr<family::FamilyBackend> family_;
};

}  // namespace mm

#endif  // MM_BACKENDS_REFERENCE_REFERENCE_BACKEND_H_
