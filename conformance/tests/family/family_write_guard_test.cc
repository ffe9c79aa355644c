// A family backend (Gemm, MatMulInteger, QLinearMatMul) must write only Y, as a MatMul backend
// must: every input of the operator unchanged after the computation, the bytes right before and
// after Y intact. A backend that breaks that is an ERROR naming what it did, never a PASS, even
// when its Y is right.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "mm/backends/reference/reference_backend.h"
#include "mm/backends/testing/family_fakes.h"
#include "mm/conformance/running/runner.h"
#include "mm/conformance/running/write_guard.h"
#include "mm/family/backend.h"
#include "mm/family/plan.h"
#include "mm/family/testing/problem_builder.h"

namespace mm::conformance {
namespace {

using family::Op;
using family::Plan;
using family::testing::ProblemBuilder;
using mm::testing::FamilyScribble;
using mm::testing::FlipByte;
using mm::testing::MakeScribblingFamilyBackend;
using ::testing::HasSubstr;

// Gemm-13 float: A [2,3] x B [3,4] + C [4]. Y is 8 floats, 32 bytes (so the guard after Y starts
// in Y's padding to 64 bytes).
ProblemBuilder GemmWithC() {
  ProblemBuilder p(Op::kGemm, 13);
  p.Input("A", DType::kFloat, {2, 3}, {1, 2, 3, 4, 5, 6})
      .Filled("B", DType::kFloat, {3, 4}, 0.5)
      .Input("C", DType::kFloat, {4}, {1, 2, 3, 4});
  return p;
}

// MatMulInteger-10 uint8: A [2,2] x B [2,3] with both zero points per tensor. Y is 6 int32.
ProblemBuilder MatMulIntegerWithZeroPoints() {
  ProblemBuilder p(Op::kMatMulInteger, 10);
  p.Input("A", DType::kUInt8, {2, 2}, {1, 2, 3, 4})
      .Input("B", DType::kUInt8, {2, 3}, {5, 6, 7, 8, 9, 10})
      .Filled("a_zero_point", DType::kUInt8, {}, 1)
      .Filled("b_zero_point", DType::kUInt8, {}, 2);
  return p;
}

// QLinearMatMul-10 uint8: a [2,2] x b [2,2], every scale and zero point per tensor.
ProblemBuilder QLinearMatMulProblem() {
  ProblemBuilder p(Op::kQLinearMatMul, 10);
  p.Input("a", DType::kUInt8, {2, 2}, {10, 20, 30, 40})
      .Filled("a_scale", DType::kFloat, {}, 0.5)
      .Filled("a_zero_point", DType::kUInt8, {}, 3)
      .Input("b", DType::kUInt8, {2, 2}, {4, 5, 6, 7})
      .Filled("b_scale", DType::kFloat, {}, 0.25)
      .Filled("b_zero_point", DType::kUInt8, {}, 1)
      .Filled("y_scale", DType::kFloat, {}, 2)
      .Filled("y_zero_point", DType::kUInt8, {}, 7);
  return p;
}

// Y of `builder`'s problem on a backend computing `op` as the reference does, then `scribble`.
StatusOr<Tensor> Guarded(const ProblemBuilder& builder, FamilyScribble scribble) {
  const Plan plan = family::PlanProblem(builder.problem()).value();
  const std::unique_ptr<Backend> backend =
      MakeScribblingFamilyBackend("scribbling", plan.op, std::move(scribble));
  return ComputeWithWriteGuard(*backend, plan);
}

// The view `plan` holds for input `name` (ONNX's name).
TensorView InputOf(const Plan& plan, const std::string& name) {
  if (name == "A" || name == "a") return plan.a;
  if (name == "B" || name == "b") return plan.b;
  if (name == "C") return plan.gemm.c;
  if (name == "a_zero_point") return plan.a_zero_point.tensor;
  if (name == "b_zero_point") return plan.b_zero_point.tensor;
  if (name == "a_scale") return plan.a_scale.tensor;
  if (name == "b_scale") return plan.b_scale.tensor;
  if (name == "y_scale") return plan.y_scale.tensor;
  if (name == "y_zero_point") return plan.y_zero_point.tensor;
  ADD_FAILURE() << "no input " << name;
  return {};
}

std::size_t NumBytes(const TensorView& t) {
  return static_cast<std::size_t>(t.NumElements()) * DTypeSize(t.dtype);
}

TEST(FamilyWriteGuardTest, ABackendWritingOnlyYGivesTheReferencesY) {
  for (const ProblemBuilder& builder :
       {GemmWithC(), MatMulIntegerWithZeroPoints(), QLinearMatMulProblem()}) {
    const StatusOr<Tensor> y = Guarded(builder, [](const Plan&, MutableTensorView) {});
    ASSERT_TRUE(y.ok()) << y.status();
    ReferenceBackend reference;
    const Tensor expected =
        family::ComputeOp(reference, family::PlanProblem(builder.problem()).value()).value();
    ASSERT_EQ(y->dims(), expected.dims());
    ASSERT_EQ(y->dtype(), expected.dtype());
    EXPECT_EQ(std::memcmp(y->raw_data(), expected.raw_data(), expected.NumBytes()), 0);
  }
}

TEST(FamilyWriteGuardTest, OneFloatPastTheEndOfYIsFourBytesPastTheEnd) {
  const StatusOr<Tensor> y =
      Guarded(GemmWithC(), [](const Plan&, MutableTensorView y) { y.Data<float>()[8] = 0.0f; });
  EXPECT_EQ(y.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(y.status().message(), "wrote 4 bytes past the end of Y");
}

TEST(FamilyWriteGuardTest, OneInt32BeforeYIsFourBytesBeforeTheStart) {
  const StatusOr<Tensor> y =
      Guarded(MatMulIntegerWithZeroPoints(),
              [](const Plan&, MutableTensorView y) { y.Data<std::int32_t>()[-1] = 0; });
  EXPECT_EQ(y.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(y.status().message(), "wrote 4 bytes before the start of Y");
}

// Each operator with every one of its inputs given, and those inputs by ONNX's names.
struct EveryInput {
  const char* op;
  ProblemBuilder builder;
  std::vector<std::string> inputs;
};

// Every input of every operator is checked: a backend changing the last byte of any one is an
// ERROR naming it, and the caller's tensors are never touched (the backend had copies).
TEST(FamilyWriteGuardTest, EveryInputOfEveryOperatorIsCheckedUnchangedAndNamed) {
  const std::vector<EveryInput> operators = {
      {"Gemm", GemmWithC(), {"A", "B", "C"}},
      {"MatMulInteger", MatMulIntegerWithZeroPoints(), {"A", "B", "a_zero_point", "b_zero_point"}},
      {"QLinearMatMul",
       QLinearMatMulProblem(),
       {"a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point", "y_scale",
        "y_zero_point"}}};
  for (const EveryInput& op : operators) {
    const Plan original = family::PlanProblem(op.builder.problem()).value();
    for (const std::string& name : op.inputs) {
      const std::size_t bytes = NumBytes(InputOf(original, name));
      ASSERT_GT(bytes, 0u) << op.op << " " << name;
      const std::vector<std::byte> before(
          static_cast<const std::byte*>(InputOf(original, name).data),
          static_cast<const std::byte*>(InputOf(original, name).data) + bytes);
      const StatusOr<Tensor> y = Guarded(op.builder, [&](const Plan& plan, MutableTensorView) {
        FlipByte(InputOf(plan, name), bytes - 1);
      });
      EXPECT_EQ(y.status().code(), StatusCode::kDataLoss) << op.op << " " << name;
      EXPECT_EQ(y.status().message(), "modified input " + name + " (first changed byte " +
                                          std::to_string(bytes - 1) + " of " +
                                          std::to_string(bytes) + ")")
          << op.op;
      EXPECT_EQ(std::memcmp(before.data(), InputOf(original, name).data, bytes), 0)
          << op.op << " " << name << ": the caller's input changed";
    }
  }
}

// ---- In the harness's judgement of a family case (mm-conformance, every backend) ---------------

struct StrayWrite {
  const char* what;
  ProblemBuilder builder;
  FamilyScribble scribble;
  const char* message;
};

std::vector<StrayWrite> StrayWrites() {
  std::vector<StrayWrite> writes;
  writes.push_back({"one element past Y", GemmWithC(),
                    [](const Plan& plan, MutableTensorView y) {
                      y.Data<float>()[plan.product.y_elements] = 1.0f;
                    },
                    "wrote 4 bytes past the end of Y"});
  writes.push_back({"one element before Y", MatMulIntegerWithZeroPoints(),
                    [](const Plan&, MutableTensorView y) { y.Data<std::int32_t>()[-1] = 7; },
                    "wrote 4 bytes before the start of Y"});
  writes.push_back({"C modified", GemmWithC(),
                    [](const Plan& plan, MutableTensorView) { FlipByte(plan.gemm.c, 0); },
                    "modified input C (first changed byte 0 of 16)"});
  writes.push_back(
      {"a zero point modified", QLinearMatMulProblem(),
       [](const Plan& plan, MutableTensorView) { FlipByte(plan.b_zero_point.tensor, 0); },
       "modified input b_zero_point (first changed byte 0 of 1)"});
  return writes;
}

// Y is right in each (the write comes after the reference's answer): only the guard can tell.
TEST(FamilyWriteGuardTest, TheHarnessJudgesEveryStrayWriteAnErrorNamingIt) {
  for (StrayWrite& write : StrayWrites()) {
    const Plan plan = family::PlanProblem(write.builder.problem()).value();
    const std::unique_ptr<Backend> backend =
        MakeScribblingFamilyBackend("scribbling", plan.op, write.scribble);
    Result r;
    r.backend = "scribbling";
    ExecuteAndJudgeFamily(*backend, plan, Tolerance{}, r);
    EXPECT_EQ(r.verdict, Verdict::kError) << write.what << ": " << r.message;
    EXPECT_THAT(r.message, HasSubstr(write.message)) << write.what;
  }
}

TEST(FamilyWriteGuardTest, TheHarnessPassesABackendWritingOnlyY) {
  for (const ProblemBuilder& builder :
       {GemmWithC(), MatMulIntegerWithZeroPoints(), QLinearMatMulProblem()}) {
    const Plan plan = family::PlanProblem(builder.problem()).value();
    const std::unique_ptr<Backend> backend =
        MakeScribblingFamilyBackend("correct", plan.op, [](const Plan&, MutableTensorView) {});
    Result r;
    r.backend = "correct";
    ExecuteAndJudgeFamily(*backend, plan, Tolerance{}, r);
    EXPECT_EQ(r.verdict, Verdict::kPass) << family::OpName(plan.op) << ": " << r.message;
  }
}

}  // namespace
}  // namespace mm::conformance
