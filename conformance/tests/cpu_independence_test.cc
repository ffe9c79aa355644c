// The same verdicts on every CPU: what the harness says about 16-bit float cases and about cases
// whose shapes are huge around an empty output must not depend on the machine. ctest runs these
// once more under ONEDNN_MAX_CPU_ISA=AVX2 and SSE41 (label isa), where oneDNN has no bf16 matmul.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "mm/backends/backend_list.h"
#include "mm/conformance/testing/cli_runs.h"
#include "mm/engine/process/process.h"
#include "mm/engine/testing/sanitizers.h"
#include "onnx_fixtures.h"

namespace mm::conformance {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::TempDir;

// Values -2.0, -1.75, ... (exact in every float type), `count` of them cycling every 16.
template <class T>
Tensor Ramp(const Dims& dims) {
  Tensor t = Tensor::Create(DTypeOf<T>(), dims).value();
  for (std::int64_t i = 0; i < t.NumElements(); ++i) {
    t.Data<T>()[i] = T(-2.0f + 0.25f * static_cast<float>(i % 16));
  }
  return t;
}

// A run of mm-conformance and its --json report.
struct JudgedRun : testing::CliRun {
  nlohmann::json report;
};

// mm-conformance over the cases of `root`, its JSON report written to `json` and read back.
JudgedRun Judge(const fs::path& root, const fs::path& json) {
  JudgedRun run{testing::ConformanceCli(
                    {"--data-dir", root.string(), "--no-builtin", "--json", json.string()}),
                {}};
  std::ifstream in(json);
  if (in) run.report = nlohmann::json::parse(in);
  return run;
}

TEST(CpuIndependentVerdictsTest, SixteenBitCasesPassOnEveryBackendAndSayHow) {
  TempDir root, out;
  // Batched with a broadcast B and odd sizes, so every path of each backend is taken.
  testing::WriteCase(root.path(), "test_bf16", Ramp<bfloat16>({2, 3, 5}), Ramp<bfloat16>({5, 7}));
  testing::WriteCase(root.path(), "test_f16", Ramp<float16>({3, 1, 4, 9}),
                     Ramp<float16>({2, 9, 3}));
  testing::WriteCase(root.path(), "test_f32", Ramp<float>({4, 6}), Ramp<float>({6}));
  const JudgedRun run = Judge(root.path(), out.path() / "r.json");
  ASSERT_EQ(run.code, kExitPassed) << run.out << run.err;
  const BackendRegistry registry = BuiltinBackends();
  ASSERT_EQ(run.report["results"].size(), 3 * registry.DefaultNames().size());
  for (const nlohmann::json& r : run.report["results"]) {
    SCOPED_TRACE(r.dump());
    auto backend = registry.Create(r["backend"].get<std::string>()).value();
    const DType dtype = DTypeFromName(r["dtype"].get<std::string>()).value();
    const Support support = backend->Supports({dtype, {2, 3}, {3, 4}});
    // A backend without the dtype (a BLAS library has no float16) says so, with its reason.
    if (!support.supported()) {
      EXPECT_EQ(r["verdict"], "UNSUPPORTED");
      EXPECT_EQ(r["message"], support.note);
      continue;
    }
    EXPECT_EQ(r["verdict"], "PASS");
    ASSERT_TRUE(r["implementation"].is_string());
    EXPECT_FALSE(r["implementation"].get<std::string>().empty());
    // The note is there exactly when the backend computes through another type on this CPU.
    EXPECT_EQ(r["support_note"].is_string(), support.level == Support::Level::kByConversion);
    if (r["backend"] == "onednn" && dtype != DType::kFloat) {
      EXPECT_THAT(r["implementation"].get<std::string>(), HasSubstr("ISA "));
    }
  }
  EXPECT_THAT(run.report["runs_on"]["onednn"].get<std::string>(), HasSubstr("effective ISA"));
}

// The peak resident memory of the processes that did the work of `run`: it runs in a child
// process of this one, whose own workers (the isolated run's, forked from it) are its children;
// their largest peak, less what the child held when it started (every worker starts as a copy of
// it), is what the run cost. The parent of an isolated run never executes a backend, so its own
// peak says nothing.
template <class Run>
std::int64_t WorkerPeakGrowthBytes(Run run) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    const std::int64_t start = process::PeakResidentBytes();
    const bool ok = run();
    rusage children{};
    getrusage(RUSAGE_CHILDREN, &children);
    const std::int64_t growth =
        ok ? static_cast<std::int64_t>(children.ru_maxrss) * 1024 - start : -1;
    [[maybe_unused]] const ssize_t n = write(fds[1], &growth, sizeof(growth));
    _exit(0);
  }
  close(fds[1]);
  std::int64_t growth = -1;
  if (read(fds[0], &growth, sizeof(growth)) != sizeof(growth)) growth = -1;
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  return growth;
}

TEST(CpuIndependentVerdictsTest, AnEmptyOutputCostsOnlyItsFilesWhateverItsDims) {
  // About 120 bytes of files: A [0, 0], B [0, 2^31], Y [0, 2^31], no data. Before the engine
  // answered empty outputs, the reference backend sized a row of N accumulators: 16 GiB.
  TempDir root, out;
  testing::WriteCase(root.path(), "test_empty_wide", Tensor::Create(DType::kFloat, {0, 0}).value(),
                     Tensor::Create(DType::kFloat, {0, std::int64_t{1} << 31}).value());
  testing::WriteCase(root.path(), "test_empty_batch",
                     Tensor::Create(DType::kFloat, {std::int64_t{1} << 40, 0, 3}).value(),
                     Tensor::Create(DType::kFloat, {3, 4}).value());
  std::uintmax_t bytes = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root.path())) {
    if (entry.is_regular_file()) bytes += entry.file_size();
  }
  EXPECT_LT(bytes, 1024u);
  const JudgedRun run = Judge(root.path(), out.path() / "r.json");
  EXPECT_EQ(run.code, kExitPassed) << run.out << run.err;
  for (const nlohmann::json& r : run.report["results"]) {
    EXPECT_EQ(r["verdict"], "PASS") << r.dump();
    EXPECT_EQ(r["implementation"], "engine: empty Y, nothing to compute") << r.dump();
  }
  // Measured on the workers, which run the backends: --memory-limit 0 lets a 16 GiB row through,
  // so a regression shows here as growth, not as an ERROR.
  const std::int64_t growth = WorkerPeakGrowthBytes([&] {
    return testing::ConformanceCli({"--data-dir", root.path().string(), "--no-builtin", "--jobs",
                                    "1", "--memory-limit", "0"})
               .code == kExitPassed;
  });
  ASSERT_GE(growth, 0) << "the measured run failed";
  EXPECT_LT(growth, std::int64_t{64} << 20);
}

// A worker that sees many shapes keeps none of them: oneDNN's process-wide primitive cache holds
// up to 1,024 compiled primitives by default (tens of MB), and a conformance run sees each shape
// once, so workers run with it off unless the user sets ONEDNN_PRIMITIVE_CACHE_CAPACITY.
TEST(WorkerMemoryTest, AWorkerDoesNotGrowWithTheNumberOfShapesOneDnnCompiled) {
#if MM_UNDER_ASAN
  // Measured in the plain build, which CI runs too: AddressSanitizer keeps freed memory resident
  // in its quarantine (hundreds of MB), so here a worker's peak says nothing about what it keeps.
  GTEST_SKIP() << "resident memory under AddressSanitizer includes its quarantine";
#endif
  // The same kind of case, 20 shapes and 1,000 (M, K, N), each a primitive of its own; tiny
  // tensors, so the data costs nothing. What a worker costs whatever it runs (libraries, OpenMP,
  // oneDNN's engine) is in both; the difference is what the shapes cost.
  TempDir few, many;
  for (int i = 0; i < 1000; ++i) {
    const std::int64_t m = 1 + i % 10, k = 1 + (i / 10) % 10, n = 1 + i / 100;
    const std::string name = "test_shape_" + std::to_string(i);
    testing::WriteCase(many.path(), name, Ramp<float>({m, k}), Ramp<float>({k, n}));
    if (i < 20) testing::WriteCase(few.path(), name, Ramp<float>({m, k}), Ramp<float>({k, n}));
  }
  auto growth = [](const fs::path& root, const char* capacity) {
    return WorkerPeakGrowthBytes([&] {
      if (capacity == nullptr) {
        unsetenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY");
      } else {
        setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", capacity, 1);
      }
      return testing::ConformanceCli({"--data-dir", root.string(), "--no-builtin", "--jobs", "1",
                                      "--backend", "onednn", "--memory-limit", "0"})
                 .code == kExitPassed;
    });
  };
  const std::int64_t few_default = growth(few.path(), nullptr);
  const std::int64_t many_default = growth(many.path(), nullptr);
  const std::int64_t few_cached = growth(few.path(), "1024");
  const std::int64_t many_cached = growth(many.path(), "1024");
  for (const std::int64_t g : {few_default, many_default, few_cached, many_cached}) {
    ASSERT_GE(g, 0) << "a measured run failed";
  }
  const std::int64_t bound = std::int64_t{4} << 20;
  EXPECT_LT(many_default - few_default, bound)
      << "20 shapes: " << few_default << " bytes, 1,000: " << many_default;
  // The user's setting is kept, and this measurement sees a cache of that size break the bound
  // above. What 1,000 primitives cost depends on the kernels oneDNN compiles for the CPU
  // (brgemm with AVX-512, smaller gemm:jit ones with AVX2), so the bound is the only fixed line.
  EXPECT_GT(many_cached - few_cached, bound)
      << "20 shapes: " << few_cached << " bytes, 1,000: " << many_cached;
}

}  // namespace
}  // namespace mm::conformance
