// ONNX's 20 official node tests of MatMul's family (onnx v1.22.0: 11 Gemm, 1 MatMulInteger,
// 8 QLinearMatMul-21), read from MM_FAMILY_DATA (never copied into the repository), their
// SHA256SUMS checked first: each is planned and its expected output judged PASS by the exact
// judgement.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "family_node_test_reader.h"
#include "mm/conformance/loader/tensor_proto.h"
#include "mm/conformance/official/sha256.h"
#include "mm/family/exact.h"
#include "mm/family/judge.h"
#include "mm/family/plan.h"
#include "onnx/onnx_pb.h"

namespace mm::family {
namespace {

namespace fs = std::filesystem;

// The data folder, or empty when MM_FAMILY_DATA is unset.
fs::path DataRoot() {
  const char* root = std::getenv("MM_FAMILY_DATA");
  return root == nullptr ? fs::path() : fs::path(root);
}

class FamilyOfficialCasesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = DataRoot();
    if (root_.empty()) GTEST_SKIP() << "MM_FAMILY_DATA is not set: the official cases are absent";
    if (!fs::is_directory(root_)) {
      GTEST_SKIP() << "MM_FAMILY_DATA " << root_
                   << " is not a folder: the official cases are absent";
    }
  }
  // The case folders, sorted.
  std::vector<fs::path> Cases() const {
    std::vector<fs::path> cases;
    for (const auto& entry : fs::directory_iterator(root_)) {
      if (entry.is_directory()) cases.push_back(entry.path());
    }
    std::sort(cases.begin(), cases.end());
    return cases;
  }
  fs::path root_;
};

TEST_F(FamilyOfficialCasesTest, EveryFileMatchesSha256Sums) {
  std::ifstream sums(root_ / "SHA256SUMS");
  ASSERT_TRUE(sums) << "no SHA256SUMS in " << root_;
  std::string line;
  std::set<std::string> listed;
  while (std::getline(sums, line)) {
    std::istringstream fields(line);
    std::string hash, path;
    fields >> hash >> path;
    if (path == "SHA256SUMS") continue;  // Its own line (summed while it was being written).
    const auto actual = conformance::Sha256HexOfFile(root_ / path);
    ASSERT_TRUE(actual.ok()) << actual.status();
    EXPECT_EQ(*actual, hash) << path;
    listed.insert(path);
  }
  // And nothing unlisted: every file of a case is summed.
  for (const auto& entry : fs::recursive_directory_iterator(root_)) {
    const std::string path = fs::relative(entry.path(), root_).string();
    if (!entry.is_regular_file() || path == "SHA256SUMS" || path == "README.md") continue;
    EXPECT_TRUE(listed.contains(path)) << path << " is not in SHA256SUMS";
  }
  EXPECT_EQ(Cases().size(), 20u);
}

TEST_F(FamilyOfficialCasesTest, EveryCaseIsPlannedAndItsExpectedOutputJudgedPass) {
  std::map<Op, int> per_op;
  for (const fs::path& dir : Cases()) {
    SCOPED_TRACE(dir.filename().string());
    const StatusOr<testing::FamilyNodeTestRead> loaded = testing::ReadFamilyNodeTest(dir);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    const StatusOr<Plan> plan = PlanProblem(loaded->problem);
    ASSERT_TRUE(plan.ok()) << plan.status();
    const StatusOr<FamilyOracle> oracle = ExactFamily(*plan, Arithmetic::OwnType(plan->y_dtype));
    ASSERT_TRUE(oracle.ok()) << oracle.status();
    const FamilyJudgement judgement = JudgeFamily(*plan, *oracle, loaded->expected.view());
    EXPECT_EQ(judgement.verdict(), ElementVerdict::kPass) << judgement.Describe();
    ++per_op[plan->op];
  }
  EXPECT_EQ(per_op[Op::kGemm], 11);
  EXPECT_EQ(per_op[Op::kMatMulInteger], 1);
  EXPECT_EQ(per_op[Op::kQLinearMatMul], 8);
}

}  // namespace
}  // namespace mm::family
