// A backend for tests whose family interface (mm/family/backend.h) computes one operator with a
// kernel the test supplies, so that a fault can be planted where a test needs it (a kernel that
// saturates pair sums, one that ignores beta). It computes no MatMul: Supports refuses every
// MatMul with a reason.
#ifndef MM_FAMILY_TESTING_FAKE_FAMILY_BACKEND_H_
#define MM_FAMILY_TESTING_FAKE_FAMILY_BACKEND_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "mm/engine/backend.h"
#include "mm/family/backend.h"

namespace mm::family::testing {

class FakeFamilyBackend final : public Backend, private FamilyBackend {
 public:
  // Computes Y of a plan the backend accepted into `y` (poisoned, Y's type and shape).
  using Kernel = std::function<Status(const Plan& plan, MutableTensorView y)>;
  // Whether the kernel takes `desc` (its operator is `op` already); the reason when not.
  using Accepts = std::function<Support(const OpDesc& desc)>;

  // Backend `name` computing operator `op` with `kernel`, for every description `accepts` takes
  // (default: every version and type of `op`), declaring `arithmetic` for each (default: Y's own
  // type).
  FakeFamilyBackend(std::string name, Op op, Kernel kernel, Accepts accepts = nullptr,
                    std::function<Arithmetic(const OpDesc&)> arithmetic = nullptr)
      : name_(std::move(name)),
        op_(op),
        kernel_(std::move(kernel)),
        accepts_(std::move(accepts)),
        arithmetic_(std::move(arithmetic)) {}

  std::string_view name() const override { return name_; }
  Support Supports(const MatMulDesc&) const override {
    return Support::No(name_ + " is a fake computing " + std::string(OpName(op_)) + " only");
  }
  FamilyBackend* family() override { return this; }

  // The number of Compute calls so far.
  int computes() const { return computes_; }

 private:
  StatusOr<std::unique_ptr<MatMulPrimitive>> PrepareProduct(const MatMulPlan&) override {
    return UnimplementedError(name_ + " computes no MatMul");
  }

  Support SupportsOp(const OpDesc& desc) const override {
    if (desc.op != op_) {
      return Support::No(name_ + " computes " + std::string(OpName(op_)) + " only");
    }
    return accepts_ ? accepts_(desc) : Support::Native();
  }
  Arithmetic DeclaredArithmetic(const OpDesc& desc) const override {
    return arithmetic_ ? arithmetic_(desc) : Arithmetic::OwnType(desc.y_dtype);
  }
  Status Compute(const Plan& plan, MutableTensorView y) override {
    ++computes_;
    return kernel_(plan, y);
  }

  std::string name_;
  Op op_;
  Kernel kernel_;
  Accepts accepts_;
  std::function<Arithmetic(const OpDesc&)> arithmetic_;
  int computes_ = 0;
};

}  // namespace mm::family::testing

#endif  // MM_FAMILY_TESTING_FAKE_FAMILY_BACKEND_H_
