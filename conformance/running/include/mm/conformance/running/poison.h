// Poisoning Y before a backend writes it, so an element the backend never wrote cannot pass by
// luck (a zero-filled Y would pass wherever the expected value is 0).
#ifndef MM_CONFORMANCE_RUNNING_POISON_H_
#define MM_CONFORMANCE_RUNNING_POISON_H_

#include <functional>

#include "mm/engine/status.h"
#include "mm/engine/tensor.h"

namespace mm::conformance {

// The two poison patterns, as the byte every byte of Y is set to: round 0 0xFF (NaN for the float
// dtypes, -1 or the maximum for integers), round 1 0x5A (finite for every dtype).
inline constexpr unsigned char kPoisonBytes[2] = {0xFF, 0x5A};

// Fills every byte of `y` with kPoisonBytes[round].
void Poison(MutableTensorView y, int round);

// True when some element of `y` still holds kPoisonBytes[round] in every byte. When it does after
// an execute, run again over the other pattern: an element that then holds the other pattern was
// never written.
bool HoldsPoison(TensorView y, int round);

// The Y to judge: `compute(0)`'s (Y poisoned with pattern 0), or `compute(1)`'s when an element of
// that still holds pattern 0 (an element the backend may have left unwritten). The first error.
StatusOr<Tensor> ComputeOverPoison(const std::function<StatusOr<Tensor>(int round)>& compute);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_RUNNING_POISON_H_
