#include "mm/conformance/running/write_guard.h"

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "mm/conformance/running/poison.h"

namespace mm::conformance {
namespace {

// The guard's byte at `offset`: varying, so a backend storing a repeated value (a memset, a run of
// equal elements) cannot match it by accident along the whole run, and no common small number or
// float (0, 1, -1, 0.5, ...) has these bytes.
std::byte GuardByte(std::size_t offset) { return static_cast<std::byte>(0xA5 ^ (offset * 0x3B)); }

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};

// An aligned copy of a view's bytes, so the backend reads the same values from memory we own.
struct Copy {
  std::unique_ptr<std::byte[], FreeDeleter> bytes;
  std::size_t size = 0;
};

StatusOr<Copy> CopyOf(TensorView view) {
  Copy copy;
  copy.size = static_cast<std::size_t>(view.NumElements()) * DTypeSize(view.dtype);
  // aligned_alloc needs a size that is a multiple of the alignment; at least one block.
  const std::size_t allocated = (copy.size / 64 + 1) * 64;
  copy.bytes.reset(static_cast<std::byte*>(std::aligned_alloc(64, allocated)));
  if (!copy.bytes) return ResourceExhaustedError("cannot allocate a copy of an input");
  if (copy.size > 0) std::memcpy(copy.bytes.get(), view.data, copy.size);
  return copy;
}

std::string FirstChange(const std::byte* now, const void* before, std::size_t size) {
  const auto* was = static_cast<const std::byte*>(before);
  for (std::size_t i = 0; i < size; ++i) {
    if (now[i] != was[i]) {
      return "first changed byte " + std::to_string(i) + " of " + std::to_string(size);
    }
  }
  return "";
}

// "1 byte", "4 bytes".
std::string Bytes(std::size_t n) { return std::to_string(n) + (n == 1 ? " byte" : " bytes"); }

}  // namespace

StatusOr<Tensor> ExecuteWithWriteGuard(MatMulPrimitive& primitive, TensorView a, TensorView b,
                                       int poison_round) {
  const MatMulPlan& plan = primitive.plan();
  MM_ASSIGN_OR_RETURN(Copy a_copy, CopyOf(a));
  MM_ASSIGN_OR_RETURN(Copy b_copy, CopyOf(b));
  const std::size_t y_bytes =
      static_cast<std::size_t>(plan.y_elements) * DTypeSize(plan.desc.dtype);
  const std::size_t total = kWriteGuardBytes + (y_bytes + 63) / 64 * 64 + kWriteGuardBytes;
  std::unique_ptr<std::byte[], FreeDeleter> buffer(
      static_cast<std::byte*>(std::aligned_alloc(64, total)));
  if (!buffer) return ResourceExhaustedError("cannot allocate Y with its guards");
  for (std::size_t i = 0; i < total; ++i) buffer[i] = GuardByte(i);
  std::byte* y_data = buffer.get() + kWriteGuardBytes;
  std::memset(y_data, kPoisonBytes[poison_round], y_bytes);

  MM_RETURN_IF_ERROR(primitive.Execute(TensorView{a.dtype, a.dims, a_copy.bytes.get()},
                                       TensorView{b.dtype, b.dims, b_copy.bytes.get()},
                                       MutableTensorView{plan.desc.dtype, plan.y_dims, y_data}));

  // Before Y: the reach is from the lowest changed byte up to Y's start.
  for (std::size_t i = 0; i < kWriteGuardBytes; ++i) {
    if (buffer[i] != GuardByte(i)) {
      return DataLossError("wrote " + Bytes(kWriteGuardBytes - i) + " before the start of Y");
    }
  }
  // After Y (its padding to 64 bytes included): the reach is up to the highest changed byte.
  for (std::size_t i = total; i-- > kWriteGuardBytes + y_bytes;) {
    if (buffer[i] != GuardByte(i)) {
      return DataLossError("wrote " + Bytes(i + 1 - kWriteGuardBytes - y_bytes) +
                           " past the end of Y");
    }
  }
  if (std::string where = FirstChange(a_copy.bytes.get(), a.data, a_copy.size); !where.empty()) {
    return DataLossError("modified input A (" + where + ")");
  }
  if (std::string where = FirstChange(b_copy.bytes.get(), b.data, b_copy.size); !where.empty()) {
    return DataLossError("modified input B (" + where + ")");
  }
  MM_ASSIGN_OR_RETURN(Tensor y, Tensor::Create(plan.desc.dtype, plan.y_dims));
  if (y_bytes > 0) std::memcpy(y.raw_data(), y_data, y_bytes);
  return y;
}

}  // namespace mm::conformance
