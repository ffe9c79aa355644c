// The oracle's kernels: every copy this CPU runs (one per instruction-set level, chosen at run
// time) gives the same bits, the chosen copy is the level ChosenCpuIsa() names, and a caller's
// cancellation flag stops a product promptly without changing one that runs to the end.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "mm/engine/machine.h"
#include "mm/oracle/error_bound.h"
#include "oracle_kernels.h"

namespace mm {
namespace {

using oracle_internal::OracleKernels;

template <class T>
Tensor RandomTensor(Dims dims, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> value(-1, 1);
  Tensor t = Tensor::Create(DTypeOf<T>(), dims).value();
  for (std::int64_t i = 0; i < t.NumElements(); ++i) {
    if constexpr (std::is_integral_v<T>) {
      t.Data<T>()[i] = static_cast<T>(rng());
    } else {
      t.Data<T>()[i] = RoundFromDouble<T>(value(rng));
    }
  }
  return t;
}

// The copies this build has for the levels this CPU runs, lowest first.
std::vector<const OracleKernels*> RunnableCopies() {
  std::vector<const OracleKernels*> copies = {mm_isa_baseline_oracle_kernels()};
#if MM_MAX_COMPILED_CPU_ISA >= 1
  if (SupportedCpuIsa() >= CpuIsa::kAvx2) copies.push_back(mm_isa_avx2_oracle_kernels());
#endif
#if MM_MAX_COMPILED_CPU_ISA >= 2
  if (SupportedCpuIsa() >= CpuIsa::kAvx512) copies.push_back(mm_isa_avx512_oracle_kernels());
#endif
  return copies;
}

TEST(OracleKernelsTest, TheChosenCopyIsTheChosenLevel) {
  const StatusOr<CpuIsa> chosen = ChosenCpuIsa();
  ASSERT_TRUE(chosen.ok()) << chosen.status();
  const StatusOr<const OracleKernels*> kernels = oracle_internal::ChosenOracleKernels();
  ASSERT_TRUE(kernels.ok());
  EXPECT_EQ((*kernels)->isa, *chosen) << DescribeChosenCpuIsa();
}

TEST(OracleKernelsTest, EachCopyIsCompiledForItsOwnLevel) {
  const std::vector<const OracleKernels*> copies = RunnableCopies();
  for (std::size_t i = 0; i < copies.size(); ++i) {
    EXPECT_EQ(copies[i]->isa, static_cast<CpuIsa>(i));
    // Private copies: no two share a kernel (the linker merged none of them).
    for (std::size_t j = 0; j < i; ++j) {
      EXPECT_NE(reinterpret_cast<const void*>(copies[i]->fast_float),
                reinterpret_cast<const void*>(copies[j]->fast_float));
    }
  }
}

// Every copy the CPU runs gives the bits of the baseline copy, for each path.
TEST(OracleKernelsTest, EveryCopyGivesTheSameBits) {
  const MatMulPlan plan = PlanMatMul({DType::kFloat, {70, 300}, {300, 90}}).value();
  const Tensor a = RandomTensor<float>({70, 300}, 1), b = RandomTensor<float>({300, 90}, 2);
  const MatMulPlan dplan = PlanMatMul({DType::kDouble, {40, 200}, {200, 50}}).value();
  const Tensor da = RandomTensor<double>({40, 200}, 3), db = RandomTensor<double>({200, 50}, 4);
  const MatMulPlan iplan = PlanMatMul({DType::kInt32, {3, 20, 30}, {30, 10}}).value();
  const Tensor ia = RandomTensor<std::int32_t>({3, 20, 30}, 5);
  const Tensor ib = RandomTensor<std::int32_t>({30, 10}, 6);
  // The results of one copy: Y of the float, double and int32 products.
  const auto run = [&](const OracleKernels& k) {
    // Results sized by ExactMatMul, then filled again by the copy.
    OracleResult f = ExactMatMul(plan, a.view(), b.view()).value();
    OracleResult d = ExactMatMul(dplan, da.view(), db.view()).value();
    Tensor y = Tensor::Create(DType::kInt32, iplan.y_dims).value();
    EXPECT_TRUE(k.fast_float(plan, a.Data<float>(), b.Data<float>(), f, nullptr).ok());
    EXPECT_TRUE(k.fast_double(dplan, da.Data<double>(), db.Data<double>(), d, nullptr).ok());
    EXPECT_TRUE(k.fast_int32(iplan, ia.Data<std::int32_t>(), ib.Data<std::int32_t>(),
                             y.Data<std::int32_t>(), nullptr)
                    .ok());
    std::vector<Tensor> products;
    products.push_back(std::move(f.y));
    products.push_back(std::move(d.y));
    products.push_back(std::move(y));
    return products;
  };
  const std::vector<const OracleKernels*> copies = RunnableCopies();
  const std::vector<Tensor> expected = run(*copies[0]);
  for (const OracleKernels* copy : copies) {
    const std::vector<Tensor> got = run(*copy);
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(std::memcmp(got[i].raw_data(), expected[i].raw_data(), got[i].NumBytes()), 0)
          << CpuIsaName(copy->isa) << ", product " << i;
    }
  }
}

// A flag already set: every path stops at once.
TEST(OracleCancelTest, ASetFlagStopsEveryPath) {
  const std::atomic<bool> cancel{true};
  for (const DType dtype : {DType::kFloat, DType::kFloat16, DType::kDouble, DType::kInt64}) {
    for (const bool fast : {true, false}) {
      const MatMulPlan plan = PlanMatMul({dtype, {2, 64, 64}, {64, 64}}).value();
      const Tensor a = Tensor::Create(dtype, {2, 64, 64}).value();
      const Tensor b = Tensor::Create(dtype, {64, 64}).value();
      const auto result = ExactMatMul(plan, a.view(), b.view(), {.fast = fast, .cancel = &cancel});
      EXPECT_EQ(result.status().code(), StatusCode::kCancelled)
          << DTypeName(dtype) << (fast ? " fast" : " exact") << ": " << result.status();
    }
  }
}

// A flag set by another thread while a long product runs stops it within a second.
TEST(OracleCancelTest, AFlagSetDuringAProductStopsItPromptly) {
  // The exact path over 1024^3 float terms: seconds of work on this machine's cores.
  const MatMulPlan plan = PlanMatMul({DType::kFloat, {1024, 1024}, {1024, 1024}}).value();
  const Tensor a = RandomTensor<float>({1024, 1024}, 7), b = RandomTensor<float>({1024, 1024}, 8);
  std::atomic<bool> cancel{false};
  std::chrono::steady_clock::time_point set_at;
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    set_at = std::chrono::steady_clock::now();
    cancel.store(true);
  });
  const auto result = ExactMatMul(plan, a.view(), b.view(), {.fast = false, .cancel = &cancel});
  const auto returned = std::chrono::steady_clock::now();
  setter.join();
  EXPECT_EQ(result.status().code(), StatusCode::kCancelled) << result.status();
  EXPECT_LT(std::chrono::duration<double>(returned - set_at).count(), 1.0);
}

// A flag that stays false changes nothing: the same bits as without one.
TEST(OracleCancelTest, AnUnsetFlagChangesNothing) {
  const std::atomic<bool> cancel{false};
  for (const DType dtype : {DType::kFloat, DType::kBFloat16, DType::kDouble, DType::kUInt32}) {
    for (const bool fast : {true, false}) {
      const MatMulPlan plan = PlanMatMul({dtype, {3, 50, 70}, {70, 40}}).value();
      Tensor a, b;
      VisitDType(dtype, [&](auto tag) {
        using T = CppType<decltype(tag)::value>;
        a = RandomTensor<T>({3, 50, 70}, 10);
        b = RandomTensor<T>({70, 40}, 11);
      });
      const OracleResult plain = ExactMatMul(plan, a.view(), b.view(), {.fast = fast}).value();
      const OracleResult flagged =
          ExactMatMul(plan, a.view(), b.view(), {.fast = fast, .cancel = &cancel}).value();
      EXPECT_EQ(std::memcmp(plain.y.raw_data(), flagged.y.raw_data(), plain.y.NumBytes()), 0)
          << DTypeName(dtype);
      EXPECT_EQ(plain.exact, flagged.exact);
      EXPECT_EQ(plain.abs_sum, flagged.abs_sum);
      EXPECT_EQ(plain.exact_fallbacks, flagged.exact_fallbacks);
    }
  }
}

}  // namespace
}  // namespace mm
