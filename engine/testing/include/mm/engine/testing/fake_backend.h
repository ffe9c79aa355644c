// A Backend for tests, configured in one expression instead of written as a class: which dtypes it
// takes, what it computes (the exact product by default), how it goes wrong, the arithmetic it
// declares, and how often it was asked.
//
//   FakeBackend wrong = FakeBackend("off").Supporting({DType::kFloat}).OffByOneAt(-1);
//   registry.Register("off", "planted", wrong.Factory());
#ifndef MM_ENGINE_TESTING_FAKE_BACKEND_H_
#define MM_ENGINE_TESTING_FAKE_BACKEND_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mm/engine/backend.h"
#include "mm/engine/registry.h"

namespace mm::testing {

// What a FakeBackend's primitive writes into `y` for `plan` (the whole, broadcast product).
using FakeKernel =
    std::function<Status(const MatMulPlan& plan, TensorView a, TensorView b, MutableTensorView y)>;

// How often a FakeBackend, its copies and its primitives were asked, shared by all of them (in the
// process they run in: a forked worker's calls stay in the worker).
struct FakeCalls {
  std::atomic<int> supports{0};  // Supports() calls.
  std::atomic<int> prepares{0};  // PrepareProduct() calls: products the engine did not answer.
  std::atomic<int> runs{0};      // Run() calls.
};

// The exact product rounded to Y's dtype (the engine's oracle): what a correct backend writes.
Status ExactKernel(const MatMulPlan& plan, TensorView a, TensorView b, MutableTensorView y);

// A crash the compiler and the sanitizers leave alone: a store through a null pointer (SIGSEGV).
[[gnu::noinline]] void WriteThroughNull();
// Never returns (a hung kernel, blocked without using the CPU); only a signal or a timeout
// ends it.
[[gnu::noinline]] void BlockForever();

// A configurable Backend. Every setter returns *this; copies share their FakeCalls.
class FakeBackend final : public Backend {
 public:
  explicit FakeBackend(std::string name = "fake");

  // Supports these dtypes natively and refuses the others ("float, double only").
  // Default: every dtype.
  FakeBackend& Supporting(std::vector<DType> dtypes);
  // Supports() answers `support` for every dtype it takes (Support::No(...) refuses everything,
  // Support::ByConversion(...) converts).
  FakeBackend& Answering(Support support);
  // Supports() is `supports` itself (after the dtype check), for answers that depend on the shape.
  FakeBackend& SupportsBy(std::function<Support(const MatMulDesc&)> supports);
  // DeclaredArithmetic() answers `arithmetic` for every dtype. Default: Arithmetic::OwnType.
  FakeBackend& Declaring(Arithmetic arithmetic);
  // DeclaredArithmetic() is `arithmetic` itself (another backend's, say).
  FakeBackend& DeclaringBy(std::function<Arithmetic(DType)> arithmetic);
  // What Run writes into Y. Default: ExactKernel.
  FakeBackend& Computing(FakeKernel kernel);
  // After computing, adds one to Y's element `flat_index` (negative: from the end, -1 the last), in
  // Y's own dtype (integers wrap as they do).
  FakeBackend& OffByOneAt(std::int64_t flat_index);
  // PrepareProduct calls `hook` first (to record the state it is prepared in, say).
  FakeBackend& WhenPrepared(std::function<void(const MatMulPlan&)> hook);
  // PrepareProduct fails with `status`.
  FakeBackend& FailingToPrepare(Status status);
  // Run fails with `status` (without writing Y).
  FakeBackend& FailingToRun(Status status);
  // Run crashes the process (WriteThroughNull).
  FakeBackend& Crashing();
  // Run never returns (BlockForever).
  FakeBackend& Hanging();
  // The primitive's implementation() text. Default: empty.
  FakeBackend& Describing(std::string implementation);

  // The calls so far, shared with every copy and primitive of this backend.
  const FakeCalls& calls() const { return *calls_; }
  // A registry factory creating copies of this backend as configured now.
  BackendFactory Factory() const;
  // The primitive PrepareProduct makes for `plan`, without Prepare's checks and answers (Supports,
  // K = 0, empty Y): for tests of what runs a primitive below the engine.
  std::unique_ptr<MatMulPrimitive> PrimitiveFor(const MatMulPlan& plan) const;

  std::string_view name() const override { return name_; }
  Support Supports(const MatMulDesc& desc) const override;
  Arithmetic DeclaredArithmetic(DType dtype) const override;

 protected:
  StatusOr<std::unique_ptr<MatMulPrimitive>> PrepareProduct(const MatMulPlan& plan) override;

 private:
  friend class FakePrimitive;
  Status RunKernel(const MatMulPlan& plan, TensorView a, TensorView b, MutableTensorView y) const;

  std::string name_;
  std::optional<std::vector<DType>> dtypes_;
  Support support_ = Support::Native();
  std::function<Support(const MatMulDesc&)> supports_by_;
  std::function<Arithmetic(DType)> arithmetic_;
  FakeKernel kernel_;
  std::function<void(const MatMulPlan&)> when_prepared_;
  std::optional<std::int64_t> off_by_one_at_;
  Status prepare_status_;
  Status run_status_;
  bool crashes_ = false;
  bool hangs_ = false;
  std::string implementation_;
  std::shared_ptr<FakeCalls> calls_ = std::make_shared<FakeCalls>();
};

}  // namespace mm::testing

#endif  // MM_ENGINE_TESTING_FAKE_BACKEND_H_
