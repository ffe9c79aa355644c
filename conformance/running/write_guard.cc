#include "mm/conformance/running/write_guard.h"

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mm/conformance/running/poison.h"
#include "mm/family/backend.h"
#include "mm/family/problem.h"

namespace mm::conformance {
namespace {

// The guard's byte at `offset`: varying, so a backend storing a repeated value (a memset, a run of
// equal elements) cannot match it by accident along the whole run, and no common small number or
// float (0, 1, -1, 0.5, ...) has these bytes.
std::byte GuardByte(std::size_t offset) { return static_cast<std::byte>(0xA5 ^ (offset * 0x3B)); }

struct FreeDeleter {
  void operator()(std::byte* p) const { std::free(p); }
};
using AlignedBytes = std::unique_ptr<std::byte[], FreeDeleter>;

// `size` bytes aligned to 64 (at least one block: aligned_alloc needs a multiple of the alignment).
StatusOr<AlignedBytes> Allocate(std::size_t size, const char* what) {
  AlignedBytes bytes(static_cast<std::byte*>(std::aligned_alloc(64, (size / 64 + 1) * 64)));
  if (!bytes) return ResourceExhaustedError(std::string("cannot allocate ") + what);
  return bytes;
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

// A computation's inputs, each copied into memory the guard owns: the backend reads the copies (the
// same values), and a change it makes to one is seen against the caller's original afterwards.
class GuardedInputs {
 public:
  // Input `name` copied; the view of the copy, which is what the backend gets.
  StatusOr<TensorView> Add(std::string name, TensorView original) {
    const std::size_t size =
        static_cast<std::size_t>(original.NumElements()) * DTypeSize(original.dtype);
    MM_ASSIGN_OR_RETURN(AlignedBytes bytes, Allocate(size, "a copy of an input"));
    if (size > 0) std::memcpy(bytes.get(), original.data, size);
    const TensorView copy{original.dtype, original.dims, bytes.get()};
    inputs_.push_back({std::move(name), original.data, size, std::move(bytes)});
    return copy;
  }

  // OK when every copy still holds its original's bytes; else DATA_LOSS naming the first input,
  // in the order added, that changed.
  Status CheckUnchanged() const {
    for (const Input& input : inputs_) {
      const std::string where = FirstChange(input.copy.get(), input.original, input.size);
      if (!where.empty()) return DataLossError("modified input " + input.name + " (" + where + ")");
    }
    return OkStatus();
  }

 private:
  struct Input {
    std::string name;
    const void* original;
    std::size_t size;
    AlignedBytes copy;
  };
  std::vector<Input> inputs_;
};

// Y of `dtype` and `dims` between two guards of kWriteGuardBytes known bytes, Y's own bytes poison
// pattern `poison_round`.
class GuardedY {
 public:
  static StatusOr<GuardedY> Create(DType dtype, const Dims& dims, int poison_round) {
    GuardedY y(dtype, dims);
    MM_ASSIGN_OR_RETURN(y.buffer_, Allocate(y.total_, "Y with its guards"));
    for (std::size_t i = 0; i < y.total_; ++i) y.buffer_[i] = GuardByte(i);
    std::memset(y.data(), kPoisonBytes[poison_round], y.y_bytes_);
    return y;
  }

  MutableTensorView view() { return {dtype_, dims_, data()}; }

  // OK when both guards hold their bytes; else DATA_LOSS saying how far out the backend wrote.
  Status CheckGuards() const {
    // Before Y: the reach is from the lowest changed byte up to Y's start.
    for (std::size_t i = 0; i < kWriteGuardBytes; ++i) {
      if (buffer_[i] != GuardByte(i)) {
        return DataLossError("wrote " + Bytes(kWriteGuardBytes - i) + " before the start of Y");
      }
    }
    // After Y (its padding to 64 bytes included): the reach is up to the highest changed byte.
    for (std::size_t i = total_; i-- > kWriteGuardBytes + y_bytes_;) {
      if (buffer_[i] != GuardByte(i)) {
        return DataLossError("wrote " + Bytes(i + 1 - kWriteGuardBytes - y_bytes_) +
                             " past the end of Y");
      }
    }
    return OkStatus();
  }

  // Y's bytes as a tensor of its own.
  StatusOr<Tensor> ToTensor() const {
    MM_ASSIGN_OR_RETURN(Tensor y, Tensor::Create(dtype_, dims_));
    if (y_bytes_ > 0) std::memcpy(y.raw_data(), buffer_.get() + kWriteGuardBytes, y_bytes_);
    return y;
  }

 private:
  GuardedY(DType dtype, const Dims& dims) : dtype_(dtype), dims_(dims) {
    std::int64_t elements = 1;
    for (std::int64_t d : dims) elements *= d;
    y_bytes_ = static_cast<std::size_t>(elements) * DTypeSize(dtype);
    total_ = kWriteGuardBytes + (y_bytes_ + 63) / 64 * 64 + kWriteGuardBytes;
  }
  std::byte* data() { return buffer_.get() + kWriteGuardBytes; }

  DType dtype_;
  Dims dims_;
  std::size_t y_bytes_ = 0;
  std::size_t total_ = 0;
  AlignedBytes buffer_;
};

// What the backend did outside Y, first its writes around Y, then its inputs; OK when nothing.
Status CheckWrites(const GuardedY& y, const GuardedInputs& inputs) {
  MM_RETURN_IF_ERROR(y.CheckGuards());
  return inputs.CheckUnchanged();
}

// The view of `plan` that holds input `name` (ONNX's name, family::InputNames).
TensorView* PlanInput(family::Plan& plan, std::string_view name) {
  if (name == "A" || name == "a") return &plan.a;
  if (name == "B" || name == "b") return &plan.b;
  if (name == "C") return &plan.gemm.c;
  const std::pair<std::string_view, family::QuantParam*> quant[] = {
      {"a_zero_point", &plan.a_zero_point}, {"b_zero_point", &plan.b_zero_point},
      {"a_scale", &plan.a_scale},           {"b_scale", &plan.b_scale},
      {"y_scale", &plan.y_scale},           {"y_zero_point", &plan.y_zero_point}};
  for (const auto& [quant_name, param] : quant) {
    if (quant_name == name) return &param->tensor;
  }
  return nullptr;
}

}  // namespace

StatusOr<Tensor> ExecuteWithWriteGuard(MatMulPrimitive& primitive, TensorView a, TensorView b,
                                       int poison_round) {
  const MatMulPlan& plan = primitive.plan();
  GuardedInputs inputs;
  MM_ASSIGN_OR_RETURN(const TensorView a_copy, inputs.Add("A", a));
  MM_ASSIGN_OR_RETURN(const TensorView b_copy, inputs.Add("B", b));
  MM_ASSIGN_OR_RETURN(GuardedY y, GuardedY::Create(plan.desc.dtype, plan.y_dims, poison_round));
  MM_RETURN_IF_ERROR(primitive.Execute(a_copy, b_copy, y.view()));
  MM_RETURN_IF_ERROR(CheckWrites(y, inputs));
  return y.ToTensor();
}

StatusOr<Tensor> ComputeWithWriteGuard(Backend& backend, const family::Plan& plan,
                                       int poison_round) {
  family::Plan guarded = plan;
  GuardedInputs inputs;
  for (const std::string_view name : family::InputNames(plan.op)) {
    TensorView* view = PlanInput(guarded, name);
    // An input the problem does not give (C, MatMulInteger's zero points) has no data to copy.
    if (view == nullptr || view->data == nullptr) continue;
    MM_ASSIGN_OR_RETURN(*view, inputs.Add(std::string(name), *view));
  }
  MM_ASSIGN_OR_RETURN(GuardedY y, GuardedY::Create(plan.y_dtype, plan.y_dims(), poison_round));
  MM_RETURN_IF_ERROR(family::ComputeOpInto(backend, guarded, y.view()));
  MM_RETURN_IF_ERROR(CheckWrites(y, inputs));
  return y.ToTensor();
}

}  // namespace mm::conformance
