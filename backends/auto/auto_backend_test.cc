// The auto backend: what it chooses and from where (a table made here, refused tables, defaults),
// what it never chooses (excluded, declared failing), what it declares, and that the chosen
// backend's result is what auto returns. (Every form and dtype against the reference is the
// cross-backend suite's, backends/tests, which runs auto like every registered backend.)
#include "mm/backends/auto/auto_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <omp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "mm/backends/backend_list.h"
#include "mm/backends/testing/matmul_tester.h"
#include "mm/engine/machine.h"
#include "mm/engine/testing/fake_backend.h"
#include "mm/engine/testing/scoped_env.h"
#include "mm/engine/testing/temp_dir.h"

namespace mm {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::MatMulTester;
using ::testing::Not;
using testing::TempDir;

void Write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

std::unique_ptr<AutoBackend> MakeAuto(const AutoOptions& options) {
  auto created = AutoBackend::Create(AutoCandidateBackends(), options);
  EXPECT_TRUE(created.ok()) << created.status();
  return std::unique_ptr<AutoBackend>(static_cast<AutoBackend*>(created->release()));
}

// A table made for this machine and these backends whose only float cell ranks `first` first.
std::string TableRanking(const std::string& first, const std::string& second) {
  AutoTable table;
  table.identity = CurrentAutoIdentity(AutoCandidateBackends());
  table.created = "2026-01-01T00:00:00Z";
  table.cells.push_back(
      {DType::kFloat, omp_get_max_threads(), {64, 64}, {64, 64}, {first, second}, {1e-5, 2e-5}});
  return table.ToJson().dump();
}

const MatMulDesc kFloat64Cube{DType::kFloat, {64, 64}, {64, 64}};

// auto's own tables live in ~/.cache/mm: what it says it runs on goes into every report, which
// must not carry the machine's home directory.
TEST(AutoBackendTest, NamesATableUnderTheHomeDirectoryFromTilde) {
  TempDir home;
  mm::testing::ScopedEnv home_env("HOME", home.path().string());
  const std::filesystem::path table = home.path() / ".cache" / "mm" / "auto.json";
  std::filesystem::create_directories(table.parent_path());
  Write(table, TableRanking("eigen", "reference"));
  AutoOptions options;
  options.table_path = table.string();
  auto backend = MakeAuto(options);
  ASSERT_TRUE(backend->UsesTable()) << backend->RunsOn();
  EXPECT_THAT(backend->RunsOn(), HasSubstr("calibration table ~/.cache/mm/auto.json ("));
  EXPECT_THAT(backend->RunsOn(), Not(HasSubstr(home.path().string())));
}

TEST(AutoBackendTest, FollowsTheRankingOfATableMadeHere) {
  TempDir dir;
  // Either order is followed: the choice is the table's, not a fixed preference.
  for (const auto& [first, second] : {std::pair{"reference", "eigen"}, {"eigen", "reference"}}) {
    Write(dir.path() / "auto.json", TableRanking(first, second));
    AutoOptions options;
    options.table_path = (dir.path() / "auto.json").string();
    auto backend = MakeAuto(options);
    ASSERT_TRUE(backend->UsesTable()) << backend->RunsOn();
    EXPECT_THAT(backend->RunsOn(), HasSubstr("calibration table " + options.table_path));
    auto choice = backend->Choose(kFloat64Cube, omp_get_max_threads());
    ASSERT_TRUE(choice.ok());
    EXPECT_EQ(choice->backend, first);
    EXPECT_THAT(choice->source, HasSubstr("table cell float"));
    // The nearest cell decides a shape that was not measured too.
    EXPECT_EQ(backend->Choose({DType::kFloat, {300, 70}, {70, 90}}, 1)->backend, first);
    auto plan = PlanMatMul(kFloat64Cube).value();
    auto primitive = backend->Prepare(plan);
    ASSERT_TRUE(primitive.ok()) << primitive.status();
    EXPECT_THAT((*primitive)->implementation(), HasSubstr(std::string("auto -> ") + first));
  }
}

// The quick table measures int32 only; the other integer types run through the same 64-bit
// products, so int32's cells choose for them, and say so. A float dtype without cells does not
// borrow another's.
TEST(AutoBackendTest, IntegerTypesWithoutCellsFollowInt32sCellsAndSaySo) {
  TempDir dir;
  for (const auto& [first, second] : {std::pair{"reference", "eigen"}, {"eigen", "reference"}}) {
    AutoTable table;
    table.identity = CurrentAutoIdentity(AutoCandidateBackends());
    table.created = "2026-01-01T00:00:00Z";
    table.cells.push_back(
        {DType::kInt32, omp_get_max_threads(), {64, 64}, {64, 64}, {first, second}, {1e-5, 2e-5}});
    Write(dir.path() / "auto.json", table.ToJson().dump());
    AutoOptions options;
    options.table_path = (dir.path() / "auto.json").string();
    auto backend = MakeAuto(options);
    ASSERT_TRUE(backend->UsesTable()) << backend->RunsOn();
    for (DType dtype : {DType::kInt64, DType::kUInt32, DType::kUInt64}) {
      auto choice = backend->Choose({dtype, {64, 64}, {64, 64}}, omp_get_max_threads());
      ASSERT_TRUE(choice.ok()) << choice.status();
      EXPECT_EQ(choice->backend, first) << DTypeName(dtype);
      EXPECT_THAT(choice->source, HasSubstr("table cell int32"));
      EXPECT_THAT(choice->source, HasSubstr("(for " + std::string(DTypeName(dtype)) + ")"));
    }
    auto own = backend->Choose({DType::kInt32, {64, 64}, {64, 64}}, omp_get_max_threads());
    ASSERT_TRUE(own.ok());
    EXPECT_THAT(own->source, Not(HasSubstr("(for")));
    auto half = backend->Choose({DType::kFloat16, {64, 64}, {64, 64}}, omp_get_max_threads());
    ASSERT_TRUE(half.ok());
    EXPECT_EQ(half->source, "built-in defaults");
  }
}

TEST(AutoBackendTest, TheChosenBackendComputesTheResult) {
  // Through the prepared primitive (checked once, then the inner Run): every element against the
  // reference, for a form with a batch and for a dtype computed by conversion.
  auto backend = MakeAuto(AutoOptions{});
  for (DType dtype : {DType::kFloat, DType::kBFloat16, DType::kInt32, DType::kDouble}) {
    MatMulTester().a_dims({3, 5, 7}).b_dims({7, 4}).dtype(dtype).iterations(2).Test(*backend);
  }
}

TEST(AutoBackendTest, AnExcludedBackendIsNeverChosen) {
  TempDir dir;
  Write(dir.path() / "auto.json", TableRanking("eigen", "reference"));
  AutoOptions options;
  options.table_path = (dir.path() / "auto.json").string();
  options.exclude = {"eigen"};
  auto backend = MakeAuto(options);
  EXPECT_THAT(backend->RunsOn(), HasSubstr("eigen: excluded"));
  for (DType dtype : kAllDTypes) {
    for (const MatMulDesc& desc :
         {MatMulDesc{dtype, {3, 4}, {4, 3}}, MatMulDesc{dtype, {512, 512}, {512, 512}}}) {
      auto choice = backend->Choose(desc, 1);
      ASSERT_TRUE(choice.ok()) << desc.ToString();  // reference computes every dtype.
      EXPECT_NE(choice->backend, "eigen") << desc.ToString();
    }
  }
}

TEST(AutoBackendTest, ExcludingAnUnknownBackendIsAnError) {
  AutoOptions options;
  options.exclude = {"eigne"};
  auto created = AutoBackend::Create(AutoCandidateBackends(), options);
  ASSERT_FALSE(created.ok());
  EXPECT_THAT(created.status().message(), HasSubstr("eigne"));
}

TEST(AutoBackendTest, ABackendDeclaredDeviatingForADtypeIsNotChosenForIt) {
  AutoOptions options;
  options.deviations = {{"eigen", {DType::kFloat16}, "declared XFAIL in e.json (a deviation)"}};
  auto backend = MakeAuto(options);
  EXPECT_THAT(backend->RunsOn(), HasSubstr("eigen for float16: declared XFAIL in e.json"));
  EXPECT_NE(backend->Choose({DType::kFloat16, {64, 64}, {64, 64}}, 1)->backend, "eigen");
  // Other dtypes still have eigen (the only non-reference integer backend).
  EXPECT_EQ(backend->Choose({DType::kInt32, {64, 64}, {64, 64}}, 1)->backend, "eigen");
}

TEST(AutoBackendTest, ADeviationNamingNoDtypeConcernsEveryDtypeAndPatternsAreGlobs) {
  AutoOptions options;
  options.deviations = {{"eig*", {}, "declared SKIP in e.json (crashes)"}};
  auto backend = MakeAuto(options);
  for (DType dtype : kAllDTypes) {
    EXPECT_NE(backend->Choose({dtype, {64, 64}, {64, 64}}, 1)->backend, "eigen")
        << DTypeName(dtype);
  }
}

// How a tool passes its --expectations to the autos the registry creates: through FromEnvironment,
// while the scope lives.
TEST(AutoBackendTest, ScopedDeviationsReachEveryAutoTheRegistryCreatesWhileTheyLive) {
  const MatMulDesc int32_desc{DType::kInt32, {64, 64}, {64, 64}};
  setenv("MM_AUTO_TABLE", "", 1);  // The built-in defaults, whatever this machine has calibrated.
  const auto chosen = [&] {
    auto created = BuiltinBackends().Create("auto");
    EXPECT_TRUE(created.ok()) << created.status();
    return static_cast<AutoBackend&>(**created).Choose(int32_desc, 1)->backend;
  };
  EXPECT_EQ(chosen(), "eigen");
  {
    ScopedAutoDeviations scope({{"eigen", {DType::kInt32}, "declared XFAIL in e.json (x)"}});
    EXPECT_EQ(AutoOptions::FromEnvironment().deviations.size(), 1u);
    EXPECT_NE(chosen(), "eigen");
  }
  EXPECT_TRUE(AutoOptions::FromEnvironment().deviations.empty());
  EXPECT_EQ(chosen(), "eigen");
  unsetenv("MM_AUTO_TABLE");
}

struct Refused {
  const char* why;
  std::string (*make)();
  const char* message;
};

std::string OtherMachine() {
  auto j = nlohmann::json::parse(TableRanking("reference", "eigen"));
  j["machine"]["cpu_model"] = "Another CPU";
  return j.dump();
}
std::string OtherVersion() {
  auto j = nlohmann::json::parse(TableRanking("reference", "eigen"));
  j["machine"]["mm_version"] = "0.0.1";
  return j.dump();
}
std::string OtherWaitPolicy() {
  auto j = nlohmann::json::parse(TableRanking("reference", "eigen"));
  j["machine"]["omp_wait_policy"] = "another policy";
  return j.dump();
}
std::string OtherBackendSet() {
  auto j = nlohmann::json::parse(TableRanking("reference", "eigen"));
  j["machine"]["backends"]["mkl"] = "a backend this build does not have";
  return j.dump();
}
std::string OtherBackendVersion() {
  auto j = nlohmann::json::parse(TableRanking("reference", "eigen"));
  j["machine"]["backends"]["eigen"] = "Eigen 9.9";
  return j.dump();
}
std::string NotJson() { return "{\"format\": \"mm-auto-table 1\", "; }
std::string EmptyRanking() {
  auto j = nlohmann::json::parse(TableRanking("reference", "eigen"));
  j["cells"][0]["ranking"] = nlohmann::json::array();
  j["cells"][0].erase("seconds");
  return j.dump();
}
std::string UnknownBackendRanked() {
  auto j = nlohmann::json::parse(TableRanking("reference", "eigen"));
  j["cells"][0]["ranking"][0] = "mkl";
  return j.dump();
}
// A number where a string belongs used to throw nlohmann's type_error out of mm-conformance,
// mm-fuzz and mm-bench.
std::string NumberForAString() {
  auto j = nlohmann::json::parse(TableRanking("reference", "eigen"));
  j["cells"][0]["ranking"][1] = 7;
  return j.dump();
}
std::string MachineFieldMistyped() {
  auto j = nlohmann::json::parse(TableRanking("reference", "eigen"));
  j["machine"]["cpu_model"] = 7;
  return j.dump();
}
std::string FormatMistyped() {
  auto j = nlohmann::json::parse(TableRanking("reference", "eigen"));
  j["format"] = 1;
  return j.dump();
}
std::string NegativeDim() {
  auto j = nlohmann::json::parse(TableRanking("reference", "eigen"));
  j["cells"][0]["a"][0] = -64;
  return j.dump();
}
std::string DeeplyNested() { return std::string(100000, '[') + std::string(100000, ']'); }
std::string BadShape() {
  auto j = nlohmann::json::parse(TableRanking("reference", "eigen"));
  j["cells"][0]["b"] = {65, 64};
  return j.dump();
}

TEST(AutoBackendTest, ATableFromElsewhereOrMalformedIsRefusedSayingWhy) {
  const Refused kRefused[] = {
      {"another machine", OtherMachine, "cpu_model: the table has \"Another CPU\""},
      {"another mm version", OtherVersion, "mm_version: the table has \"0.0.1\""},
      {"another wait policy", OtherWaitPolicy,
       "omp_wait_policy (OMP_WAIT_POLICY): the table has \"another policy\""},
      {"another backend set", OtherBackendSet, "this run not"},
      {"another library version", OtherBackendVersion, "backends.eigen"},
      {"not JSON", NotJson, "not valid JSON"},
      {"an empty ranking", EmptyRanking, "empty ranking"},
      {"a backend auto does not have", UnknownBackendRanked, "mkl"},
      {"a cell that is not a MatMul", BadShape, "is not a MatMul"},
      {"a number for a backend name", NumberForAString,
       "cells[0].ranking[1]: expected a string, found a number"},
      {"a number for the CPU model", MachineFieldMistyped,
       "machine.cpu_model: expected a string, found a number"},
      {"a number for the format", FormatMistyped, "not an auto calibration table"},
      {"a negative dim", NegativeDim,
       "cells[0].a[0]: expected an integer in [0, 9223372036854775807], found -64"},
      {"nesting 100000 deep", DeeplyNested, "JSON nested deeper than 64 levels at byte 64"},
  };
  TempDir dir;
  for (const Refused& r : kRefused) {
    SCOPED_TRACE(r.why);
    Write(dir.path() / "auto.json", r.make());
    AutoOptions options;
    options.table_path = (dir.path() / "auto.json").string();
    auto backend = MakeAuto(options);
    EXPECT_FALSE(backend->UsesTable());
    EXPECT_THAT(backend->RunsOn(), HasSubstr("built-in defaults (calibration table refused"));
    EXPECT_THAT(backend->RunsOn(), HasSubstr(r.message));
    EXPECT_EQ(backend->Choose(kFloat64Cube, 1)->source, "built-in defaults");
  }
}

// A table of `cells` cells, each a float 64^3 cell ranking the reference.
std::string TableOfCells(std::size_t cells) {
  nlohmann::json j = nlohmann::json::parse(TableRanking("reference", "eigen"));
  const nlohmann::json cell = j["cells"][0];
  j["cells"] = nlohmann::json::array();
  for (std::size_t i = 0; i < cells; ++i) j["cells"].push_back(cell);
  return j.dump();
}

// Every Prepare searches the cells one by one: a table of more cells than kMaxAutoTableCells
// (ten times what a full calibration writes) is refused, naming its count and the cap.
TEST(AutoBackendTest, ATableOverTheCellCapIsRefusedNamingItsCountAndTheCap) {
  const AutoIdentity here = CurrentAutoIdentity(AutoCandidateBackends());
  const auto at_cap = ParseAutoTable(TableOfCells(kMaxAutoTableCells), "t.json", here);
  ASSERT_TRUE(at_cap.ok()) << at_cap.status();
  EXPECT_EQ(at_cap->cells.size(), kMaxAutoTableCells);
  const auto over = ParseAutoTable(TableOfCells(kMaxAutoTableCells + 1), "t.json", here);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(over.status().message(),
              HasSubstr("t.json: holds 4097 cells, over the cap of 4096 (a full calibration "
                        "writes at most 620)"));
}

// The table is read by the rule for every file: a FIFO, a device or a directory is refused at
// once (a FIFO used to block auto's creation for ever, /dev/zero to read until memory ran out).
TEST(AutoBackendTest, ATableThatIsNotARegularFileIsRefusedAtOnce) {
  TempDir dir;
  const std::string fifo = (dir.path() / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const auto& [path, what] : std::vector<std::pair<std::string, std::string>>{
           {fifo, "a FIFO (named pipe), not a regular file"},
           {"/dev/zero", "a character device, not a regular file"},
           {dir.path().string(), "a directory, not a regular file"}}) {
    SCOPED_TRACE(path);
    AutoOptions options;
    options.table_path = path;
    const auto start = std::chrono::steady_clock::now();
    auto backend = MakeAuto(options);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    EXPECT_FALSE(backend->UsesTable());
    EXPECT_THAT(backend->RunsOn(),
                HasSubstr("built-in defaults (calibration table refused: calibration table '" +
                          path + "': " + what));
  }
}

TEST(AutoBackendTest, NoTableMeansTheDefaultsAndSaysWhere) {
  AutoOptions options;
  options.table_path = "/nonexistent/auto.json";
  auto backend = MakeAuto(options);
  EXPECT_THAT(backend->RunsOn(), HasSubstr("no calibration table at /nonexistent/auto.json"));
  EXPECT_THAT(backend->RunsOn(), HasSubstr("mm-bench --mm_calibrate="));
}

constexpr double kFlops256 = 2.0 * 256 * 256 * 256;
const AutoDefaultsBasis kBothAvx512{.onednn_avx512 = true, .eigen_avx512 = true};
const AutoDefaultsBasis kNoAvx512{.onednn_avx512 = false, .eigen_avx512 = false};
const AutoDefaultsBasis kOneDnnAvx512{.onednn_avx512 = true, .eigen_avx512 = false};

// Where oneDNN and Eigen have AVX-512 they go first for float and double: Debian's OpenBLAS and
// BLIS run AVX2 or generic kernels on CPUs newer than they know. On an AVX2 machine OpenBLAS goes
// first.
TEST(AutoDefaultsTest, RankOneDnnAndEigenFirstWhereTheyHaveAvx512AndOpenBlasWhereNot) {
  auto first_two = [](DType dtype, const AutoDefaultsBasis& basis) {
    const std::vector<std::string> ranking = DefaultAutoRanking(dtype, 1, kFlops256, basis);
    return std::vector<std::string>(ranking.begin(), ranking.begin() + 2);
  };
  EXPECT_EQ(first_two(DType::kFloat, kBothAvx512), (std::vector<std::string>{"onednn", "eigen"}));
  EXPECT_EQ(first_two(DType::kDouble, kBothAvx512),
            (std::vector<std::string>{"eigen", "openblas"}));
  EXPECT_EQ(first_two(DType::kFloat, kNoAvx512), (std::vector<std::string>{"openblas", "onednn"}));
  EXPECT_EQ(first_two(DType::kDouble, kNoAvx512), (std::vector<std::string>{"openblas", "eigen"}));
  // oneDNN capped below AVX-512 (ONEDNN_MAX_CPU_ISA=AVX2) on such a CPU, or eigen's kernels capped
  // below it (MM_MAX_CPU_ISA=avx2): each loses its place, the other keeps its own.
  EXPECT_EQ(first_two(DType::kFloat, kOneDnnAvx512),
            (std::vector<std::string>{"onednn", "openblas"}));
  EXPECT_EQ(first_two(DType::kDouble, kOneDnnAvx512),
            (std::vector<std::string>{"openblas", "eigen"}));
}

TEST(AutoDefaultsTest, TheCpuDoesNotChangeTinyHalfOrIntegerRankings) {
  for (const AutoDefaultsBasis& basis : {kBothAvx512, kNoAvx512, kOneDnnAvx512}) {
    SCOPED_TRACE(basis.ToString());
    // 3x4x3: the lowest per-call cost.
    EXPECT_EQ(DefaultAutoRanking(DType::kFloat, 1, 2.0 * 3 * 4 * 3, basis)[0], "eigen");
    EXPECT_EQ(DefaultAutoRanking(DType::kDouble, 2, 2.0 * 3 * 4 * 3, basis)[0], "eigen");
    EXPECT_EQ(DefaultAutoRanking(DType::kBFloat16, 1, kFlops256, basis)[0], "onednn");
    EXPECT_EQ(DefaultAutoRanking(DType::kFloat16, 1, kFlops256, basis)[0], "onednn");
    EXPECT_EQ(DefaultAutoRanking(DType::kInt32, 1, kFlops256, basis)[0], "eigen");
    for (DType dtype : kAllDTypes) {
      const std::vector<std::string> ranking = DefaultAutoRanking(dtype, 1, kFlops256, basis);
      EXPECT_EQ(std::set<std::string>(ranking.begin(), ranking.end()).size(), ranking.size())
          << DTypeName(dtype) << ": a backend named twice";
    }
  }
}

// Sets ONEDNN_MAX_CPU_ISA (unset for nullptr) for one scope, restoring it after.
class ScopedOneDnnCap {
 public:
  explicit ScopedOneDnnCap(const char* value) {
    if (const char* old = std::getenv("ONEDNN_MAX_CPU_ISA")) saved_ = old;
    if (value == nullptr) {
      unsetenv("ONEDNN_MAX_CPU_ISA");
    } else {
      setenv("ONEDNN_MAX_CPU_ISA", value, 1);
    }
  }
  ~ScopedOneDnnCap() {
    if (saved_) {
      setenv("ONEDNN_MAX_CPU_ISA", saved_->c_str(), 1);
    } else {
      unsetenv("ONEDNN_MAX_CPU_ISA");
    }
  }

 private:
  std::optional<std::string> saved_;
};

TEST(AutoDefaultsTest, ThisMachinesBasisIsItsCpuAndOneDnnsCap) {
  const std::string features = " " + DescribeMachine().cpu_features + " ";
  const bool avx512f = features.find(" avx512f ") != std::string::npos;
  const bool eigen_avx512 = ChosenCpuIsa().ok() && *ChosenCpuIsa() == CpuIsa::kAvx512;
  SCOPED_TRACE("CPU features: " + features + "; mm kernels " + DescribeChosenCpuIsa());
  {
    const ScopedOneDnnCap uncapped(nullptr);
    const AutoDefaultsBasis basis = AutoDefaultsBasis::OfThisMachine();
    EXPECT_EQ(basis.onednn_avx512, avx512f);
    EXPECT_EQ(basis.eigen_avx512, avx512f && eigen_avx512);
  }
  {
    const ScopedOneDnnCap avx2("AVX2");
    const AutoDefaultsBasis basis = AutoDefaultsBasis::OfThisMachine();
    EXPECT_FALSE(basis.onednn_avx512);
    // Eigen's kernels follow MM_MAX_CPU_ISA, not oneDNN's cap.
    EXPECT_EQ(basis.eigen_avx512, avx512f && eigen_avx512);
  }
  {
    const ScopedOneDnnCap avx512("avx512_core");  // oneDNN reads the cap in any case.
    EXPECT_EQ(AutoDefaultsBasis::OfThisMachine().onednn_avx512, avx512f);
  }
}

TEST(AutoBackendTest, WithoutATableFollowsTheDefaultsOfTheBasisAndSaysWhich) {
  for (const auto& [basis, expected] :
       {std::pair{kBothAvx512, "onednn"}, {kNoAvx512, "openblas"}}) {
    AutoOptions options;
    options.table_path = "/nonexistent/auto.json";
    options.defaults_basis = basis;
    auto backend = MakeAuto(options);
    ASSERT_THAT(backend->RunsOn(), HasSubstr(" openblas")) << "openblas must be a candidate here";
    EXPECT_THAT(backend->RunsOn(),
                HasSubstr("last resort, built-in defaults (not measured here) ranked for " +
                          basis.ToString()));
    auto choice = backend->Choose({DType::kFloat, {256, 256}, {256, 256}}, 1);
    ASSERT_TRUE(choice.ok()) << choice.status();
    EXPECT_EQ(choice->backend, expected) << basis.ToString();
    EXPECT_EQ(choice->source, "built-in defaults");
  }
}

TEST(AutoBackendTest, DeclaresTheLoosestArithmeticOfItsCandidates) {
  auto all = MakeAuto(AutoOptions{});
  const BackendRegistry candidates = AutoCandidateBackends();
  for (DType dtype : kAllDTypes) {
    const Arithmetic declared = all->DeclaredArithmetic(dtype);
    bool any_flushes = false;
    // No candidate that computes this dtype promises more than auto declares.
    for (const std::string& name : candidates.Names()) {
      auto backend = candidates.Create(name);
      if (!backend.ok() || !(*backend)->Supports({dtype, {2, 2}, {2, 2}}).supported()) continue;
      const Arithmetic theirs = (*backend)->DeclaredArithmetic(dtype);
      any_flushes |= theirs.flushes_subnormals;
      if (theirs.flushes_subnormals) {
        EXPECT_TRUE(declared.flushes_subnormals) << name;
      }
      if (IsFloat(dtype)) {
        EXPECT_LE(DTypeSize(declared.accumulation), DTypeSize(theirs.accumulation)) << name;
      }
    }
    // ... and flushes only where one of them does.
    EXPECT_EQ(declared.flushes_subnormals, any_flushes) << DTypeName(dtype);
  }
  // Without the candidates that flush (oneDNN's native bfloat16), auto does not declare a flush.
  AutoOptions options;
  options.exclude = {"onednn"};
  EXPECT_FALSE(MakeAuto(options)->DeclaredArithmetic(DType::kBFloat16).flushes_subnormals);
}

TEST(AutoBackendTest, EnvironmentSetsTheOptions) {
  setenv("MM_AUTO_EXCLUDE", "onednn, eigen", 1);
  setenv("MM_AUTO_TABLE", "/some/table.json", 1);
  const AutoOptions options = AutoOptions::FromEnvironment();
  unsetenv("MM_AUTO_EXCLUDE");
  unsetenv("MM_AUTO_TABLE");
  EXPECT_EQ(options.exclude, (std::vector<std::string>{"onednn", "eigen"}));
  EXPECT_EQ(options.table_path, "/some/table.json");
  // MM_AUTO_TABLE points at a table: it is used as it is, never made.
  EXPECT_FALSE(options.calibrate);
  setenv("XDG_CACHE_HOME", "/cache", 1);
  EXPECT_EQ(AutoOptions::FromEnvironment().table_path,
            "/cache/mm/auto-" + AutoTableKey() + ".json");
  setenv("MM_AUTO_CALIBRATE", "on", 1);
  EXPECT_TRUE(AutoOptions::FromEnvironment().calibrate);
  setenv("MM_AUTO_CALIBRATE", "0", 1);
  EXPECT_FALSE(AutoOptions::FromEnvironment().calibrate);
  setenv("MM_AUTO_CALIBRATE", "sometimes", 1);
  const AutoOptions bad = AutoOptions::FromEnvironment();
  unsetenv("MM_AUTO_CALIBRATE");
  unsetenv("XDG_CACHE_HOME");
  auto created = AutoBackend::Create(AutoCandidateBackends(), bad);
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(created.status().message(), HasSubstr("MM_AUTO_CALIBRATE is \"sometimes\""));
}

// Tests run by ctest never calibrate unless they ask to (MM_AUTO_CALIBRATE=1).
TEST(AutoBackendTest, UnderCtestNoFirstUseCalibrationByDefault) {
  const char* under_ctest = std::getenv("CTEST_INTERACTIVE_DEBUG_MODE");
  const std::string saved = under_ctest != nullptr ? under_ctest : "";
  setenv("CTEST_INTERACTIVE_DEBUG_MODE", "1", 1);
  EXPECT_FALSE(AutoOptions::FromEnvironment().calibrate);
  unsetenv("CTEST_INTERACTIVE_DEBUG_MODE");
  EXPECT_TRUE(AutoOptions::FromEnvironment().calibrate);
  if (under_ctest != nullptr) setenv("CTEST_INTERACTIVE_DEBUG_MODE", saved.c_str(), 1);
}

// The cached table's name changes with what the choice depends on, so a changed machine or
// environment finds no table of its own and makes one.
TEST(AutoBackendTest, TheCachedTableIsKeyedByWaitPolicyAndThreads) {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const std::string saved = policy != nullptr ? policy : "";
  const std::string key = AutoTableKey();
  setenv("OMP_WAIT_POLICY", saved == "active" ? "passive" : "active", 1);
  EXPECT_NE(AutoTableKey(), key);
  EXPECT_NE(CurrentAutoIdentity(AutoCandidateBackends()).omp_wait_policy,
            saved.empty() ? "unset" : saved);
  if (policy != nullptr) {
    setenv("OMP_WAIT_POLICY", saved.c_str(), 1);
  } else {
    unsetenv("OMP_WAIT_POLICY");
  }
  EXPECT_EQ(AutoTableKey(), key);
  // The environment's thread count, not the one the process sets for a while (mm-fuzz's 1-thread
  // reruns keep the table of their environment).
  const int threads = omp_get_max_threads();
  omp_set_num_threads(threads + 1);
  EXPECT_EQ(AutoTableKey(), key);
  omp_set_num_threads(threads);
  const char* env_threads = std::getenv("OMP_NUM_THREADS");
  const std::string saved_threads = env_threads != nullptr ? env_threads : "";
  setenv("OMP_NUM_THREADS", "7", 1);
  EXPECT_NE(AutoTableKey(), key);
  EXPECT_EQ(CurrentAutoIdentity(AutoCandidateBackends()).threads, 7);
  if (env_threads != nullptr) {
    setenv("OMP_NUM_THREADS", saved_threads.c_str(), 1);
  } else {
    unsetenv("OMP_NUM_THREADS");
  }
  EXPECT_EQ(AutoTableKey(), key);
}

// A calibrator that counts its runs in `dir`/runs and writes `table` where it is told, after a
// pause (so that concurrent first uses overlap).
std::string FakeCalibrator(const TempDir& dir, const std::string& table) {
  Write(dir.path() / "made.json", table);
  const fs::path script = dir.path() / "calibrate.sh";
  Write(script, "#!/bin/sh\necho run >> '" + (dir.path() / "runs").string() +
                    "'\nsleep 0.3\npath=${1#--mm_calibrate=}\ncp '" +
                    (dir.path() / "made.json").string() +
                    "' \"$path.new\" && mv \"$path.new\" \"$path\"\n");
  fs::permissions(script, fs::perms::owner_all);
  return script.string();
}

int Runs(const TempDir& dir) {
  std::ifstream in(dir.path() / "runs");
  int runs = 0;
  for (std::string line; std::getline(in, line);) ++runs;
  return runs;
}

AutoOptions Calibrating(const TempDir& dir, const std::string& calibrator) {
  AutoOptions options;
  options.table_path = (dir.path() / "cache" / "auto.json").string();
  options.calibrate = true;
  options.calibrator = calibrator;
  return options;
}

TEST(AutoCalibrationTest, FirstUseCalibratesOnceThenUsesTheCachedTable) {
  TempDir dir;
  const AutoOptions options =
      Calibrating(dir, FakeCalibrator(dir, TableRanking("reference", "eigen")));
  ::testing::internal::CaptureStderr();
  auto first = MakeAuto(options);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("no calibration table yet"));
  EXPECT_TRUE(first->UsesTable());
  EXPECT_THAT(first->RunsOn(), HasSubstr("on first use"));
  EXPECT_EQ(first->Choose(kFloat64Cube, omp_get_max_threads())->backend, "reference");
  EXPECT_TRUE(MakeAuto(options)->UsesTable());
  EXPECT_EQ(Runs(dir), 1);
}

TEST(AutoCalibrationTest, ATableOfAnotherIdentityOrMalformedIsMadeAgainWithAWarning) {
  for (auto make : {OtherVersion, OtherWaitPolicy, OtherBackendVersion, NotJson, EmptyRanking}) {
    TempDir dir;
    const AutoOptions options =
        Calibrating(dir, FakeCalibrator(dir, TableRanking("reference", "eigen")));
    fs::create_directories(dir.path() / "cache");
    Write(options.table_path, make());
    ::testing::internal::CaptureStderr();
    auto backend = MakeAuto(options);
    EXPECT_THAT(::testing::internal::GetCapturedStderr(),
                HasSubstr("warning: calibration table refused"));
    EXPECT_TRUE(backend->UsesTable());
    EXPECT_EQ(Runs(dir), 1);
  }
}

TEST(AutoCalibrationTest, AFailedCalibrationMeansTheDefaultsWithAWarning) {
  TempDir dir;
  for (const std::string calibrator : {"/bin/false", "/nonexistent/mm-bench"}) {
    SCOPED_TRACE(calibrator);
    ::testing::internal::CaptureStderr();
    auto backend = MakeAuto(Calibrating(dir, calibrator));
    EXPECT_THAT(::testing::internal::GetCapturedStderr(),
                HasSubstr("warning: calibration failed, using the built-in defaults"));
    EXPECT_FALSE(backend->UsesTable());
    EXPECT_THAT(backend->RunsOn(), HasSubstr("first-use calibration failed: " + calibrator));
  }
}

// The autos the calibrator creates (mm-bench's) must not calibrate in turn: they would wait for
// the lock this process holds. Whatever this process's MM_AUTO_CALIBRATE, the calibrator gets 0.
TEST(AutoCalibrationTest, TheCalibratorRunsWithFirstUseCalibrationOff) {
  TempDir dir;
  const std::string calibrator = FakeCalibrator(dir, TableRanking("reference", "eigen"));
  const fs::path recorder = dir.path() / "record.sh";
  Write(recorder, "#!/bin/sh\necho \"MM_AUTO_CALIBRATE=${MM_AUTO_CALIBRATE-unset}\" > '" +
                      (dir.path() / "environment").string() + "'\nexec '" + calibrator +
                      "' \"$@\"\n");
  fs::permissions(recorder, fs::perms::owner_all);
  const mm::testing::ScopedEnv calibrate("MM_AUTO_CALIBRATE", "1");
  ::testing::internal::CaptureStderr();
  auto backend = MakeAuto(Calibrating(dir, recorder.string()));
  ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(backend->UsesTable());
  std::ifstream recorded(dir.path() / "environment");
  std::string line;
  std::getline(recorded, line);
  EXPECT_EQ(line, "MM_AUTO_CALIBRATE=0");
}

// Concurrent first uses (the workers of one run) calibrate once: the others wait for the lock
// and read the table made meanwhile.
TEST(AutoCalibrationTest, ConcurrentFirstUsesCalibrateOnce) {
  TempDir dir;
  BackendRegistry candidates;
  ASSERT_TRUE(candidates
                  .Register("reference", "the reference",
                            [] { return AutoCandidateBackends().Create("reference"); })
                  .ok());
  AutoTable table;
  table.identity = CurrentAutoIdentity(candidates);
  table.cells.push_back({DType::kFloat, 1, {64, 64}, {64, 64}, {"reference"}, {}});
  const AutoOptions options = Calibrating(dir, FakeCalibrator(dir, table.ToJson().dump()));
  std::vector<std::thread> users;
  std::atomic<int> with_table{0};
  ::testing::internal::CaptureStderr();
  for (int i = 0; i < 4; ++i) {
    users.emplace_back([&] {
      auto created = AutoBackend::Create(candidates, options);
      if (created.ok() && static_cast<AutoBackend&>(**created).UsesTable()) ++with_table;
    });
  }
  for (std::thread& t : users) t.join();
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(with_table, 4);
  EXPECT_EQ(Runs(dir), 1);
}

// A float backend that records the OpenMP thread count it is prepared and run with.
BackendFactory ThreadsSeen(std::shared_ptr<std::vector<int>> seen) {
  auto record = [seen] { seen->push_back(omp_get_max_threads()); };
  return testing::FakeBackend("threads_seen")
      .Supporting({DType::kFloat})
      .Describing("records")
      .WhenPrepared([record](const MatMulPlan&) { record(); })
      .Computing([record](const MatMulPlan&, TensorView, TensorView, MutableTensorView) {
        record();
        return OkStatus();
      })
      .Factory();
}

// A cell may rank a backend on fewer threads than given ("name@1"): auto prepares and runs it on
// that many, gives the caller's count back after each call, and says so in implementation().
TEST(AutoBackendTest, RunsABackendOnFewerThreadsWhenTheTableSaysAndSaysSo) {
  const int given = omp_get_max_threads();
  omp_set_num_threads(2);
  auto seen = std::make_shared<std::vector<int>>();
  BackendRegistry candidates;
  ASSERT_TRUE(candidates.Register("threads_seen", "records its threads", ThreadsSeen(seen)).ok());
  AutoTable table;
  table.identity = CurrentAutoIdentity(candidates);
  table.cells.push_back({DType::kFloat, 2, {64, 64}, {64, 64}, {"threads_seen@1"}, {}});
  TempDir dir;
  Write(dir.path() / "auto.json", table.ToJson().dump());
  AutoOptions options;
  options.table_path = (dir.path() / "auto.json").string();
  auto created = AutoBackend::Create(candidates, options);
  ASSERT_TRUE(created.ok()) << created.status();
  auto primitive = (*created)->Prepare(PlanMatMul(kFloat64Cube).value());
  ASSERT_TRUE(primitive.ok()) << primitive.status();
  EXPECT_EQ((*primitive)->implementation(), "auto -> threads_seen (1 of 2 threads): records");
  Tensor a = Tensor::Create(DType::kFloat, {64, 64}).value();
  Tensor y = Tensor::Create(DType::kFloat, {64, 64}).value();
  ASSERT_TRUE((*primitive)->Execute(a.view(), a.view(), y.mutable_view()).ok());
  EXPECT_EQ(*seen, (std::vector<int>{1, 1}));  // Prepared and run on 1 thread.
  EXPECT_EQ(omp_get_max_threads(), 2);
  // Given 1 thread, the same cell's entry runs on the thread given, and says nothing of threads.
  omp_set_num_threads(1);
  auto alone = (*created)->Prepare(PlanMatMul(kFloat64Cube).value());
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ((*alone)->implementation(), "auto -> threads_seen: records");
  omp_set_num_threads(given);
}

TEST(AutoBackendTest, ATableRankingAsManyThreadsAsItsCellOrAMalformedCountIsRefused) {
  for (const std::string entry : {"eigen@2", "eigen@0", "eigen@x", "mkl@1"}) {
    SCOPED_TRACE(entry);
    AutoTable table;
    table.identity = CurrentAutoIdentity(AutoCandidateBackends());
    table.cells.push_back({DType::kFloat, 2, {64, 64}, {64, 64}, {entry}, {}});
    auto parsed = ParseAutoTable(table.ToJson().dump(), "t.json", table.identity);
    ASSERT_FALSE(parsed.ok());
    EXPECT_THAT(parsed.status().message(), HasSubstr("ranks " + entry));
  }
}

// The load a calibration was measured under travels with its table and is said where the choices
// are: a reader of RunsOn() learns that the rankings may be off.
TEST(AutoTableLoadTest, ALoadedTableSaysSoInRunsOnAndAQuietOneDoesNot) {
  AutoTable table;
  table.identity = CurrentAutoIdentity(AutoCandidateBackends());
  table.created = "2026-01-01T00:00:00Z";
  table.cells.push_back({DType::kFloat, 1, {64, 64}, {64, 64}, {"eigen"}, {}});
  table.load = {{1, 12.5, 0.05, 0.0}, {2, 20.0, 1.3, 0.4}};
  EXPECT_EQ(table.LoadWarning(),
            "measured under load: other processes used 1.30 cores and the hypervisor took 0.40 "
            "cores while the 2-thread cells were timed");
  auto parsed = ParseAutoTable(table.ToJson().dump(), "t.json", table.identity);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->load.size(), 2u);
  EXPECT_EQ(parsed->load[1].threads, 2);
  EXPECT_EQ(parsed->load[1].seconds, 20.0);
  EXPECT_EQ(parsed->load[1].other_cores, 1.3);
  EXPECT_EQ(parsed->load[1].steal_cores, 0.4);
  EXPECT_EQ(parsed->LoadWarning(), table.LoadWarning());

  TempDir dir;
  AutoOptions options;
  options.table_path = (dir.path() / "auto.json").string();
  Write(options.table_path, table.ToJson().dump());
  EXPECT_THAT(MakeAuto(options)->RunsOn(), HasSubstr("; measured under load: other processes"));
  table.load = {{1, 12.5, 0.05, 0.0}, {2, 20.0, 0.2, 0.1}};
  EXPECT_EQ(table.LoadWarning(), "");
  Write(options.table_path, table.ToJson().dump());
  EXPECT_THAT(MakeAuto(options)->RunsOn(), Not(HasSubstr("load")));
}

TEST(AutoTableLoadTest, ALoadThatIsNotACountOfCoresIsRefused) {
  AutoTable table;
  table.identity = CurrentAutoIdentity(AutoCandidateBackends());
  table.cells.push_back({DType::kFloat, 1, {64, 64}, {64, 64}, {"eigen"}, {}});
  for (const auto& [field, value] : {std::pair{"other_cores", nlohmann::json(-1.0)},
                                     {"seconds", nlohmann::json("long")},
                                     {"threads", nlohmann::json(0)}}) {
    SCOPED_TRACE(field);
    nlohmann::json j = table.ToJson();
    j["load"] = {{{"threads", 1}, {"seconds", 1.0}, {"other_cores", 0.0}, {"steal_cores", 0.0}}};
    j["load"][0][field] = value;
    auto parsed = ParseAutoTable(j.dump(), "t.json", table.identity);
    ASSERT_FALSE(parsed.ok());
    EXPECT_THAT(parsed.status().message(), HasSubstr(std::string("load[0].") + field));
  }
}

}  // namespace
}  // namespace mm
