// The family's backend interface: a backend without one is refused with a reason and never asked
// to compute; one with it is asked only what it supports, and its errors carry its name.
#include "mm/family/backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "mm/engine/testing/fake_backend.h"
#include "mm/family/testing/problem_builder.h"

namespace mm::family {
namespace {

using ::testing::HasSubstr;
using testing::ProblemBuilder;

// A FamilyBackend that supports only Gemm and answers with a fixed status, counting its calls.
class GemmOnly final : public FamilyBackend {
 public:
  explicit GemmOnly(Status answer) : answer_(std::move(answer)) {}
  Support SupportsOp(const OpDesc& desc) const override {
    return desc.op == Op::kGemm ? Support::Native() : Support::No("no integer kernels here");
  }
  Status Compute(const Plan&, MutableTensorView y) override {
    ++computes;
    if (y.NumElements() > 0) y.Data<float>()[0] = 42;
    return answer_;
  }
  int computes = 0;

 private:
  Status answer_;
};

// A MatMul backend (the engine's fake) that offers `family` as its family interface.
class WithFamily final : public Backend {
 public:
  explicit WithFamily(FamilyBackend* family) : family_(family) {}
  std::string_view name() const override { return "with-family"; }
  Support Supports(const MatMulDesc&) const override { return Support::Native(); }
  FamilyBackend* family() override { return family_; }

 protected:
  StatusOr<std::unique_ptr<MatMulPrimitive>> PrepareProduct(const MatMulPlan&) override {
    return UnimplementedError("not used");
  }

 private:
  FamilyBackend* family_;
};

ProblemBuilder SmallGemm() {
  ProblemBuilder p(Op::kGemm, 13);
  p.Input("A", DType::kFloat, {2, 3}, {1, 2, 3, 4, 5, 6});
  p.Input("B", DType::kFloat, {3, 1}, {1, 1, 1});
  return p;
}

ProblemBuilder SmallMatMulInteger() {
  ProblemBuilder p(Op::kMatMulInteger, 10);
  p.Input("A", DType::kUInt8, {1, 2}, {255, 255});
  p.Input("B", DType::kInt8, {2, 1}, {127, 127});
  return p;
}

TEST(FamilyBackendTest, ABackendThatKnowsOnlyMatMulIsRefusedWithItsNameAndTheOperator) {
  mm::testing::FakeBackend matmul_only("matmul-only");
  const ProblemBuilder p = SmallMatMulInteger();
  const Plan plan = PlanProblem(p.problem()).value();
  const Support support = SupportOf(matmul_only, DescOf(plan));
  EXPECT_FALSE(support.supported());
  EXPECT_EQ(support.note, "matmul-only computes MatMul only, not MatMulInteger");
  const StatusOr<Tensor> y = ComputeOp(matmul_only, plan);
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), StatusCode::kUnimplemented);
  EXPECT_THAT(y.status().message(), HasSubstr("matmul-only does not compute MatMulInteger-10 "
                                              "uint8 x int8 -> int32"));
}

TEST(FamilyBackendTest, WhatTheFamilyInterfaceRefusesIsNeverComputed) {
  GemmOnly gemm_only(OkStatus());
  WithFamily backend(&gemm_only);
  const ProblemBuilder p = SmallMatMulInteger();
  const StatusOr<Tensor> y = ComputeOp(backend, PlanProblem(p.problem()).value());
  ASSERT_FALSE(y.ok());
  EXPECT_THAT(y.status().message(), HasSubstr("no integer kernels here"));
  EXPECT_EQ(gemm_only.computes, 0);
}

TEST(FamilyBackendTest, ASupportedProblemIsComputedIntoAFreshYOfItsTypeAndShape) {
  GemmOnly gemm_only(OkStatus());
  WithFamily backend(&gemm_only);
  const ProblemBuilder p = SmallGemm();
  const StatusOr<Tensor> y = ComputeOp(backend, PlanProblem(p.problem()).value());
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(gemm_only.computes, 1);
  EXPECT_EQ(y->dtype(), DType::kFloat);
  EXPECT_EQ(DimsToString(y->dims()), "[2,1]");
  EXPECT_EQ(y->Values<float>()[0], 42);
}

TEST(FamilyBackendTest, AComputationsErrorCarriesTheBackendsName) {
  GemmOnly gemm_only(InternalError("kernel lost its way"));
  WithFamily backend(&gemm_only);
  const ProblemBuilder p = SmallGemm();
  const StatusOr<Tensor> y = ComputeOp(backend, PlanProblem(p.problem()).value());
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), StatusCode::kInternal);
  EXPECT_EQ(y.status().message(), "with-family: kernel lost its way");
}

// ComputeOpInto computes into the caller's Y (the harness's, between guards) only when it is of
// Y's type and shape; any other is refused, naming both, and never handed to the backend.
TEST(FamilyBackendTest, AYOfAnotherTypeOrShapeIsRefusedNamingBoth) {
  GemmOnly gemm_only(OkStatus());
  WithFamily backend(&gemm_only);
  const ProblemBuilder p = SmallGemm();
  const Plan plan = PlanProblem(p.problem()).value();
  Tensor right = Tensor::Create(DType::kFloat, {2, 1}).value();
  EXPECT_TRUE(ComputeOpInto(backend, plan, right.mutable_view()).ok());
  EXPECT_EQ(right.Values<float>()[0], 42);
  Tensor wrong_shape = Tensor::Create(DType::kFloat, {1, 2}).value();
  const Status shape = ComputeOpInto(backend, plan, wrong_shape.mutable_view());
  EXPECT_EQ(shape.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(shape.message(), "Y of Gemm-13 float must be float [2,1], not float [1,2]");
  Tensor wrong_type = Tensor::Create(DType::kDouble, {2, 1}).value();
  const Status type = ComputeOpInto(backend, plan, wrong_type.mutable_view());
  EXPECT_EQ(type.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(type.message(), HasSubstr("not double [2,1]"));
  EXPECT_EQ(gemm_only.computes, 1);
}

TEST(FamilyBackendTest, MatMulIsNeverAskedThroughTheFamilyInterface) {
  GemmOnly gemm_only(OkStatus());
  WithFamily backend(&gemm_only);
  EXPECT_FALSE(SupportOf(backend, {Op::kMatMul, 13}).supported());
}

TEST(FamilyBackendTest, IntegerAccumulationIsExactUnlessDeclaredAndHasANameForResults) {
  const GemmOnly gemm_only(OkStatus());
  EXPECT_EQ(gemm_only.DeclaredIntegerAccumulation(
                {Op::kMatMulInteger, 10, DType::kUInt8, DType::kInt8, DType::kInt32}),
            IntegerAccumulation::kExact);
  EXPECT_EQ(IntegerAccumulationName(IntegerAccumulation::kExact), "exact int32 accumulation");
  EXPECT_EQ(IntegerAccumulationName(IntegerAccumulation::kPairSums16),
            "16-bit pair sums (saturating)");
}

TEST(FamilyBackendTest, DescriptionsNameOperatorVersionAndTypes) {
  EXPECT_EQ((OpDesc{Op::kGemm, 11, DType::kDouble, DType::kDouble, DType::kDouble}).ToString(),
            "Gemm-11 double");
  EXPECT_EQ(
      (OpDesc{Op::kQLinearMatMul, 21, DType::kUInt8, DType::kInt8, DType::kUInt8, DType::kFloat16})
          .ToString(),
      "QLinearMatMul-21 uint8 x int8 -> uint8, float16 scales");
}

}  // namespace
}  // namespace mm::family
