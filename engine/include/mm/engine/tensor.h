// Tensors: an owning, 64-byte-aligned, zero-initialised Tensor, and non-owning views over any
// row-major dense buffer. Views never allocate, so binding them costs nothing on a hot path.
#ifndef MM_ENGINE_TENSOR_H_
#define MM_ENGINE_TENSOR_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "mm/engine/dtype.h"
#include "mm/engine/status.h"

namespace mm {

// A shape: one extent per axis, outermost first. Rank 0 (empty) is a scalar.
using Dims = std::vector<std::int64_t>;

// "[2,3,4]"; "[]" for a scalar.
std::string DimsToString(std::span<const std::int64_t> dims);

// Element count of `dims`, checked the way numpy checks array sizes: every dim must be >= 0 and the
// product of the non-zero dims times `element_size` must fit in int64 (so a zero dim does not
// excuse absurd others, and every stride derived from the dims fits too). Errors name the shape.
StatusOr<std::int64_t> CheckedElementCount(std::span<const std::int64_t> dims,
                                           std::size_t element_size = 1);

// Read-only view of a dense row-major tensor owned elsewhere. Valid while the owner lives.
struct TensorView {
  DType dtype = DType::kFloat;
  std::span<const std::int64_t> dims;
  const void* data = nullptr;

  // Number of elements (product of dims; 1 for rank 0). Assumes dims were validated.
  std::int64_t NumElements() const;
  template <class T>
  const T* Data() const {
    return static_cast<const T*>(data);
  }
};

// Writable view of a dense row-major tensor owned elsewhere.
struct MutableTensorView {
  DType dtype = DType::kFloat;
  std::span<const std::int64_t> dims;
  void* data = nullptr;

  std::int64_t NumElements() const;
  template <class T>
  T* Data() const {
    return static_cast<T*>(data);
  }
  operator TensorView() const { return TensorView{dtype, dims, data}; }  // NOLINT
};

// An owning dense row-major tensor. Storage is 64-byte aligned and zero-filled on creation.
class Tensor {
 public:
  // An empty float scalar holder with no storage; use Create for a real tensor.
  Tensor() = default;
  // Allocates a zero-filled tensor; fails (without allocating) on negative dims, overflowing sizes,
  // or when the allocation itself fails.
  static StatusOr<Tensor> Create(DType dtype, Dims dims);
  // Copies `values` (row-major, count must equal the element count) into a new tensor.
  template <class T>
  static StatusOr<Tensor> FromValues(Dims dims, std::span<const T> values);

  DType dtype() const { return dtype_; }
  const Dims& dims() const { return dims_; }
  std::int64_t NumElements() const { return num_elements_; }
  std::size_t NumBytes() const {
    return static_cast<std::size_t>(num_elements_) * DTypeSize(dtype_);
  }

  void* raw_data() { return data_.get(); }
  const void* raw_data() const { return data_.get(); }
  // Typed element access; T must be the CppType of dtype() (checked in debug builds).
  template <class T>
  T* Data() {
    assert(DTypeOf<T>() == dtype_);
    return static_cast<T*>(raw_data());
  }
  template <class T>
  const T* Data() const {
    assert(DTypeOf<T>() == dtype_);
    return static_cast<const T*>(raw_data());
  }
  template <class T>
  std::span<const T> Values() const {
    return {Data<T>(), static_cast<std::size_t>(num_elements_)};
  }

  TensorView view() const { return TensorView{dtype_, dims_, raw_data()}; }
  MutableTensorView mutable_view() { return MutableTensorView{dtype_, dims_, raw_data()}; }

 private:
  struct AlignedFree {
    void operator()(std::byte* p) const;
  };

  DType dtype_ = DType::kFloat;
  Dims dims_;
  std::int64_t num_elements_ = 0;
  std::unique_ptr<std::byte[], AlignedFree> data_;
};

template <class T>
StatusOr<Tensor> Tensor::FromValues(Dims dims, std::span<const T> values) {
  MM_ASSIGN_OR_RETURN(Tensor tensor, Create(DTypeOf<T>(), std::move(dims)));
  if (static_cast<std::int64_t>(values.size()) != tensor.NumElements()) {
    return InvalidArgumentError("shape " + DimsToString(tensor.dims()) + " holds " +
                                std::to_string(tensor.NumElements()) + " elements but " +
                                std::to_string(values.size()) + " values were given");
  }
  std::copy(values.begin(), values.end(), tensor.Data<T>());
  return tensor;
}

}  // namespace mm

#endif  // MM_ENGINE_TENSOR_H_
