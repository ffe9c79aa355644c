// The arithmetic a backend declares for a dtype: what its products and sums are formed in. The
// harness and the fuzzer judge a result against the error bound of this declaration
// (mm/oracle/error_bound.h), so it is a promise a backend makes about itself, not a CPU fact.
#ifndef MM_ENGINE_ARITHMETIC_H_
#define MM_ENGINE_ARITHMETIC_H_

#include <string>

#include "mm/engine/dtype.h"

namespace mm {

// The arithmetic of one dtype's kernel.
struct Arithmetic {
  DType accumulation = DType::kDouble;  // Products and sums are formed in this type.
  // Subnormal inputs may be read as zero and subnormal partial sums flushed to zero (what x86's
  // AVX512-BF16 dot-product instruction does). The bound then also allows, per element, the sum of
  // |a_k||b_k| over the terms with a subnormal input, and K times the smallest normal of the
  // accumulation type.
  bool flushes_subnormals = false;

  // The arithmetic of a backend that declares nothing: the dtype itself (integers exact modulo
  // 2^bits; floats held to their own type's accumulation, the loosest bound a correct
  // implementation still meets).
  static Arithmetic OwnType(DType dtype) { return {dtype, false}; }

  // "accumulates in float32", "accumulates in float32, flushes subnormals", "exact modulo 2^32".
  std::string ToString() const;

  friend bool operator==(const Arithmetic&, const Arithmetic&) = default;
};

}  // namespace mm

#endif  // MM_ENGINE_ARITHMETIC_H_
