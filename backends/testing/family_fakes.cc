#include "mm/backends/testing/family_fakes.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "mm/backends/reference/reference_backend.h"
#include "mm/family/testing/fake_family_backend.h"

namespace mm::testing {
namespace {

class FakeFamily final : public Backend, private family::FamilyBackend {
 public:
  explicit FakeFamily(FakeFamilySpec spec) : spec_(std::move(spec)) {}

  std::string_view name() const override { return spec_.name; }
  Support Supports(const MatMulDesc& desc) const override {
    if (!Computes(family::Op::kMatMul)) return Support::No(spec_.name + " computes no MatMul");
    return reference_.Supports(desc);
  }
  family::FamilyBackend* family() override { return this; }

 private:
  bool Computes(family::Op op) const {
    return std::find(spec_.ops.begin(), spec_.ops.end(), op) != spec_.ops.end();
  }
  StatusOr<std::unique_ptr<MatMulPrimitive>> PrepareProduct(const MatMulPlan& plan) override {
    return reference_.Prepare(plan);
  }
  Support SupportsOp(const family::OpDesc& desc) const override {
    if (desc.op == family::Op::kMatMul || !Computes(desc.op)) {
      return Support::No(spec_.name + " does not compute " + std::string(family::OpName(desc.op)));
    }
    return spec_.accepts ? spec_.accepts(desc) : Support::Native();
  }
  Arithmetic DeclaredArithmetic(const family::OpDesc& desc) const override {
    return spec_.arithmetic ? spec_.arithmetic(desc) : Arithmetic::OwnType(desc.y_dtype);
  }
  Status Compute(const family::Plan& plan, MutableTensorView y) override {
    return reference_.family()->Compute(plan, y);
  }
  std::string Implementation(const family::OpDesc&) const override {
    return "fake " + spec_.name + ": reference loops";
  }

  FakeFamilySpec spec_;
  ReferenceBackend reference_;
};

}  // namespace

BackendFactory FakeFamilyFactory(FakeFamilySpec spec) {
  return [spec = std::move(spec)]() -> StatusOr<std::unique_ptr<Backend>> {
    return std::unique_ptr<Backend>(std::make_unique<FakeFamily>(spec));
  };
}

std::unique_ptr<Backend> MakeScribblingFamilyBackend(std::string name, family::Op op,
                                                     FamilyScribble scribble) {
  auto reference = std::make_shared<ReferenceBackend>();
  return std::make_unique<family::testing::FakeFamilyBackend>(
      std::move(name), op,
      [reference, scribble = std::move(scribble)](const family::Plan& plan, MutableTensorView y) {
        MM_RETURN_IF_ERROR(reference->family()->Compute(plan, y));
        scribble(plan, y);
        return OkStatus();
      });
}

void FlipByte(const TensorView& input, std::size_t offset) {
  auto* bytes = static_cast<unsigned char*>(const_cast<void*>(input.data));
  bytes[offset] = static_cast<unsigned char>(~bytes[offset]);
}

}  // namespace mm::testing
