#include "mm/engine/tensor.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

namespace mm {

std::string DimsToString(std::span<const std::int64_t> dims) {
  std::string out = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += ",";
    out += std::to_string(dims[i]);
  }
  out += "]";
  return out;
}

StatusOr<std::int64_t> CheckedElementCount(std::span<const std::int64_t> dims,
                                           std::size_t element_size) {
  std::int64_t count = 1;
  std::int64_t nonzero_bytes = static_cast<std::int64_t>(element_size == 0 ? 1 : element_size);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    const std::int64_t d = dims[i];
    if (d < 0) {
      return InvalidArgumentError("negative dimension " + std::to_string(d) + " at axis " +
                                  std::to_string(i) + " of shape " + DimsToString(dims));
    }
    if (d == 0) {
      count = 0;
      continue;
    }
    if (__builtin_mul_overflow(nonzero_bytes, d, &nonzero_bytes)) {
      return OutOfRangeError("shape " + DimsToString(dims) + " is too large: its size in bytes (" +
                             std::to_string(element_size) + " per element) overflows int64");
    }
    if (count != 0) count *= d;  // Cannot overflow: bounded by nonzero_bytes.
  }
  return count;
}

std::int64_t TensorView::NumElements() const {
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= d;
  return n;
}

std::int64_t MutableTensorView::NumElements() const {
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= d;
  return n;
}

void Tensor::AlignedFree::operator()(std::byte* p) const {
  ::operator delete[](p, std::align_val_t{64});
}

StatusOr<Tensor> Tensor::Create(DType dtype, Dims dims) {
  MM_ASSIGN_OR_RETURN(std::int64_t count, CheckedElementCount(dims, DTypeSize(dtype)));
  Tensor tensor;
  tensor.dtype_ = dtype;
  tensor.dims_ = std::move(dims);
  tensor.num_elements_ = count;
  const std::size_t bytes = static_cast<std::size_t>(count) * DTypeSize(dtype);
  // Always allocate at least one cache line so data pointers of empty tensors are valid and
  // aligned.
  const std::size_t alloc = bytes == 0 ? 64 : bytes;
  std::byte* p =
      static_cast<std::byte*>(::operator new[](alloc, std::align_val_t{64}, std::nothrow));
  if (p == nullptr) {
    return ResourceExhaustedError("cannot allocate " + std::to_string(bytes) + " bytes for a " +
                                  std::string(DTypeName(dtype)) + " tensor of shape " +
                                  DimsToString(tensor.dims_));
  }
  std::memset(p, 0, alloc);
  tensor.data_.reset(p);
  return tensor;
}

}  // namespace mm
