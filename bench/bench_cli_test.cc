// mm-bench's own flags, parsed into BenchOptions: what each sets, what is left for Google
// Benchmark, and a usage error naming the flag for a bad one; and the environment it measures in.
#include "bench_cli.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>

#include "mm/engine/testing/scoped_env.h"

namespace mm::bench {
namespace {

using ::mm::testing::ScopedEnv;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(BenchOptionsTest, OwnFlagsSetTheirFieldsAndTheRestGoesToGoogleBenchmark) {
  auto o = ParseBenchOptions({"--backend", "eigen", "--benchmark_filter=matmul/", "--backend-lib",
                              "a.so", "--backend-cmd=np=python3 d.py", "--mm_set=quick",
                              "--mm_oracle=64,128", "--backend=reference", "--mm_describe",
                              "--benchmark_min_time=0.1s"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_THAT(o->named, ElementsAre("eigen", "reference"));
  EXPECT_THAT(o->libraries, ElementsAre("a.so"));
  EXPECT_THAT(o->commands, ElementsAre("np=python3 d.py"));
  EXPECT_EQ(o->set, ShapeSet::kQuick);
  EXPECT_TRUE(o->oracle);
  EXPECT_THAT(o->oracle_sizes, ElementsAre(64, 128));
  EXPECT_TRUE(o->describe);
  EXPECT_THAT(o->benchmark_args,
              ElementsAre("--benchmark_filter=matmul/", "--benchmark_min_time=0.1s"));
}

TEST(BenchOptionsTest, DefaultsAreTheFullSetAndTheOracleSizes) {
  auto o = ParseBenchOptions({});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->set, ShapeSet::kFull);
  EXPECT_FALSE(o->oracle);
  EXPECT_THAT(o->oracle_sizes, ElementsAre(512, 1024));
  EXPECT_TRUE(o->calibrate.empty());
  EXPECT_TRUE(o->benchmark_args.empty());
}

TEST(BenchOptionsTest, ABadValueIsAUsageErrorNamingTheFlag) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--mm_set=fast"}, "--mm_set must be quick or full, got 'fast'"},
      {{"--mm_oracle=64,-1"}, "--mm_oracle=N,N,... takes positive sizes, got '64,-1'"},
      {{"--mm_oracle="}, "--mm_oracle"},
      {{"--mm_calibrate="}, "--mm_calibrate needs a file name"},
      {{"--backend-lib"}, "--backend-lib needs a path"},
      {{"--backend-lib", ""}, "--backend-lib needs a path"},
      {{"--backend"}, "--backend needs a value"},
      {{"--backend-cmd"}, "--backend-cmd needs a value"},
      {{"--mm_sett=quick"}, "unknown flag --mm_sett=quick"},
  };
  for (const auto& [args, message] : bad) {
    auto o = ParseBenchOptions(args);
    ASSERT_FALSE(o.ok()) << args[0];
    EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument) << args[0];
    EXPECT_THAT(o.status().message(), HasSubstr(message)) << args[0];
  }
}

TEST(BenchOptionsTest, OpNamesTheOperatorsTimedInOrder) {
  auto o = ParseBenchOptions({"--op", "MatMulInteger", "--op=Gemm", "--op", "MatMul"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_THAT(o->ops,
              ElementsAre(family::Op::kMatMulInteger, family::Op::kGemm, family::Op::kMatMul));
  EXPECT_TRUE(o->benchmark_args.empty());
  auto none = ParseBenchOptions({"--benchmark_filter=x"});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->ops.empty());  // MatMul alone.
}

TEST(BenchOptionsTest, ABadOpIsAUsageErrorSayingWhatIsWrong) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> bad = {
      {{"--op"}, "--op needs an operator (MatMul, Gemm, MatMulInteger, QLinearMatMul)"},
      {{"--op", "--mm_set=quick"}, "--op needs an operator"},
      {{"--op", "Conv"},
       "--op: 'Conv' is not an operator of MatMul's family (MatMul, Gemm, MatMulInteger, "
       "QLinearMatMul)"},
      {{"--op=gemm"}, "'gemm' is not an operator"},
      {{"--op=Gemm", "--op", "Gemm"}, "--op Gemm given twice"},
      {{"--op=Gemm", "--mm_oracle"}, "--op selects the benchmarks; --mm_oracle measures MatMul"},
      {{"--mm_calibrate=t.json", "--op=Gemm"},
       "--op selects the benchmarks; --mm_calibrate measures MatMul"},
  };
  for (const auto& [args, message] : bad) {
    auto o = ParseBenchOptions(args);
    ASSERT_FALSE(o.ok()) << args.back();
    EXPECT_EQ(o.status().code(), StatusCode::kInvalidArgument) << args.back();
    EXPECT_THAT(o.status().message(), HasSubstr(message)) << args.back();
  }
}

TEST(BenchOptionsTest, CalibrationFlagsNameTheirFiles) {
  auto o = ParseBenchOptions({"--mm_calibrate=table.json", "--mm_calibrate_part=part"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->calibrate, "table.json");
  EXPECT_EQ(o->calibrate_part, "part");
  EXPECT_TRUE(o->benchmark_args.empty());
}

TEST(MeasuringEnvironmentTest, SetsTheLibrariesVariablesWhereTheUserHasNot) {
  ScopedEnv timeout("OPENBLAS_THREAD_TIMEOUT", std::nullopt);
  ScopedEnv cache("ONEDNN_PRIMITIVE_CACHE_CAPACITY", std::nullopt);
  SetMeasuringEnvironment();
  EXPECT_STREQ(std::getenv("OPENBLAS_THREAD_TIMEOUT"), kOpenBlasThreadTimeout);
  EXPECT_STREQ(std::getenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY"), "0");
}

TEST(MeasuringEnvironmentTest, KeepsTheUsersValues) {
  ScopedEnv timeout("OPENBLAS_THREAD_TIMEOUT", "28");
  ScopedEnv cache("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "1024");
  SetMeasuringEnvironment();
  EXPECT_STREQ(std::getenv("OPENBLAS_THREAD_TIMEOUT"), "28");
  EXPECT_STREQ(std::getenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY"), "1024");
}

}  // namespace
}  // namespace mm::bench
