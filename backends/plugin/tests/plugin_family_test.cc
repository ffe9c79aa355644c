// Plugins of MatMul's family through version 3 of the ABI: a correct one's answers judged PASS by
// the exact judgement (engine/family), the saturating and beta-ignoring ones FAIL, plugins of
// versions 1 and 2 load and are refused the family with a reason naming their version, and a v3
// plugin that breaks the contract (a malformed declaration, a missing function, an answer without
// a message, a write outside Y) is a clear error, never a crash.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "../family_adapter.h"
#include "mm/backends/backend_list.h"
#include "mm/backends/plugin/plugin_loader.h"
#include "mm/family/backend.h"
#include "mm/family/exact.h"
#include "mm/family/judge.h"
#include "mm/family/testing/problem_builder.h"

namespace mm {
namespace plugin_family_test {

using family::ElementVerdict;
using family::Op;
using family::testing::ProblemBuilder;
using ::testing::AllOf;
using ::testing::HasSubstr;

const family::OpDesc kUInt8TimesInt8{Op::kMatMulInteger, 10, DType::kUInt8, DType::kInt8,
                                     DType::kInt32};
const family::OpDesc kGemmFloat{Op::kGemm, 13};

// The backend of the plugin at `path`, loaded alone; the test fails when it does not load.
std::unique_ptr<Backend> Plugin(const std::string& path) {
  BackendRegistry registry;
  const Status loaded = RegisterBackendLibraries(registry, std::vector<std::string>{path});
  EXPECT_TRUE(loaded.ok()) << loaded;
  if (!loaded.ok()) return nullptr;
  auto names = registry.Names();
  auto backend = registry.Create(names.back());
  EXPECT_TRUE(backend.ok()) << backend.status();
  return backend.ok() ? std::move(backend).value() : nullptr;
}

// The plugin at `path`'s Y for `p` judged against the exact answer of its declared arithmetic.
family::FamilyJudgement Judged(Backend& backend, const ProblemBuilder& p) {
  const family::Plan plan = family::PlanProblem(p.problem()).value();
  StatusOr<Tensor> y = family::ComputeOp(backend, plan);
  EXPECT_TRUE(y.ok()) << y.status();
  if (!y.ok()) return {};
  const Arithmetic arithmetic = backend.family()->DeclaredArithmetic(family::DescOf(plan));
  const family::FamilyOracle oracle = family::ExactFamily(plan, arithmetic).value();
  return family::JudgeFamily(plan, oracle, y->view());
}

// The error of computing `p` on `backend`.
Status ComputeError(Backend& backend, const ProblemBuilder& p) {
  const family::Plan plan = family::PlanProblem(p.problem()).value();
  return family::ComputeOp(backend, plan).status();
}

std::vector<double> Uniform(std::mt19937& rng, std::int64_t count, int lo, int hi) {
  std::uniform_int_distribution<int> whole(lo, hi);
  std::vector<double> out(static_cast<std::size_t>(count));
  for (double& v : out) v = whole(rng);
  return out;
}

// A uint8 x int8 problem with the saturating pair 255 * 127 + 255 * 127 = 64770.
ProblemBuilder SaturatingPair() {
  ProblemBuilder p(Op::kMatMulInteger, 10);
  p.Input("A", DType::kUInt8, {1, 2}, {255, 255});
  p.Input("B", DType::kInt8, {2, 1}, {127, 127});
  return p;
}

// A float Gemm with C = [1, 2] and beta = -2 (C scaled: a plugin ignoring beta adds +C).
ProblemBuilder GemmWithBeta() {
  ProblemBuilder p(Op::kGemm, 13);
  p.Input("A", DType::kFloat, {2, 3}, {1, 2, 3, 4, 5, 6});
  p.Input("B", DType::kFloat, {3, 2}, {1, 0, 0, 1, 1, 1});
  p.Input("C", DType::kFloat, {2}, {1, 2});
  p.Float("beta", -2);
  return p;
}

// ---- A correct version-3 plugin ----------------------------------------------------------------

TEST(PluginFamilyTest, AVersion3PluginSaysWhatItComputesAndWhyNot) {
  auto backend = Plugin(MM_FAMILY_PLUGIN_CORRECT);
  ASSERT_NE(backend, nullptr);
  EXPECT_TRUE(family::SupportOf(*backend, kUInt8TimesInt8).supported());
  EXPECT_TRUE(family::SupportOf(*backend, kGemmFloat).supported());
  const Support gemm_double =
      family::SupportOf(*backend, {Op::kGemm, 13, DType::kDouble, DType::kDouble, DType::kDouble});
  EXPECT_FALSE(gemm_double.supported());
  EXPECT_EQ(gemm_double.note, "Gemm in float only");
  EXPECT_EQ(backend->family()->Implementation(kGemmFloat), "loops, double accumulation");
  EXPECT_THAT(backend->RunsOn(), HasSubstr("(ABI version 3)"));
}

TEST(PluginFamilyTest, ItsGemmArithmeticIsTheOneItDeclared) {
  auto backend = Plugin(MM_FAMILY_PLUGIN_CORRECT);
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->family()->DeclaredArithmetic(kGemmFloat).accumulation, DType::kDouble);
  // Integer outputs are exact whatever is declared: Y's own type.
  EXPECT_EQ(backend->family()->DeclaredArithmetic(kUInt8TimesInt8).accumulation, DType::kInt32);
}

TEST(PluginFamilyTest, ItsMatMulIntegerPassesOnEveryTypeAndZeroPointForm) {
  auto backend = Plugin(MM_FAMILY_PLUGIN_CORRECT);
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(Judged(*backend, SaturatingPair()).verdict(), ElementVerdict::kPass);
  std::mt19937 rng(5);
  const DType types[] = {DType::kUInt8, DType::kInt8};
  for (DType ta : types) {
    for (DType tb : types) {
      // A batch of 2 against a shared B; per-row zero points of A, per-column of B.
      ProblemBuilder p(Op::kMatMulInteger, 10);
      const int a_lo = ta == DType::kInt8 ? -128 : 0, b_lo = tb == DType::kInt8 ? -128 : 0;
      p.Input("A", ta, {2, 3, 33}, Uniform(rng, 198, a_lo, a_lo + 255));
      p.Input("B", tb, {33, 5}, Uniform(rng, 165, b_lo, b_lo + 255));
      p.Input("a_zero_point", ta, {2, 3, 1}, Uniform(rng, 6, a_lo, a_lo + 255));
      p.Input("b_zero_point", tb, {5}, Uniform(rng, 5, b_lo, b_lo + 255));
      const family::FamilyJudgement j = Judged(*backend, p);
      EXPECT_EQ(j.verdict(), ElementVerdict::kPass)
          << DTypeName(ta) << " x " << DTypeName(tb) << ": " << j.Describe();
    }
  }
}

TEST(PluginFamilyTest, ItsGemmPassesOnEveryTransposeAndFormOfC) {
  auto backend = Plugin(MM_FAMILY_PLUGIN_CORRECT);
  ASSERT_NE(backend, nullptr);
  std::mt19937 rng(9);
  std::uniform_real_distribution<double> real(-4, 4);
  const std::vector<Dims> c_forms = {{}, {1}, {4}, {1, 4}, {3, 1}, {3, 4}};
  for (int trans = 0; trans < 4; ++trans) {
    for (const Dims& c : c_forms) {
      const bool ta = trans & 1, tb = trans & 2;
      ProblemBuilder p(Op::kGemm, 13);
      std::vector<double> a(27), b(36), cv(12);
      for (auto* v : {&a, &b, &cv}) {
        for (double& x : *v) x = real(rng);
      }
      std::int64_t c_count = 1;
      for (std::int64_t d : c) c_count *= d;
      cv.resize(static_cast<std::size_t>(c_count));
      p.Input("A", DType::kFloat, ta ? Dims{9, 3} : Dims{3, 9}, a);
      p.Input("B", DType::kFloat, tb ? Dims{4, 9} : Dims{9, 4}, b);
      p.Input("C", DType::kFloat, c, cv);
      p.Int("transA", ta).Int("transB", tb).Float("alpha", 0.75f).Float("beta", -1.5f);
      const family::FamilyJudgement j = Judged(*backend, p);
      EXPECT_EQ(j.verdict(), ElementVerdict::kPass)
          << "trans " << trans << " C " << DimsToString(c) << ": " << j.Describe();
    }
  }
  // Without C, and with K = 0 (Y = beta * C: the plugin is asked, and answers).
  ProblemBuilder no_c(Op::kGemm, 13);
  no_c.Input("A", DType::kFloat, {2, 3}, {1, 2, 3, 4, 5, 6});
  no_c.Input("B", DType::kFloat, {3, 1}, {1, 1, 1});
  EXPECT_EQ(Judged(*backend, no_c).verdict(), ElementVerdict::kPass);
  ProblemBuilder k_zero(Op::kGemm, 13);
  k_zero.Input("A", DType::kFloat, {2, 0});
  k_zero.Input("B", DType::kFloat, {0, 2});
  k_zero.Input("C", DType::kFloat, {2}, {3, -5});
  k_zero.Float("beta", 2);
  EXPECT_EQ(Judged(*backend, k_zero).verdict(), ElementVerdict::kPass);
}

TEST(PluginFamilyTest, TheLoadProbeAsksEveryVersionAndTypeOfTheFamily) {
  // Gemm: 3 float types in versions 1, 6 and 7, 7 with the integers in 9 and 11, 8 with bfloat16
  // in 13; MatMulInteger: 2 x 2; QLinearMatMul: 2 x 2 x 2 with float scales in 10, and with three
  // scale types in 21.
  const std::vector<family::OpDesc> descs = plugin_internal::FamilyDescs();
  EXPECT_EQ(descs.size(), 3u * 3 + 7 * 2 + 8 + 4 + 8 + 24);
  for (std::size_t i = 0; i < descs.size(); ++i) {
    for (std::size_t j = 0; j < i; ++j) EXPECT_FALSE(descs[i] == descs[j]) << descs[i].ToString();
  }
  const family::OpDesc qlinear21_bfloat16{Op::kQLinearMatMul, 21,           DType::kInt8,
                                          DType::kUInt8,      DType::kInt8, DType::kBFloat16};
  EXPECT_THAT(descs, ::testing::Contains(qlinear21_bfloat16));
}

TEST(PluginFamilyTest, ItsQLinearMatMulNeverFailsWithScalesPerRowAndPerColumn) {
  auto backend = Plugin(MM_FAMILY_PLUGIN_CORRECT);
  ASSERT_NE(backend, nullptr);
  std::mt19937 rng(13);
  std::uniform_real_distribution<double> scale(0.001, 0.1);
  for (int version : {10, 21}) {
    ProblemBuilder p(Op::kQLinearMatMul, version);
    p.Input("a", DType::kUInt8, {4, 16}, Uniform(rng, 64, 0, 255));
    p.Input("a_scale", DType::kFloat, {4, 1}, {scale(rng), scale(rng), scale(rng), scale(rng)});
    p.Input("a_zero_point", DType::kUInt8, {4, 1}, Uniform(rng, 4, 100, 150));
    p.Input("b", DType::kInt8, {16, 3}, Uniform(rng, 48, -128, 127));
    p.Input("b_scale", DType::kFloat, {3}, {scale(rng), scale(rng), scale(rng)});
    p.Input("b_zero_point", DType::kInt8, {3}, {0, -3, 5});
    p.Input("y_scale", DType::kFloat, {}, {0.05});
    p.Input("y_zero_point", DType::kInt8, {}, {-7});
    const family::FamilyJudgement j = Judged(*backend, p);
    EXPECT_EQ(j.fail, 0) << j.Describe();
    EXPECT_EQ(j.imprecise, 0) << j.Describe();
  }
  const Support float16_scales = family::SupportOf(
      *backend,
      {Op::kQLinearMatMul, 21, DType::kUInt8, DType::kUInt8, DType::kUInt8, DType::kFloat16});
  EXPECT_EQ(float16_scales.note, "QLinearMatMul with float scales only");
}

// ---- Wrong version-3 plugins: judged, and FAIL --------------------------------------------------

TEST(PluginFamilyTest, SaturatedPairSumsFailOnASaturatingPair) {
  auto backend = Plugin(MM_FAMILY_PLUGIN_SATURATES_PAIRS);
  ASSERT_NE(backend, nullptr);
  const family::FamilyJudgement j = Judged(*backend, SaturatingPair());
  EXPECT_EQ(j.verdict(), ElementVerdict::kFail) << j.Describe();
  EXPECT_EQ(j.worst_expected, "64770");
  EXPECT_EQ(j.worst_actual, "32767");
  // The same kernel is exact where no pair reaches int16's ends.
  ProblemBuilder small(Op::kMatMulInteger, 10);
  small.Input("A", DType::kUInt8, {1, 4}, {1, 2, 3, 4});
  small.Input("B", DType::kInt8, {4, 1}, {-1, 2, -3, 4});
  EXPECT_EQ(Judged(*backend, small).verdict(), ElementVerdict::kPass);
}

TEST(PluginFamilyTest, AGemmIgnoringBetaFails) {
  auto backend = Plugin(MM_FAMILY_PLUGIN_IGNORES_BETA);
  ASSERT_NE(backend, nullptr);
  const family::FamilyJudgement j = Judged(*backend, GemmWithBeta());
  EXPECT_EQ(j.verdict(), ElementVerdict::kFail) << j.Describe();
}

// ---- Plugins of versions 1 and 2: MatMul only
// ----------------------------------------------------

TEST(PluginFamilyTest, Version1And2PluginsLoadAndAreRefusedTheFamilyNamingTheirVersion) {
  for (const auto& [path, version] : {std::pair{MM_V1_PLUGIN, 1}, std::pair{MM_V2_PLUGIN, 2}}) {
    auto backend = Plugin(path);
    ASSERT_NE(backend, nullptr) << path;
    EXPECT_TRUE(backend->Supports({DType::kFloat, {2, 3}, {3, 4}}).supported());
    for (const family::OpDesc& desc : {kUInt8TimesInt8, kGemmFloat}) {
      const Support support = family::SupportOf(*backend, desc);
      EXPECT_FALSE(support.supported());
      EXPECT_THAT(support.note,
                  AllOf(HasSubstr("speaks plugin ABI version " + std::to_string(version) +
                                  ", which carries MatMul only"),
                        HasSubstr(std::string(family::OpName(desc.op)) + " needs version 3")));
    }
    const Status refused = ComputeError(*backend, SaturatingPair());
    EXPECT_EQ(refused.code(), StatusCode::kUnimplemented) << refused;
  }
}

TEST(PluginFamilyTest, AVersion2PluginKeepsItsMatMulDeclaration) {
  auto backend = Plugin(MM_V2_PLUGIN);
  ASSERT_NE(backend, nullptr);
  EXPECT_EQ(backend->DeclaredArithmetic(DType::kFloat).accumulation, DType::kDouble);
  EXPECT_THAT(backend->RunsOn(), HasSubstr("(ABI version 2)"));
}

TEST(PluginFamilyTest, AVersion3PluginWithoutTheOpFunctionsComputesMatMulOnly) {
  auto backend = Plugin(MM_FAMILY_PLUGIN_MATMUL_ONLY);
  ASSERT_NE(backend, nullptr);
  const Support support = family::SupportOf(*backend, kGemmFloat);
  EXPECT_FALSE(support.supported());
  EXPECT_THAT(support.note, HasSubstr("computes MatMul only"));
}

// The example plugin computes MatMulInteger of the family and refuses the others with its reason
// (its cases through mm-conformance: plugin.example_family).
TEST(PluginFamilyTest, TheExamplePluginComputesMatMulIntegerOnly) {
  auto backend = Plugin(MM_EXAMPLE_PLUGIN);
  ASSERT_NE(backend, nullptr);
  const Support gemm = family::SupportOf(*backend, kGemmFloat);
  EXPECT_FALSE(gemm.supported());
  EXPECT_THAT(gemm.note, HasSubstr("the example computes MatMulInteger only"));
  ProblemBuilder p(Op::kMatMulInteger, 10);
  p.Input("A", DType::kUInt8, {1, 2}, {255, 255}).Input("B", DType::kInt8, {2, 1}, {127, 127});
  p.Input("b_zero_point", DType::kInt8, {1}, {-1});
  const family::Plan plan = family::PlanProblem(p.problem()).value();
  auto y = family::ComputeOp(*backend, plan);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->Values<std::int32_t>()[0], 2 * 255 * 128);  // No pair saturated to 32767.
  EXPECT_THAT(backend->family()->Implementation(family::DescOf(plan)),
              HasSubstr("summed exactly in int64"));
}

// ---- Malformed version-3 plugins: clear errors
// -----------------------------------------------------

struct Refusal {
  const char* why;
  const char* path;
  StatusCode code;
  const char* message;
};

void PrintTo(const Refusal& r, std::ostream* os) { *os << r.why; }

class PluginFamilyRefusalTest : public ::testing::TestWithParam<Refusal> {};

TEST_P(PluginFamilyRefusalTest, RefusedAtLoadNamingTheFileAndTheFault) {
  BackendRegistry registry;
  const Status loaded =
      RegisterBackendLibraries(registry, std::vector<std::string>{GetParam().path});
  EXPECT_EQ(loaded.code(), GetParam().code) << loaded;
  EXPECT_THAT(loaded.message(), AllOf(HasSubstr(GetParam().path), HasSubstr(GetParam().message)));
}

INSTANTIATE_TEST_SUITE_P(
    MalformedDeclarations, PluginFamilyRefusalTest,
    ::testing::Values(
        Refusal{"float Gemm declared as accumulating in int32",
                MM_FAMILY_PLUGIN_GEMM_ARITHMETIC_INT, StatusCode::kInvalidArgument,
                "op_arithmetic() of plugin 'family_gemm_arithmetic_int' for Gemm-13 float "
                "declared accumulation in int32; a float dtype accumulates in float, double, "
                "float16 or bfloat16"},
        Refusal{"op_supports() answering 7", MM_FAMILY_PLUGIN_SUPPORT_OUT_OF_RANGE,
                StatusCode::kInternal,
                "op_supports() answered 7 for QLinearMatMul-10 uint8 x uint8 -> uint8, float "
                "scales; valid answers are 0 (native), 1 (by conversion), 2 (no)"},
        Refusal{"op_supports() without op_compute", MM_FAMILY_PLUGIN_SUPPORTS_WITHOUT_COMPUTE,
                StatusCode::kInvalidArgument,
                "the table of 'family_supports_without_compute' sets op_supports but not "
                "op_compute"},
        Refusal{"op_arithmetic() crashing at load", MM_FAMILY_PLUGIN_OP_ARITHMETIC_CRASH,
                StatusCode::kInvalidArgument,
                // SIGSEGV; SIGABRT under AddressSanitizer, which catches the fault first.
                "crashed in arithmetic() while loading: SIG"},
        Refusal{"op_compute() failing without a message in the load probe",
                MM_FAMILY_PLUGIN_COMPUTE_NO_MESSAGE, StatusCode::kInternal,
                "op_compute() returned status 13 (INTERNAL) with no message for Gemm-13 float; "
                "the plugin ABI requires one"}));

TEST(PluginFamilyTest, AComputeCrashingInTheLoadProbeIsABackendThatCannotStart) {
  BackendRegistry registry;
  const std::string path = MM_FAMILY_PLUGIN_COMPUTE_CRASH;
  ASSERT_TRUE(RegisterBackendLibraries(registry, std::vector<std::string>{path}).ok());
  const auto backend = registry.Create("family_compute_crash");
  ASSERT_FALSE(backend.ok());
  // SIGSEGV; SIGABRT under AddressSanitizer, which catches the fault first.
  EXPECT_THAT(backend.status().message(),
              ::testing::AnyOf(HasSubstr("crashed during the load probe: SIGSEGV"),
                               HasSubstr("crashed during the load probe: SIGABRT")));
}

TEST(PluginFamilyTest, AWriteOutsideYIsAnError) {
  auto backend = Plugin(MM_FAMILY_PLUGIN_WRITES_PAST_Y);
  ASSERT_NE(backend, nullptr);
  const Status error = ComputeError(*backend, SaturatingPair());
  EXPECT_EQ(error.code(), StatusCode::kDataLoss) << error;
  EXPECT_THAT(error.message(), AllOf(HasSubstr("plugin 'family_writes_past_y'"),
                                     HasSubstr("op_compute() wrote 4 bytes past the end of Y")));
}

TEST(PluginFamilyTest, ChangingAnInputIsAnError) {
  auto backend = Plugin(MM_FAMILY_PLUGIN_MODIFIES_B);
  ASSERT_NE(backend, nullptr);
  const Status error = ComputeError(*backend, SaturatingPair());
  EXPECT_EQ(error.code(), StatusCode::kDataLoss) << error;
  EXPECT_THAT(error.message(), HasSubstr("modified input B (first changed byte 0 of 2)"));
}

}  // namespace plugin_family_test
}  // namespace mm
