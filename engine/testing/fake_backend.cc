#include "mm/engine/testing/fake_backend.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>

#include "mm/oracle/error_bound.h"

namespace mm::testing {

Status ExactKernel(const MatMulPlan& plan, TensorView a, TensorView b, MutableTensorView y) {
  MM_ASSIGN_OR_RETURN(OracleResult exact, ExactMatMul(plan, a, b));
  std::memcpy(y.data, exact.y.raw_data(), exact.y.NumBytes());
  return OkStatus();
}

void WriteThroughNull() {
  volatile int* volatile pointer = nullptr;
  *pointer = 42;
}

void BlockForever() {
  // Asleep rather than spinning: the timeout that ends a hang would otherwise burn a core the
  // tests running beside it need.
  for (;;) pause();
}

namespace {

// Adds one to y[index] in y's own dtype.
void AddOne(MutableTensorView y, std::int64_t index) {
  VisitDType(y.dtype, [&](auto tag) {
    using T = CppType<decltype(tag)::value>;
    T& element = y.Data<T>()[index];
    if constexpr (std::is_integral_v<T>) {
      element = static_cast<T>(element + 1);
    } else {
      element = RoundFromDouble<T>(ToDouble(element) + 1);
    }
  });
}

std::string DTypeList(const std::vector<DType>& dtypes) {
  std::string list;
  for (DType dtype : dtypes) list += (list.empty() ? "" : ", ") + std::string(DTypeName(dtype));
  return list;
}

}  // namespace

// Runs its backend's configuration, which it keeps a copy of (the backend may go first).
class FakePrimitive final : public MatMulPrimitive {
 public:
  FakePrimitive(MatMulPlan plan, FakeBackend backend)
      : MatMulPrimitive(std::move(plan)), backend_(std::move(backend)) {}
  std::string implementation() const override { return backend_.implementation_; }

 protected:
  Status Run(TensorView a, TensorView b, MutableTensorView y) override {
    return backend_.RunKernel(plan(), a, b, y);
  }

 private:
  FakeBackend backend_;
};

FakeBackend::FakeBackend(std::string name) : name_(std::move(name)) {}

FakeBackend& FakeBackend::Supporting(std::vector<DType> dtypes) {
  dtypes_ = std::move(dtypes);
  return *this;
}
FakeBackend& FakeBackend::Answering(Support support) {
  support_ = std::move(support);
  return *this;
}
FakeBackend& FakeBackend::SupportsBy(std::function<Support(const MatMulDesc&)> supports) {
  supports_by_ = std::move(supports);
  return *this;
}
FakeBackend& FakeBackend::Declaring(Arithmetic arithmetic) {
  arithmetic_ = [arithmetic](DType) { return arithmetic; };
  return *this;
}
FakeBackend& FakeBackend::DeclaringBy(std::function<Arithmetic(DType)> arithmetic) {
  arithmetic_ = std::move(arithmetic);
  return *this;
}
FakeBackend& FakeBackend::Computing(FakeKernel kernel) {
  kernel_ = std::move(kernel);
  return *this;
}
FakeBackend& FakeBackend::OffByOneAt(std::int64_t flat_index) {
  off_by_one_at_ = flat_index;
  return *this;
}
FakeBackend& FakeBackend::WhenPrepared(std::function<void(const MatMulPlan&)> hook) {
  when_prepared_ = std::move(hook);
  return *this;
}
FakeBackend& FakeBackend::FailingToPrepare(Status status) {
  prepare_status_ = std::move(status);
  return *this;
}
FakeBackend& FakeBackend::FailingToRun(Status status) {
  run_status_ = std::move(status);
  return *this;
}
FakeBackend& FakeBackend::Crashing() {
  crashes_ = true;
  return *this;
}
FakeBackend& FakeBackend::Hanging() {
  hangs_ = true;
  return *this;
}
FakeBackend& FakeBackend::Describing(std::string implementation) {
  implementation_ = std::move(implementation);
  return *this;
}

BackendFactory FakeBackend::Factory() const {
  return [copy = *this]() -> StatusOr<std::unique_ptr<Backend>> {
    return std::unique_ptr<Backend>(std::make_unique<FakeBackend>(copy));
  };
}

Support FakeBackend::Supports(const MatMulDesc& desc) const {
  ++calls_->supports;
  if (dtypes_ && std::find(dtypes_->begin(), dtypes_->end(), desc.dtype) == dtypes_->end()) {
    return Support::No(DTypeList(*dtypes_) + " only");
  }
  return supports_by_ ? supports_by_(desc) : support_;
}

Arithmetic FakeBackend::DeclaredArithmetic(DType dtype) const {
  return arithmetic_ ? arithmetic_(dtype) : Arithmetic::OwnType(dtype);
}

StatusOr<std::unique_ptr<MatMulPrimitive>> FakeBackend::PrepareProduct(const MatMulPlan& plan) {
  ++calls_->prepares;
  if (when_prepared_) when_prepared_(plan);
  if (!prepare_status_.ok()) return prepare_status_;
  return PrimitiveFor(plan);
}

std::unique_ptr<MatMulPrimitive> FakeBackend::PrimitiveFor(const MatMulPlan& plan) const {
  return std::make_unique<FakePrimitive>(plan, *this);
}

Status FakeBackend::RunKernel(const MatMulPlan& plan, TensorView a, TensorView b,
                              MutableTensorView y) const {
  ++calls_->runs;
  if (crashes_) WriteThroughNull();
  if (hangs_) BlockForever();
  if (!run_status_.ok()) return run_status_;
  MM_RETURN_IF_ERROR(kernel_ ? kernel_(plan, a, b, y) : ExactKernel(plan, a, b, y));
  if (off_by_one_at_ && y.NumElements() > 0) {
    const std::int64_t at = *off_by_one_at_;
    AddOne(y, at < 0 ? y.NumElements() + at : at);
  }
  return OkStatus();
}

}  // namespace mm::testing
