// mm-fuzz --shard I/N and mm-fuzz merge: shards are disjoint and cover the campaign, and their
// merged report is the unsharded campaign's report; missing, repeated and foreign shards are
// refused by name.
#include "mm/conformance/fuzz/fuzz_merge.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "mm/backends/backend_list.h"
#include "mm/conformance/fuzz/fuzz_cli.h"
#include "mm/conformance/fuzz/fuzz_report_reader.h"
#include "mm/conformance/self_check/planted_backends.h"
#include "mm/conformance/testing/cli_runs.h"
#include "mm/engine/testing/temp_dir.h"

namespace mm::fuzz {
namespace {

namespace fs = std::filesystem;
using nlohmann::ordered_json;
using ::testing::HasSubstr;

class FuzzMergeTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) const { return (dir_.path() / name).string(); }

  int Fuzz(std::vector<std::string> args, const BackendRegistry& registry,
           std::string* out = nullptr, std::string* err = nullptr) {
    const mm::testing::CliRun run = mm::testing::FuzzCli(args, registry);
    if (out) *out = run.out;
    if (err) *err = run.err;
    return run.code;
  }

  static ordered_json Read(const std::string& path) {
    std::ifstream in(path);
    return ordered_json::parse(in);
  }

  // A report without what depends on the clock.
  static ordered_json Untimed(ordered_json j) {
    for (const char* key : {"seconds", "shrink_seconds", "problems_per_second"}) {
      j["stats"].erase(key);
    }
    return j;
  }

  // Runs `campaign` unsharded; returns its report without timings.
  ordered_json RunUnsharded(const std::vector<std::string>& campaign,
                            const BackendRegistry& registry, int* code) {
    std::vector<std::string> args = campaign;
    args.insert(args.end(), {"--quiet", "--json", Path("full.json")});
    *code = Fuzz(args, registry);
    return Untimed(Read(Path("full.json")));
  }

  // Runs `campaign` as `count` shards, which must hold `problems` problems between them (disjoint
  // and covering the campaign), merges them and returns the merged report without timings.
  ordered_json RunMerged(const std::vector<std::string>& campaign, int count,
                         const BackendRegistry& registry, std::int64_t problems, int* code) {
    std::vector<std::string> merge = {"merge", "--json", Path("merged.json")};
    std::int64_t sharded = 0;
    for (int i = 1; i <= count; ++i) {
      const std::string shard = std::to_string(i) + "/" + std::to_string(count);
      const std::string json = Path("shard" + std::to_string(i) + ".json");
      std::vector<std::string> args = campaign;
      args.insert(args.end(), {"--quiet", "--shard", shard, "--json", json});
      Fuzz(args, registry);
      sharded += Read(json)["stats"]["problems"].get<std::int64_t>();
      merge.push_back(json);
    }
    std::string out, err;
    *code = Fuzz(merge, registry, &out, &err);
    EXPECT_THAT(out, HasSubstr(std::to_string(count) + " shards merged")) << err;
    EXPECT_EQ(sharded, problems) << "shards are disjoint and cover the campaign";
    return Untimed(Read(Path("merged.json")));
  }

  // Runs `campaign` unsharded and as `count` shards, merges the shards, and returns both reports.
  std::pair<ordered_json, ordered_json> RunBoth(const std::vector<std::string>& campaign, int count,
                                                const BackendRegistry& registry,
                                                int* unsharded_code, int* merged_code) {
    ordered_json full = RunUnsharded(campaign, registry, unsharded_code);
    const std::int64_t problems = full["stats"]["problems"].get<std::int64_t>();
    return {std::move(full), RunMerged(campaign, count, registry, problems, merged_code)};
  }

  mm::testing::TempDir dir_;
};

// Every built-in backend, every dtype: counts, per-dtype problems, per-problem records and the
// percentiles computed from them are the unsharded run's, whatever the shard count (1 included).
TEST_F(FuzzMergeTest, MergedShardsAreTheUnshardedReport) {
  const std::vector<std::string> campaign = {"--seed", "3", "--cases", "240"};
  const BackendRegistry backends = BuiltinBackends();
  int full_code = -1;
  const ordered_json full = RunUnsharded(campaign, backends, &full_code);
  EXPECT_FALSE(full["statistics"].empty());
  const std::int64_t problems = full["stats"]["problems"].get<std::int64_t>();
  for (int count : {1, 3}) {
    int merged_code = -1;
    const ordered_json merged = RunMerged(campaign, count, backends, problems, &merged_code);
    EXPECT_EQ(merged, full) << "shards: " << count << "\nmerged:\n"
                            << merged.dump(1).substr(0, 3000) << "\nfull:\n"
                            << full.dump(1).substr(0, 3000);
    EXPECT_EQ(merged_code, full_code);
  }
}

// A family campaign (MatMulInteger's int8 and uint8 dtypes; Gemm's float results, which keep no
// accuracy records) merges to its unsharded report; a report written before --op reads as
// MatMul's and merges.
TEST_F(FuzzMergeTest, FamilyCampaignsMergeAndReportsWithoutOpReadAsMatMul) {
  const BackendRegistry backends = BuiltinBackends();
  for (const std::string op : {"MatMulInteger", "Gemm"}) {
    int full_code = -1, merged_code = -1;
    auto [full, merged] =
        RunBoth({"--op", op, "--backend", "reference", "--seed", "2", "--cases", "120"}, 3,
                backends, &full_code, &merged_code);
    EXPECT_EQ(full["options"]["op"], op);
    EXPECT_EQ(merged, full) << op;
    EXPECT_EQ(merged_code, full_code);
  }
  Fuzz({"--seed", "1", "--cases", "20", "--backend", "reference", "--quiet", "--shard", "1/1",
        "--json", Path("old.json")},
       backends);
  ordered_json old = Read(Path("old.json"));
  ASSERT_EQ(old["options"]["op"], "MatMul");
  old["options"].erase("op");
  std::ofstream(Path("old.json")) << old.dump(2);
  const auto read = ReadFuzzReport(Path("old.json"));
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  EXPECT_EQ(read->json["options"]["op"], "MatMul");
  std::string out, err;
  EXPECT_EQ(Fuzz({"merge", Path("old.json")}, backends, &out, &err), 0) << err;
  EXPECT_THAT(out, HasSubstr("1 shards merged: seed 1,"));
  EXPECT_EQ(Fuzz({"merge", Path("shard1.json"), Path("shard2.json"), Path("shard3.json")}, backends,
                 &out, &err),
            0)
      << err;
  EXPECT_THAT(out, HasSubstr("3 shards merged: Gemm, seed 2,"));
}

// Findings of a buggy backend: each shard keeps its first --max-findings, and the merge keeps the
// campaign's first ones, in problem order, with the unsharded exit code (1).
TEST_F(FuzzMergeTest, MergedFindingsAreTheCampaignsFirstOnes) {
  // The last term of a long K dropped.
  const self_check::PlantedBackend& bug =
      self_check::PlantedBackendOf(self_check::Fault::kDroppedTerm);
  int full_code = -1, merged_code = -1;
  auto [full, merged] =
      RunBoth({"--seed", "1", "--cases", "300", "--max-findings", "4", "--no-shrink"}, 4,
              self_check::PlantedRegistry(bug), &full_code, &merged_code);
  ASSERT_EQ(full["findings"].size(), 4u) << "the campaign finds more failures than it reports";
  EXPECT_GT(full["stats"]["failures"].get<int>(), 4);
  EXPECT_EQ(merged, full);
  EXPECT_EQ(full_code, kExitFailed);
  EXPECT_EQ(merged_code, kExitFailed);
}

TEST_F(FuzzMergeTest, RefusesMissingRepeatedAndForeignShards) {
  const std::vector<std::string> campaign = {"--seed",  "4",       "--cases", "30",
                                             "--quiet", "--dtype", "int32"};
  for (int i = 1; i <= 3; ++i) {
    std::vector<std::string> args = campaign;
    args.insert(args.end(), {"--shard", std::to_string(i) + "/3", "--json",
                             Path("s" + std::to_string(i) + ".json")});
    ASSERT_EQ(Fuzz(args, BuiltinBackends()), kExitClean);
  }
  std::vector<std::string> args = campaign;
  args.insert(args.end(), {"--seed", "5", "--shard", "3/3", "--json", Path("other.json")});
  ASSERT_EQ(Fuzz(args, BuiltinBackends()), kExitClean);
  args = campaign;
  args.insert(args.end(), {"--json", Path("unsharded.json")});
  ASSERT_EQ(Fuzz(args, BuiltinBackends()), kExitClean);

  struct Refusal {
    std::vector<std::string> reports;
    std::string message;
  };
  for (const Refusal& r : std::vector<Refusal>{
           {{"s1.json", "s2.json"}, "shard 3/3 is missing"},
           {{"s1.json", "s2.json", "s2.json", "s3.json"}, "shard 2/3 is given twice"},
           {{"s1.json", "s2.json", "other.json"}, "not from the same campaign"},
           {{"s1.json", "unsharded.json"}, "not a shard's report"},
           {{"s1.json", "absent.json"}, "absent.json': no such file"}}) {
    std::vector<std::string> merge = {"merge"};
    for (const auto& name : r.reports) merge.push_back(Path(name));
    std::string out, err;
    EXPECT_EQ(Fuzz(merge, BuiltinBackends(), &out, &err), kExitUsage) << r.message;
    EXPECT_THAT(err, HasSubstr(r.message));
  }
  std::string err;
  EXPECT_EQ(Fuzz({"--shard", "4/3"}, BuiltinBackends(), nullptr, &err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("is not a shard I/N"));
}

// mm-fuzz merge takes no count on trust: each shard's counts are checked against its own records
// and the shard it declares, and a shard that does not agree with itself refuses the merge,
// naming the report.
class FuzzMergeTrustTest : public FuzzMergeTest {
 protected:
  // Shards 1/2 and 2/2 of a clean float32 campaign on the reference backend.
  void RunShards() {
    for (int i = 1; i <= 2; ++i) {
      ASSERT_EQ(Fuzz({"--seed", "4", "--cases", "30", "--quiet", "--dtype", "float32", "--backend",
                      "reference", "--shard", std::to_string(i) + "/2", "--json",
                      Path("s" + std::to_string(i) + ".json")},
                     BuiltinBackends()),
                kExitClean);
    }
  }
  int Merge(std::string* err) {
    return Fuzz({"merge", "--quiet", Path("s1.json"), Path("s2.json")}, BuiltinBackends(), nullptr,
                err);
  }
  static void Write(const std::string& path, const ordered_json& j) {
    std::ofstream(path, std::ios::trunc) << j.dump(2);
  }
};

TEST_F(FuzzMergeTrustTest, AShardWhoseCountsSayFailNeverMergesToAPass) {
  RunShards();
  ordered_json s1 = Read(Path("s1.json"));
  // One PASS counted as a FAIL, everywhere but in "failures" and the exit code.
  ordered_json& counts = s1["stats"]["backends"]["reference"];
  ASSERT_GT(counts["PASS"].get<int>(), 0);
  counts["PASS"] = counts["PASS"].get<int>() - 1;
  counts["FAIL"] = counts["FAIL"].get<int>() + 1;
  ordered_json& by_dtype = s1["stats"]["by_dtype"]["reference"];
  ASSERT_EQ(by_dtype.size(), 1u) << by_dtype.dump();
  ordered_json& float32 = by_dtype.begin().value();
  float32["PASS"] = float32["PASS"].get<int>() - 1;
  float32["FAIL"] = float32.value("FAIL", 0) + 1;
  ASSERT_EQ(s1["stats"]["failures"], 0);
  ASSERT_EQ(s1["exit_code"], 0);
  Write(Path("s1.json"), s1);
  std::string err;
  EXPECT_EQ(Merge(&err), kExitUsage);
  EXPECT_THAT(err, HasSubstr(Path("s1.json") + " (shard 1/2): its counts disagree"));
  EXPECT_THAT(err, HasSubstr("\"failures\" is 0, the verdicts count 1 failing"));

  // "failures" made to agree, but no finding for it; then a finding, but exit code 0.
  s1["stats"]["failures"] = 1;
  Write(Path("s1.json"), s1);
  EXPECT_EQ(Merge(&err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("0 failing findings for 1 failing results"));
  s1["findings"].push_back({{"kind", "FAIL"},
                            {"expectation", ""},
                            {"backend", "reference"},
                            {"dtype", by_dtype.begin().key()},
                            {"index", 0},
                            {"replay", "mm-fuzz --seed 4 --index 0 --backend reference"}});
  Write(Path("s1.json"), s1);
  EXPECT_EQ(Merge(&err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("\"exit_code\" is 0"));
  // A report that agrees with itself and says FAIL merges into a failing campaign.
  s1["exit_code"] = 1;
  Write(Path("s1.json"), s1);
  EXPECT_EQ(Merge(&err), kExitFailed) << err;
}

TEST_F(FuzzMergeTrustTest, AProblemIndexOutsideTheShardIsRefused) {
  RunShards();
  ordered_json s1 = Read(Path("s1.json"));
  ASSERT_FALSE(s1["problems"].empty());
  ASSERT_EQ(s1["problems"][0]["index"], 0);
  s1["problems"][0]["index"] = 1;  // Problem 1 is shard 2/2's.
  Write(Path("s1.json"), s1);
  std::string err;
  EXPECT_EQ(Merge(&err), kExitUsage);
  EXPECT_THAT(err, HasSubstr("\"problems\" names problem 1, which is not one of shard 1/2's"));
}

// A merge input is read by the rule for every file and checked field by field before the merge
// uses it: a FIFO, a directory, a deeply nested file, a negative limit, a record of a backend the
// report does not have or a shard index past its count is a usage error naming the file and the
// field (these used to block, or end mm-fuzz with SIGABRT or SIGSEGV).
TEST_F(FuzzMergeTest, HostileInputsAreUsageErrorsNamingTheFieldAtOnce) {
  const std::vector<std::string> campaign = {
      "--seed", "4", "--cases", "12", "--quiet", "--dtype", "float32", "--backend", "reference"};
  for (int i = 1; i <= 2; ++i) {
    std::vector<std::string> args = campaign;
    args.insert(args.end(), {"--shard", std::to_string(i) + "/2", "--json",
                             Path("s" + std::to_string(i) + ".json")});
    ASSERT_EQ(Fuzz(args, BuiltinBackends()), kExitClean);
  }
  const ordered_json good = Read(Path("s1.json"));
  ASSERT_FALSE(good.at("problems").empty());
  auto edited = [&](const std::string& name, const std::function<void(ordered_json&)>& edit) {
    ordered_json j = good;
    edit(j);
    std::ofstream(Path(name)) << j.dump();
    return name;
  };
  ASSERT_EQ(::mkfifo(Path("fifo").c_str(), 0600), 0);
  std::ofstream(Path("deep.json")) << std::string(100000, '{') << std::string(100000, '}');
  struct Hostile {
    std::string file;
    std::string message;
  };
  const std::vector<Hostile> rows = {
      {"fifo", "mm-fuzz report '" + Path("fifo") + "': a FIFO (named pipe), not a regular file"},
      {".", "': a directory, not a regular file"},
      {"deep.json", "deep.json: JSON nested deeper than 64 levels at byte 64"},
      {edited("limit.json", [](ordered_json& j) { j["problems_limit"] = -1; }),
       "limit.json: problems_limit: expected an integer in [0, 9223372036854775807], found -1"},
      {edited("backend.json", [](ordered_json& j) { j["problems"][0]["backend"] = "nonesuch"; }),
       "backend.json: problems[0].backend: 'nonesuch' is not one of the report's backends"},
      {edited("dtype.json", [](ordered_json& j) { j["problems"][0]["dtype"] = "int8"; }),
       "dtype.json: problems[0].dtype: 'int8' is not a dtype"},
      {edited("version.json", [](ordered_json& j) { j["version"] = 7; }),
       "version.json: version: expected a string, found a number"},
      {edited("shard.json", [](ordered_json& j) { j["shard"]["index"] = 3; }),
       "shard.json: shard.index: expected an integer in [1, 2], found 3"},
      {edited("count.json", [](ordered_json& j) { j["stats"]["failures"] = "none"; }),
       "count.json: stats.failures: expected an integer in [0, 9223372036854775807], found a "
       "string"},
  };
  for (const Hostile& h : rows) {
    SCOPED_TRACE(h.file);
    std::string err;
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(Fuzz({"merge", Path(h.file), Path("s2.json")}, BuiltinBackends(), nullptr, &err),
              kExitUsage);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    EXPECT_THAT(err, HasSubstr(h.message));
  }
  // The two good shards still merge.
  EXPECT_EQ(Fuzz({"merge", Path("s1.json"), Path("s2.json")}, BuiltinBackends()), kExitClean);
}

// The text-level parser, on its own (the libFuzzer target's entry).
TEST(ParseFuzzReportTest, RefusesWhatIsNotAnMmFuzzReportWithoutThrowing) {
  EXPECT_EQ(ParseFuzzReport("", "r").status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(ParseFuzzReport("[]", "r").status().message(), HasSubstr("r: not an mm-fuzz report"));
  EXPECT_THAT(ParseFuzzReport(R"({"tool": "mm-fuzz", "version": "1"})", "r").status().message(),
              HasSubstr("r: options: missing"));
  EXPECT_THAT(ParseFuzzReport(R"({"tool": 3})", "r").status().message(),
              HasSubstr("not an mm-fuzz report"));
}

}  // namespace
}  // namespace mm::fuzz
