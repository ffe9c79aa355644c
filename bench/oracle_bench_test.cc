// mm-bench --mm_oracle's table: for each dtype the oracle's best and median run beside the fastest
// GEMM of the same run, and the ratio of their rates.
#include "oracle_bench.h"

#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "mm/backends/reference/reference_backend.h"

namespace mm::bench {
namespace {

struct Row {
  long long n = 0;
  std::string dtype, gemm;
  double rate = 0, best = 0, cpu = 0, median = 0, gemm_rate = 0, ratio = 0;
  long long exact_path = -1;
};

TEST(OracleBenchTest, EachDTypeHasItsBestAndMedianRunBesideTheFastestGemm) {
  BackendRegistry registry;
  ASSERT_TRUE(registry
                  .Register("reference", "the reference",
                            []() -> StatusOr<std::unique_ptr<Backend>> {
                              return std::unique_ptr<Backend>(new ReferenceBackend());
                            })
                  .ok());
  std::ostringstream out;
  ASSERT_EQ(OracleBench(registry, {24}, out), 0) << out.str();
  std::istringstream lines(out.str());
  std::string line;
  std::vector<Row> rows;
  bool header = false;
  while (std::getline(lines, line)) {
    if (line.find("best s") != std::string::npos && line.find("median s") != std::string::npos) {
      header = true;
      continue;
    }
    std::istringstream fields(line);
    Row r;
    if (fields >> r.n >> r.dtype >> r.rate >> r.best >> r.cpu >> r.median >> r.exact_path >>
        r.gemm >> r.gemm_rate >> r.ratio) {
      rows.push_back(r);
    }
  }
  EXPECT_TRUE(header) << out.str();
  ASSERT_EQ(rows.size(), 5u) << out.str();
  const std::vector<std::string> dtypes = {"double", "float", "float16", "bfloat16", "int64"};
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    EXPECT_EQ(r.n, 24);
    EXPECT_EQ(r.dtype, dtypes[i]);
    EXPECT_GT(r.best, 0);
    EXPECT_GE(r.median, r.best) << r.dtype;
    EXPECT_NEAR(r.rate, 24.0 * 24 * 24 / r.best, r.rate * 1e-2) << r.dtype;
    EXPECT_EQ(r.gemm, "reference");
    EXPECT_NEAR(r.ratio, r.rate / r.gemm_rate, r.ratio * 1e-2 + 1e-3) << r.dtype;
    EXPECT_GE(r.exact_path, 0);
  }
}

}  // namespace
}  // namespace mm::bench
