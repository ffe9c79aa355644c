// Declarations held to what was measured, end to end through mm-conformance: torch 1.13's
// bfloat16 sums in bfloat16 are a declared deviation (XFAIL with the upstream issue, a FAIL without
// the declaration), its oneDNN-path variant is declared for the CPUs that take that path only, and
// no report names the absolute path of the working directory or of mm's checkout.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "mm/backends/backend_list.h"
#include "mm/backends/deviations/deviations_file.h"
#include "mm/conformance/loader/node_test_writer.h"
#include "mm/conformance/testing/cli_runs.h"
#include "mm/conformance/tools/cli.h"
#include "onnx_fixtures.h"

namespace mm::conformance {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::TempDir;

const fs::path kSource = MM_SOURCE_DIR;
const fs::path kTorchExpectations = kSource / "backends/runtimes/python/expectations/torch.json";

std::string FileText(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A run of mm-conformance and its --json report.
struct DeviationRun : testing::CliRun {
  nlohmann::json report;

  // The result of `case_name` (its one data set) on `backend`; null when there is none.
  nlohmann::json Result(const std::string& case_name, const std::string& backend) const {
    for (const auto& r : report.value("results", nlohmann::json::array())) {
      if (r.at("case") == case_name && r.at("backend") == backend) return r;
    }
    return nullptr;
  }
};

DeviationRun JudgeDeviations(std::vector<std::string> args, const fs::path& json) {
  fs::remove(json);
  args.insert(args.end(), {"--json", json.string()});
  DeviationRun run{testing::ConformanceCli(args), {}};
  std::ifstream in(json);
  if (in) run.report = nlohmann::json::parse(in);
  return run;
}

// 1 + 128 x 2^-8 = 1.5 exactly, in each of Y's m x n elements (A: ones; B: a first row of ones, the
// rest 2^-8). Summed in bfloat16, each 1 + 2^-8 is a tie that nearest-even loses: 1.
void WriteK129(const fs::path& dir, std::int64_t m, std::int64_t n) {
  std::vector<bfloat16> a(m * 129, bfloat16(1.0f)), b(129 * n, bfloat16(0x1p-8f));
  for (std::int64_t j = 0; j < n; ++j) b[j] = bfloat16(1.0f);
  const std::vector<bfloat16> y(m * n, bfloat16(1.5f));
  ASSERT_TRUE(WriteMatMulNodeTest(dir, Tensor::FromValues<bfloat16>({m, 129}, a).value(),
                                  Tensor::FromValues<bfloat16>({129, n}, b).value(),
                                  Tensor::FromValues<bfloat16>({m, n}, y).value())
                  .ok());
}

// Whether the running CPU takes torch 1.13's oneDNN path for a large bfloat16 product.
bool TorchHasOneDnnPath() {
  const std::set<std::string>& cpu = RunningCpuFeatures();
  return cpu.count("avx512bw") && cpu.count("avx512vl") && cpu.count("avx512dq");
}

class TorchDeviationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Status torch = BuiltinBackends().CheckSelectable("torch"); !torch.ok()) {
      GTEST_SKIP() << torch;
    }
    // Below 16^3 multiply-adds torch 1.13 takes ATen's own GEMM on every CPU; above, oneDNN's
    // where the CPU has AVX512BW/VL/DQ.
    WriteK129(corpus_.path() / "test_torch_bf16_k129", 1, 1);
    WriteK129(corpus_.path() / "test_torch_bf16_k129_16x16", 16, 16);
  }

  DeviationRun Run(std::vector<std::string> extra) {
    std::vector<std::string> args = {"--data-dir", corpus_.path().string(), "--no-builtin"};
    args.insert(args.end(), extra.begin(), extra.end());
    return JudgeDeviations(args, out_.path() / "r.json");
  }

  TempDir corpus_, out_;
};

TEST_F(TorchDeviationTest, ASumOfOnePointFiveAnsweredOneIsXfailWithTheUpstreamIssue) {
  const DeviationRun run =
      Run({"--backend", "torch", "--expectations", kTorchExpectations.string()});
  EXPECT_EQ(run.code, kExitPassed) << run.out << run.err;
  const nlohmann::json k129 = run.Result("test_torch_bf16_k129", "torch");
  ASSERT_FALSE(k129.is_null()) << run.out << run.err;
  EXPECT_EQ(k129.at("verdict"), "XFAIL") << k129.dump();
  EXPECT_THAT(k129.at("expectation").get<std::string>(), HasSubstr("pytorch/pytorch/issues/95125"));
  // The large product: XFAIL where ATen's GEMM runs it, PASS where oneDNN does, and then the
  // declaration says it is not for this CPU rather than matching nothing silently.
  const nlohmann::json big = run.Result("test_torch_bf16_k129_16x16", "torch");
  ASSERT_FALSE(big.is_null());
  EXPECT_EQ(big.at("verdict"), TorchHasOneDnnPath() ? "PASS" : "XFAIL") << big.dump();
  int not_here = 0;
  for (const auto& e : run.report.at("expectations").at("entries")) {
    not_here += e.contains("not_here");
  }
  EXPECT_EQ(not_here > 0, TorchHasOneDnnPath()) << run.report.at("expectations").dump();
  if (TorchHasOneDnnPath()) {
    EXPECT_THAT(run.out, HasSubstr("not for this CPU: XFAIL"));
  }
}

TEST_F(TorchDeviationTest, WithoutTheDeclarationTheSumIsAFail) {
  const DeviationRun run = Run({"--backend", "torch"});
  EXPECT_EQ(run.code, kExitFailed) << run.out << run.err;
  const nlohmann::json k129 = run.Result("test_torch_bf16_k129", "torch");
  ASSERT_FALSE(k129.is_null()) << run.out << run.err;
  EXPECT_EQ(k129.at("verdict"), "FAIL") << k129.dump();
  EXPECT_THAT(k129.at("message").get<std::string>(), HasSubstr("expected 1.5, got 1"));
}

// torch with its oneDNN path turned off computes every product as a CPU without AVX512BW/VL/DQ
// does: the declarations of that path, made unconditional for it, catch both sums.
TEST_F(TorchDeviationTest, TheCpuConditionedDeclarationCatchesTheAtenPathWhereverItRuns) {
  nlohmann::json declared = nlohmann::json::parse(FileText(kTorchExpectations));
  for (auto& e : declared.at("expectations")) {
    if (e.at("backend") != "torch") continue;
    e["backend"] = "torch-aten";
    e.erase("unless_cpu_has");
  }
  const fs::path variant = out_.path() / "torch-aten.json";
  std::ofstream(variant) << declared.dump();
  const std::string driver =
      "/usr/bin/python3 " +
      (kSource / "backends/runtimes/python/tests/torch_without_onednn_driver.py").string();
  const DeviationRun run = Run({"--backend-cmd", "torch-aten=" + driver, "--backend", "torch-aten",
                                "--expectations", variant.string()});
  EXPECT_EQ(run.code, kExitPassed) << run.out << run.err;
  for (const char* name : {"test_torch_bf16_k129", "test_torch_bf16_k129_16x16"}) {
    const nlohmann::json r = run.Result(name, "torch-aten");
    ASSERT_FALSE(r.is_null()) << name << run.out << run.err;
    EXPECT_EQ(r.at("verdict"), "XFAIL") << r.dump();
  }
}

// Every report mm-conformance writes (console, JSON, JUnit, Markdown), with a data root given by
// its absolute path inside the working directory and a shipped driver of the checkout (numpy, when
// installed), names neither the working directory nor the checkout by their absolute paths.
TEST(ReportPathsTest, NoReportNamesTheWorkingDirectoryOrTheCheckout) {
  const fs::path cwd = fs::current_path();
  const fs::path root = cwd / ("mm_report_paths_" + std::to_string(::getpid()));
  fs::remove_all(root);
  testing::WriteFloatCase(root, "reportpaths", {2, 3}, {3});
  TempDir out;
  std::vector<std::string> args = {"--data-dir",
                                   root.string(),
                                   "--no-builtin",
                                   "--backend",
                                   "reference",
                                   "--junit",
                                   (out.path() / "r.xml").string(),
                                   "--markdown",
                                   (out.path() / "r.md").string()};
  if (BuiltinBackends().CheckSelectable("numpy").ok()) {
    args.insert(args.end(), {"--backend", "numpy"});
  }
  const DeviationRun run = JudgeDeviations(args, out.path() / "r.json");
  fs::remove_all(root);
  EXPECT_EQ(run.code, kExitPassed) << run.out << run.err;
  const std::map<std::string, std::string> reports = {{"console", run.out + run.err},
                                                      {"JSON", FileText(out.path() / "r.json")},
                                                      {"JUnit", FileText(out.path() / "r.xml")},
                                                      {"Markdown", FileText(out.path() / "r.md")}};
  for (const auto& [kind, text] : reports) {
    ASSERT_THAT(text, HasSubstr("reportpaths")) << kind;  // The report is there and names the case.
    EXPECT_EQ(text.find(cwd.string()), std::string::npos) << kind << " names " << cwd << ":\n"
                                                          << text;
    EXPECT_EQ(text.find(kSource.string()), std::string::npos)
        << kind << " names " << kSource << ":\n"
        << text;
  }
}

}  // namespace
}  // namespace mm::conformance
