// The oneDNN backend's part of MatMul's family: what it says it computes on the CPU the test runs
// on (oneDNN asked directly, after ONEDNN_MAX_CPU_ISA: ctest runs this binary capped at AVX2,
// SSE41 and AVX512_CORE too), and worked examples of what it computes. The built-in family
// catalogue on this backend is conformance/tests/family/onednn_family_cases_test.cc (a floor up).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <vector>

#include "mm/backends/onednn/onednn_backend.h"
#include "mm/family/backend.h"
#include "mm/family/testing/problem_builder.h"

namespace mm {
namespace {

using family::Op;
using family::OpDesc;
using family::testing::ProblemBuilder;
using ::testing::HasSubstr;

std::unique_ptr<OneDnnBackend> CreatedOneDnn() {
  auto backend = OneDnnBackend::Create();
  EXPECT_TRUE(backend.ok()) << backend.status();
  return backend.ok() ? std::move(backend).value() : nullptr;
}

// oneDNN's own answer, asked directly: does its u8 x s8 -> s32 matmul run a VNNI (or AMX) kernel
// here? Without one it uses VPMADDUBSW, whose pair sums saturate in int16.
bool OneDnnRunsInt8WithVnni() {
  OneDnnBackend::ApplyIsaPolicy();
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  using dt = dnnl::memory::data_type;
  const dnnl::memory::desc a({2, 4}, dt::u8, dnnl::memory::format_tag::ab);
  const dnnl::memory::desc b({4, 2}, dt::s8, dnnl::memory::format_tag::ab);
  const dnnl::memory::desc y({2, 2}, dt::s32, dnnl::memory::format_tag::ab);
  try {
    const std::string impl =
        dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, y), engine).impl_info_str();
    return impl.find("vnni") != std::string::npos || impl.find("amx") != std::string::npos;
  } catch (const dnnl::error&) {
    return false;
  }
}

std::vector<OpDesc> IntegerDescs() {
  std::vector<OpDesc> out;
  for (DType a : {DType::kUInt8, DType::kInt8}) {
    for (DType b : {DType::kUInt8, DType::kInt8}) {
      out.push_back({Op::kMatMulInteger, 10, a, b, DType::kInt32});
      out.push_back({Op::kQLinearMatMul, 10, a, b, DType::kUInt8, DType::kFloat});
      out.push_back({Op::kQLinearMatMul, 21, a, b, DType::kInt8, DType::kBFloat16});
    }
  }
  return out;
}

TEST(OneDnnFamilyTest, ComputesTheIntegerOperatorsExactlyWhereOneDnnRunsVnniElseSaysWhyNot) {
  auto backend = CreatedOneDnn();
  ASSERT_NE(backend, nullptr);
  const bool vnni = OneDnnRunsInt8WithVnni();
  for (const OpDesc& desc : IntegerDescs()) {
    const Support support = family::SupportOf(*backend, desc);
    if (vnni) {
      EXPECT_TRUE(support.supported()) << desc.ToString() << ": " << support.note;
      EXPECT_EQ(backend->family()->DeclaredIntegerAccumulation(desc),
                family::IntegerAccumulation::kExact);
      EXPECT_THAT(backend->family()->Implementation(desc), HasSubstr("exact int32 accumulation"));
      // Only uint8 x int8 is oneDNN's own pairing; the others are shifted to it, and say so.
      const bool own = desc.a_dtype == DType::kUInt8 && desc.b_dtype == DType::kInt8;
      EXPECT_EQ(support.level, own ? Support::Level::kNative : Support::Level::kByConversion)
          << desc.ToString();
    } else {
      EXPECT_FALSE(support.supported()) << desc.ToString();
      EXPECT_THAT(support.note, HasSubstr("without VNNI")) << desc.ToString();
      EXPECT_THAT(support.note, HasSubstr("Nuances of int8 computations"));
      EXPECT_EQ(backend->family()->Implementation(desc), "");
    }
  }
}

TEST(OneDnnFamilyTest, ComputesGemmInTheFloatTypesAsItComputesMatMulAndRefusesTheOthers) {
  auto backend = CreatedOneDnn();
  ASSERT_NE(backend, nullptr);
  for (DType dtype : {DType::kFloat, DType::kBFloat16, DType::kFloat16}) {
    const OpDesc desc{Op::kGemm, 13, dtype, dtype, dtype};
    const Support gemm = family::SupportOf(*backend, desc);
    const Support matmul = backend->Supports(MatMulDesc{dtype, {2, 3}, {3, 4}});
    EXPECT_EQ(gemm.level, matmul.level) << desc.ToString();
    EXPECT_EQ(gemm.note, matmul.note) << desc.ToString();
    EXPECT_EQ(backend->family()->DeclaredArithmetic(desc), backend->DeclaredArithmetic(dtype));
    if (gemm.supported()) {
      EXPECT_THAT(backend->family()->Implementation(desc), HasSubstr("sum post-op"));
    }
  }
  for (DType dtype :
       {DType::kDouble, DType::kInt32, DType::kInt64, DType::kUInt32, DType::kUInt64}) {
    const Support support = family::SupportOf(*backend, OpDesc{Op::kGemm, 13, dtype, dtype, dtype});
    EXPECT_FALSE(support.supported()) << DTypeName(dtype);
    EXPECT_THAT(support.note, HasSubstr("oneDNN has no " + std::string(DTypeName(dtype))));
  }
}

// Y of a float Gemm on the oneDNN backend (float is computed on every x86-64 CPU).
std::vector<float> GemmY(const ProblemBuilder& p) {
  auto backend = CreatedOneDnn();
  const family::Plan plan = family::PlanProblem(p.problem()).value();
  StatusOr<Tensor> y = family::ComputeOp(*backend, plan);
  EXPECT_TRUE(y.ok()) << y.status();
  if (!y.ok()) return {};
  const auto values = y->Values<float>();
  return {values.begin(), values.end()};
}

TEST(OneDnnFamilyTest, GemmTransposesScalesAndAddsBetaC) {
  // A [K=3, M=2] transposed, B [N=2, K=3] transposed, alpha 0.5, beta 2, C [M, 1] = {1, 2}:
  // A'B' = [[6, 8], [8, 10]], Y = 0.5 A'B' + 2 C = [[5, 6], [8, 9]].
  ProblemBuilder p(Op::kGemm, 13);
  p.Input("A", DType::kFloat, {3, 2}, {1, 2, 3, 4, 5, 6});
  p.Input("B", DType::kFloat, {2, 3}, {1, 0, 1, 0, 1, 1});
  p.Input("C", DType::kFloat, {2, 1}, {1, 2});
  p.Float("alpha", 0.5f).Float("beta", 2).Int("transA", 1).Int("transB", 1);
  EXPECT_EQ(GemmY(p), (std::vector<float>{5, 6, 8, 9}));
}

TEST(OneDnnFamilyTest, GemmNeverScalesAnInputIntoAnInfinity) {
  // alpha * 3e38 overflows float32, and times B's 0 would be NaN; alpha (A B) is 0 (oneDNN's
  // gemm:jit scaled A first: found by mm-fuzz capped at AVX2).
  ProblemBuilder p(Op::kGemm, 11);
  p.Input("A", DType::kFloat, {1, 2}, {1e-30, 3e38});
  p.Input("B", DType::kFloat, {2, 1}, {1e-30, 0});
  p.Float("alpha", -2.5f);
  EXPECT_EQ(GemmY(p), (std::vector<float>{0}));
}

TEST(OneDnnFamilyTest, GemmWithAlphaZeroIsBetaCInEveryTypeItComputes) {
  // oneDNN returned elements of Y as they were with an output scale of 0 (bfloat16 capped at
  // AVX512_CORE: mm-fuzz --op Gemm, seed 1, problem 393); mm answers beta C itself.
  auto backend = CreatedOneDnn();
  ASSERT_NE(backend, nullptr);
  for (DType dtype : {DType::kFloat, DType::kBFloat16, DType::kFloat16}) {
    if (!family::SupportOf(*backend, OpDesc{Op::kGemm, 13, dtype, dtype, dtype}).supported()) {
      continue;
    }
    ProblemBuilder p(Op::kGemm, 13);
    p.Filled("A", dtype, {25, 1}, 3).Filled("B", dtype, {1, 14}, -5);
    p.Filled("C", dtype, {14}, 2).Float("alpha", 0).Float("beta", -2.5f);
    const family::Plan plan = family::PlanProblem(p.problem()).value();
    const Tensor y = family::ComputeOp(*backend, plan).value();
    VisitDType(dtype, [&](auto tag) {
      using T = CppType<decltype(tag)::value>;
      for (T v : y.Values<T>()) EXPECT_EQ(ToDouble(v), -5.0) << DTypeName(dtype);
    });
  }
}

// The cases below need oneDNN's VNNI kernel; elsewhere the backend refuses them (tested above).
class OneDnnFamilyVnniTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!OneDnnRunsInt8WithVnni()) GTEST_SKIP() << "oneDNN runs int8 without VNNI here";
    backend_ = CreatedOneDnn();
    ASSERT_NE(backend_, nullptr);
  }
  std::int32_t Only(const ProblemBuilder& p) {
    const family::Plan plan = family::PlanProblem(p.problem()).value();
    StatusOr<Tensor> y = family::ComputeOp(*backend_, plan);
    EXPECT_TRUE(y.ok()) << y.status();
    return y.ok() ? y->Values<std::int32_t>()[0] : 0;
  }
  std::unique_ptr<OneDnnBackend> backend_;
};

TEST_F(OneDnnFamilyVnniTest, SumsBeyondTwoToThe24AreExactWithZeroPointsAndSignedA) {
  // 2 * 127 + 1023 * 255 * 127 = 33,130,109: odd and above 2^24, so a pass through float32
  // (oneDNN's zero-point and s8 x s8 paths) rounds it to 33,130,108.
  std::vector<double> a(1024, 255);
  a[0] = 2;
  ProblemBuilder u(Op::kMatMulInteger, 10);
  u.Input("A", DType::kUInt8, {1, 1024}, a);
  u.Filled("B", DType::kInt8, {1024, 1}, 127);
  u.Input("a_zero_point", DType::kUInt8, {}, {0});
  u.Input("b_zero_point", DType::kInt8, {}, {0});
  EXPECT_EQ(Only(u), 33130109);
  // int8 A: 3 * 127 + 2080 * 127 * 127 = 33,548,701 (odd, above 2^24).
  std::vector<double> s(2081, 127);
  s[0] = 3;
  ProblemBuilder i(Op::kMatMulInteger, 10);
  i.Input("A", DType::kInt8, {1, 2081}, s);
  i.Filled("B", DType::kInt8, {2081, 1}, 127);
  EXPECT_EQ(Only(i), 33548701);
}

TEST_F(OneDnnFamilyVnniTest, UnsignedBAndEveryZeroPointTermAreSubtractedModuloTwoToThe32) {
  // (255 - 1) * (0 - 255) * 2 with a per-row A zero point and a per-column uint8 B zero point.
  ProblemBuilder p(Op::kMatMulInteger, 10);
  p.Input("A", DType::kUInt8, {2, 2}, {255, 255, 7, 9});
  p.Input("B", DType::kUInt8, {2, 2}, {0, 200, 0, 100});
  p.Input("a_zero_point", DType::kUInt8, {2}, {1, 3});
  p.Input("b_zero_point", DType::kUInt8, {2}, {255, 50});
  const family::Plan plan = family::PlanProblem(p.problem()).value();
  const Tensor y = family::ComputeOp(*backend_, plan).value();
  // Row 0: (254)(-255) * 2, (254)(150) + (254)(50); row 1: 4*-255 + 6*-255, 4*150 + 6*50.
  const auto values = y.Values<std::int32_t>();
  EXPECT_EQ(std::vector<std::int32_t>(values.begin(), values.end()),
            (std::vector<std::int32_t>{-129540, 50800, -2550, 900}));
}

TEST_F(OneDnnFamilyVnniTest, QLinearMatMulRoundsTiesToEven) {
  // acc 1, 3, 5, 7 times a_scale 0.5: ties 0.5, 1.5, 2.5, 3.5 -> 0, 2, 2, 4.
  ProblemBuilder p(Op::kQLinearMatMul, 10);
  p.Input("a", DType::kUInt8, {4, 1}, {1, 3, 5, 7});
  p.Input("a_scale", DType::kFloat, {}, {0.5});
  p.Input("a_zero_point", DType::kUInt8, {}, {0});
  p.Input("b", DType::kInt8, {1, 1}, {1});
  p.Input("b_scale", DType::kFloat, {}, {1});
  p.Input("b_zero_point", DType::kInt8, {}, {0});
  p.Input("y_scale", DType::kFloat, {}, {1});
  p.Input("y_zero_point", DType::kUInt8, {}, {0});
  const family::Plan plan = family::PlanProblem(p.problem()).value();
  const Tensor y = family::ComputeOp(*backend_, plan).value();
  const auto values = y.Values<std::uint8_t>();
  EXPECT_EQ(std::vector<std::uint8_t>(values.begin(), values.end()),
            (std::vector<std::uint8_t>{0, 2, 2, 4}));
}

TEST_F(OneDnnFamilyVnniTest, QLinearMatMulAddsItsZeroPointAfterRounding) {
  // 7 x (0.5 - 2^-25) = 3.4999998 rounds to 3, + 100 = 103. oneDNN's own requantization (output
  // scale and destination zero point) adds 100 in float32 first: 103.5, which rounds to 104.
  ProblemBuilder p(Op::kQLinearMatMul, 10);
  p.Input("a", DType::kUInt8, {1, 1}, {7});
  p.Input("a_scale", DType::kFloat, {}, {std::nextafter(0.5f, 0.0f)});
  p.Input("a_zero_point", DType::kUInt8, {}, {0});
  p.Input("b", DType::kInt8, {1, 1}, {1});
  p.Input("b_scale", DType::kFloat, {}, {1});
  p.Input("b_zero_point", DType::kInt8, {}, {0});
  p.Input("y_scale", DType::kFloat, {}, {1});
  p.Input("y_zero_point", DType::kUInt8, {}, {100});
  const family::Plan plan = family::PlanProblem(p.problem()).value();
  EXPECT_EQ(family::ComputeOp(*backend_, plan).value().Values<std::uint8_t>()[0], 103);
}

}  // namespace
}  // namespace mm
