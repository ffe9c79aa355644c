#include "mm/conformance/running/poison.h"

#include <cstring>

namespace mm::conformance {

void Poison(MutableTensorView y, int round) {
  std::memset(y.data, kPoisonBytes[round],
              static_cast<std::size_t>(y.NumElements()) * DTypeSize(y.dtype));
}

bool HoldsPoison(TensorView y, int round) {
  const std::size_t size = DTypeSize(y.dtype);
  const auto* bytes = static_cast<const unsigned char*>(y.data);
  for (std::int64_t i = 0; i < y.NumElements(); ++i) {
    bool all = true;
    for (std::size_t j = 0; j < size && all; ++j) all = bytes[i * size + j] == kPoisonBytes[round];
    if (all) return true;
  }
  return false;
}

StatusOr<Tensor> ComputeOverPoison(const std::function<StatusOr<Tensor>(int round)>& compute) {
  MM_ASSIGN_OR_RETURN(Tensor y, compute(0));
  if (HoldsPoison(y.view(), 0)) return compute(1);
  return y;
}

}  // namespace mm::conformance
