// The built-in catalogue of MatMul's family: deterministic, well named, every case planned and
// PASSed by the reference backend, and covering the classes issue 52 lists (checked on the plans,
// not on the names).
#include "mm/conformance/loader/family_cases.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "mm/backends/reference/reference_backend.h"
#include "mm/conformance/loader/shape_classes.h"
#include "mm/family/backend.h"
#include "mm/family/exact.h"
#include "mm/family/judge.h"
#include "mm/family/plan.h"

namespace mm::conformance {
namespace {

using family::CForm;
using family::Op;
using family::Plan;
using family::QuantForm;

const std::vector<FamilyCase>& Cases() {
  static const std::vector<FamilyCase> cases = BuiltinFamilyCases();
  return cases;
}

std::vector<Plan> Plans() {
  std::vector<Plan> plans;
  for (const FamilyCase& c : Cases()) plans.push_back(family::PlanProblem(c.problem).value());
  return plans;
}

TEST(FamilyCasesTest, EveryCasePlans) {
  for (const FamilyCase& c : Cases()) {
    const StatusOr<Plan> plan = family::PlanProblem(c.problem);
    EXPECT_TRUE(plan.ok()) << c.name << ": " << plan.status();
  }
}

TEST(FamilyCasesTest, NamesAreUniqueAndOfTheNameRule) {
  std::set<std::string> names;
  for (const FamilyCase& c : Cases()) {
    EXPECT_TRUE(names.insert(c.name).second) << "twice: " << c.name;
    EXPECT_TRUE(c.name.starts_with(kFamilyCasePrefix)) << c.name;
    EXPECT_EQ(c.name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_"), std::string::npos)
        << c.name;
    EXPECT_FALSE(c.op_class.empty()) << c.name;
  }
}

// The same cases, byte for byte, on every call.
TEST(FamilyCasesTest, IsDeterministic) {
  const std::vector<FamilyCase> again = BuiltinFamilyCases();
  ASSERT_EQ(again.size(), Cases().size());
  for (std::size_t i = 0; i < again.size(); ++i) {
    const FamilyCase &x = Cases()[i], &y = again[i];
    ASSERT_EQ(x.name, y.name);
    EXPECT_EQ(x.problem.ToString(), y.problem.ToString());
    ASSERT_EQ(x.problem.inputs.size(), y.problem.inputs.size());
    for (std::size_t k = 0; k < x.problem.inputs.size(); ++k) {
      const TensorView &a = x.problem.inputs[k].tensor, &b = y.problem.inputs[k].tensor;
      const std::size_t bytes = static_cast<std::size_t>(a.NumElements()) * DTypeSize(a.dtype);
      EXPECT_EQ(std::memcmp(a.data, b.data, bytes), 0) << x.name << " " << x.problem.inputs[k].name;
    }
  }
}

// Views stay valid when cases move (a vector growing relocates them).
TEST(FamilyCasesTest, AMovedCaseKeepsItsProblemValid) {
  std::vector<FamilyCase> cases = BuiltinFamilyCases();
  const void* data = cases.front().problem.inputs.front().tensor.data;
  const std::string before = cases.front().problem.ToString();
  std::vector<FamilyCase> moved;
  for (FamilyCase& c : cases) moved.push_back(std::move(c));
  EXPECT_EQ(moved.front().problem.inputs.front().tensor.data, data);
  EXPECT_EQ(moved.front().tensors.front().raw_data(), data);
  EXPECT_EQ(moved.front().problem.ToString(), before);
  EXPECT_TRUE(family::PlanProblem(moved.back().problem).ok());
}

TEST(FamilyCasesTest, TheReferenceBackendPassesEveryCase) {
  ReferenceBackend reference;
  for (const FamilyCase& c : Cases()) {
    const Plan plan = family::PlanProblem(c.problem).value();
    const Arithmetic arithmetic = reference.family()->DeclaredArithmetic(family::DescOf(plan));
    const StatusOr<family::FamilyOracle> oracle = family::ExactFamily(plan, arithmetic);
    ASSERT_TRUE(oracle.ok()) << c.name << ": " << oracle.status();
    const StatusOr<Tensor> y = family::ComputeOp(reference, plan);
    ASSERT_TRUE(y.ok()) << c.name << ": " << y.status();
    const family::FamilyJudgement judgement = family::JudgeFamily(plan, *oracle, y->view());
    EXPECT_EQ(judgement.verdict(), family::ElementVerdict::kPass)
        << c.name << ": " << judgement.Describe();
  }
}

TEST(FamilyCasesTest, TheExpectedOutputIsTheExactOracles) {
  for (const FamilyCase& c : Cases()) {
    const Plan plan = family::PlanProblem(c.problem).value();
    const Tensor y = FamilyCaseExpectedY(c).value();
    EXPECT_EQ(y.dims(), plan.y_dims()) << c.name;
    EXPECT_EQ(y.dtype(), plan.y_dtype) << c.name;
    const family::FamilyOracle oracle =
        family::ExactFamily(plan, Arithmetic::OwnType(plan.y_dtype)).value();
    EXPECT_EQ(family::JudgeFamily(plan, oracle, y.view()).verdict(), family::ElementVerdict::kPass)
        << c.name;
  }
}

// Hundreds, not thousands.
TEST(FamilyCasesTest, SizesPerOperator) {
  std::map<Op, int> per_op;
  for (const FamilyCase& c : Cases()) ++per_op[c.problem.op];
  EXPECT_GT(per_op[Op::kGemm], 300);
  EXPECT_GT(per_op[Op::kMatMulInteger], 150);
  EXPECT_GT(per_op[Op::kQLinearMatMul], 150);
  EXPECT_LT(Cases().size(), 1500u);
}

// Gemm-13: every type x transpose pair x form of C; every alpha x beta value per type; K, M, N = 0;
// every version.
TEST(FamilyCasesTest, GemmCoversEveryTransposePairFormOfCAndScaling) {
  std::set<std::tuple<DType, bool, bool, CForm>> shapes;
  std::map<DType, std::set<std::pair<float, float>>> scalings;
  std::set<int> versions;
  bool k0 = false, m0 = false, n0 = false;
  for (const Plan& p : Plans()) {
    if (p.op != Op::kGemm) continue;
    versions.insert(p.version);
    k0 |= p.product.k == 0;
    m0 |= p.product.m == 0;
    n0 |= p.product.n == 0;
    if (p.version != 13) continue;
    shapes.insert({p.y_dtype, p.gemm.trans_a, p.gemm.trans_b, p.gemm.c_form});
    scalings[p.y_dtype].insert({p.gemm.alpha, p.gemm.beta});
  }
  EXPECT_EQ(shapes.size(), 8u * 4u * 8u);
  EXPECT_EQ(scalings[DType::kBFloat16].size(), 16u);  // 0, 1, -2 or -0.5, 1 + 2^-12.
  EXPECT_TRUE(scalings[DType::kBFloat16].contains({1.000244140625f, 1.000244140625f}));
  EXPECT_TRUE(scalings[DType::kInt32].contains({4294967808.0f, -3.0f}));
  EXPECT_EQ(scalings[DType::kInt64].size(), 9u);
  EXPECT_THAT(versions, ::testing::ElementsAre(1, 6, 7, 9, 11, 13));
  EXPECT_TRUE(k0 && m0 && n0);
}

// Every single-problem numpy.matmul class x every zero-point form that its ranks allow x (on the
// 2-D class) every pair of data types.
TEST(FamilyCasesTest, IntegerOperatorsCoverEveryShapeClassAndZeroPointForm) {
  std::size_t single = 0;
  for (const ShapeClass& shape : ShapeClasses()) single += shape.sequence() ? 0 : 1;
  for (Op op : {Op::kMatMulInteger, Op::kQLinearMatMul}) {
    std::set<std::string> classes;
    std::set<std::tuple<QuantForm, QuantForm>> forms;
    std::set<std::tuple<DType, DType>> types;
    std::set<DType> scale_types;
    for (std::size_t i = 0; i < Cases().size(); ++i) {
      const FamilyCase& c = Cases()[i];
      if (c.problem.op != op) continue;
      const Plan p = family::PlanProblem(c.problem).value();
      classes.insert(c.op_class.substr(0, c.op_class.find('/', c.op_class.find('/') + 1)));
      forms.insert({p.a_zero_point.form, p.b_zero_point.form});
      types.insert({p.a_dtype, p.b_dtype});
      scale_types.insert(p.scale_dtype);
    }
    EXPECT_GE(classes.size(), single) << OpName(op);
    EXPECT_TRUE(forms.contains({QuantForm::kPerRow, QuantForm::kPerColumn})) << OpName(op);
    EXPECT_TRUE(forms.contains({QuantForm::kPerRow, QuantForm::kPerTensor})) << OpName(op);
    EXPECT_TRUE(forms.contains({QuantForm::kPerTensor, QuantForm::kPerColumn})) << OpName(op);
    EXPECT_EQ(forms.contains({QuantForm::kAbsent, QuantForm::kAbsent}), op == Op::kMatMulInteger);
    EXPECT_EQ(types.size(), 4u) << OpName(op);
    if (op == Op::kQLinearMatMul) {
      EXPECT_EQ(scale_types.size(), 3u);
    }
  }
}

// The value classes, seen in the data: a vpmaddubsw pair (uint8 >= 128 against int8 +127 twice or
// -128 twice at k, k + 1, zero points 0), K past 2^15, an exact sum outside int32 and the largest
// K inside it, ties that a requantization rounding half away from zero gets wrong, saturation at
// both ends.
TEST(FamilyCasesTest, ValueClassesAreThere) {
  std::map<Op, int> pairs, long_k, outside, inside_long;
  int ties = 0, saturated_low = 0, saturated_high = 0;
  for (const FamilyCase& c : Cases()) {
    if (c.problem.op == Op::kGemm) continue;
    const Plan p = family::PlanProblem(c.problem).value();
    const family::FamilyOracle oracle =
        family::ExactFamily(p, Arithmetic::OwnType(p.y_dtype)).value();
    const std::int64_t k = p.product.k;
    if (k > 32768) ++long_k[p.op];
    if (oracle.outside_int32_count > 0) ++outside[p.op];
    if (k > 60000 && oracle.outside_int32_count == 0) ++inside_long[p.op];
    if (p.a_dtype == DType::kUInt8 && p.b_dtype == DType::kInt8 && k >= 2 &&
        p.a_zero_point.ZeroPoint(0) == 0 && p.b_zero_point.ZeroPoint(0) == 0) {
      const auto* a = p.a.Data<std::uint8_t>();
      const auto* b = p.b.Data<std::int8_t>();
      const std::int64_t n = p.product.n;
      for (std::int64_t kk = 0; kk + 1 < k; kk += 2) {
        if (a[kk] >= 128 && a[kk + 1] >= 128 && b[kk * n] == b[(kk + 1) * n] &&
            (b[kk * n] == 127 || b[kk * n] == -128)) {
          ++pairs[p.op];
          break;
        }
      }
    }
    if (p.op != Op::kQLinearMatMul) continue;
    const bool is_signed = p.y_dtype == DType::kInt8;
    for (std::int64_t i = 0; i < oracle.y.NumElements(); ++i) {
      const std::int64_t y =
          is_signed ? oracle.y.Data<std::int8_t>()[i] : oracle.y.Data<std::uint8_t>()[i];
      saturated_low += y == (is_signed ? -128 : 0);
      saturated_high += y == (is_signed ? 127 : 255);
    }
    ties += c.op_class.find("ties/") != std::string::npos;
  }
  for (Op op : {Op::kMatMulInteger, Op::kQLinearMatMul}) {
    EXPECT_GE(pairs[op], 2) << OpName(op);
    EXPECT_GE(long_k[op], 4) << OpName(op);
    EXPECT_EQ(outside[op], 2) << OpName(op);
    EXPECT_GE(inside_long[op], 1) << OpName(op);
  }
  EXPECT_EQ(ties, 3);
  EXPECT_GT(saturated_low, 0);
  EXPECT_GT(saturated_high, 0);
}

}  // namespace
}  // namespace mm::conformance
