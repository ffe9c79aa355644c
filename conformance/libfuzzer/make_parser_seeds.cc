// The seeds of the parsers' libFuzzer targets (parser_fuzzer.cc), made with mm's own writers:
// reports written by mm-conformance (whole and as shard 1/2) and mm-fuzz (as shard 1/1) run in
// this process on the reference backend, a calibration table from AutoTable::ToJson, and an
// expectations file and an outputs manifest of every kind of entry. Further expectations files
// given on the command line (the ones the project ships) are copied in.
//
// Usage: mm-parser-fuzz-seeds DIR [EXPECTATIONS_FILE...]   (writes DIR/<kind>/...)
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "mm/backends/auto/auto_backend.h"
#include "mm/backends/reference/reference_backend.h"
#include "mm/conformance/fuzz/fuzz_cli.h"
#include "mm/conformance/tools/cli.h"
#include "parser_fuzz.h"

namespace {

namespace fs = std::filesystem;
using namespace mm;

bool WriteText(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

BackendRegistry ReferenceOnly() {
  BackendRegistry registry;
  const Status registered =
      registry.Register("reference", "mm reference", []() -> StatusOr<std::unique_ptr<Backend>> {
        return std::unique_ptr<Backend>(std::make_unique<ReferenceBackend>());
      });
  if (!registered.ok()) std::abort();
  return registry;
}

std::string CalibrationTable() {
  AutoTable table;
  table.identity = parser_fuzz::FuzzAutoIdentity();
  table.created = "2026-01-01T00:00:00Z";
  table.cells.push_back(
      {DType::kFloat, 1, {64, 64}, {64, 64}, {"eigen", "reference"}, {2e-5, 4e-4}});
  table.cells.push_back({DType::kInt32, 2, {8, 3, 5}, {5}, {"reference"}, {}});
  table.cells.push_back({DType::kBFloat16, 2, {2, 1, 4, 8}, {3, 8, 2}, {"eigen"}, {}});
  return table.ToJson().dump(1);
}

constexpr char kExpectations[] = R"({"expectations": [
  {"case": "test_matmul_2d", "backend": "eigen", "expect": "XFAIL", "reason": "seed", "link": "docs"},
  {"case": "fuzz/double/*+specials", "backend": "bl*", "expect": "SKIP", "reason": "seed",
   "link": "https://example.org/issue/1"}
]})";

constexpr char kOutputsManifest[] = R"({"runtime": "seed runtime 1.0", "records": [
  {"case": "test_matmul_2d", "data_set": "test_data_set_0", "status": "error",
   "message": "session.run failed: out of memory"},
  {"case": "test_matmul_bf16", "data_set": "test_data_set_1", "status": "unsupported",
   "message": "no bfloat16 MatMul kernel"}
]})";

// A frame as a driver writes it (docs/runtime-protocol.md).
std::string Frame(const std::string& header, const std::string& data = "") {
  std::string out;
  for (const std::size_t length : {header.size(), data.size()}) {
    for (int shift = 0; shift < 32; shift += 8) out += static_cast<char>((length >> shift) & 0xFF);
  }
  return out + header + data;
}

// What drivers write: a hello, then answers to parser_fuzz::RuntimeFrameRequests in turn.
std::vector<std::string> RuntimeFrames() {
  const std::string hello =
      Frame(R"({"type":"hello","protocol":1,"runtime":"seed","version":"1","runs_on":"here",)"
            R"("dtypes":{"float":{"accumulation":"float"},"int64":{"accumulation":"int64"},)"
            R"("bfloat16":{"accumulation":"float","flushes_subnormals":true,"conversion":"f32"},)"
            R"("uint32":{"refused":"no"}}})");
  const std::string y_float =
      Frame(R"({"type":"y","id":1,"dtype":"float","shape":[2,4],"seconds":1e-6})",
            std::string(32, '\x01'));
  const std::string y_int64 =
      Frame(R"({"type":"y","id":2,"dtype":"int64","shape":[]})", std::string(8, '\x02'));
  const std::string y_bf16 =
      Frame(R"({"type":"y","id":3,"dtype":"bfloat16","shape":[2,2]})", std::string(8, '\0'));
  const std::string refused = Frame(R"({"type":"refused","id":4,"what":"shape","why":"rank < 2"})");
  const std::string error = Frame(R"({"type":"error","id":2,"message":"boom"})");
  return {hello, hello + y_float, hello + y_float + y_int64 + y_bf16 + refused,
          hello + y_float + error};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: mm-parser-fuzz-seeds DIR [EXPECTATIONS_FILE...]\n";
    return 2;
  }
  const fs::path dir = argv[1];
  for (std::string_view kind : parser_fuzz::kKinds) fs::create_directories(dir / kind);
  bool ok = WriteText(dir / "expectations" / "seed.json", kExpectations) &&
            WriteText(dir / "outputs_manifest" / "seed.json", kOutputsManifest) &&
            WriteText(dir / "calibration_table" / "seed.json", CalibrationTable());
  const std::vector<std::string> frames = RuntimeFrames();
  for (std::size_t i = 0; i < frames.size(); ++i) {
    ok &= WriteText(dir / "runtime_frames" / ("seed_" + std::to_string(i)), frames[i]);
  }
  for (int i = 2; i < argc; ++i) {
    std::error_code ec;
    fs::copy_file(argv[i], dir / "expectations" / ("shipped_" + std::to_string(i) + ".json"),
                  fs::copy_options::overwrite_existing, ec);
    ok &= !ec;
  }
  const BackendRegistry registry = ReferenceOnly();
  // The built-in cases alone: a default data root (Debian's, with its ~930 other operators'
  // models listed as skipped) would make a report too large for inputs of -max_len.
  const fs::path no_data = dir / ".no-data";
  fs::create_directories(no_data);
  for (const std::string shard : {"1/1", "1/2"}) {
    const std::string name = shard == "1/1" ? "whole.json" : "shard_1_of_2.json";
    std::ostringstream out, err;
    const std::vector<std::string> conformance = {
        "--backend",  "reference",      "--no-isolate",
        "--data-dir", no_data.string(), "--shard",
        shard,        "--json",         (dir / "conformance_report" / name).string()};
    if (conformance::RunConformanceCli(conformance, registry, "", out, err) != 0) {
      std::cerr << "mm-parser-fuzz-seeds: mm-conformance " << shard << ": " << err.str();
      ok = false;
    }
  }
  // mm-fuzz merge takes shards' reports only, and one shard alone only when it is 1/1.
  std::ostringstream out, err;
  const std::vector<std::string> fuzz = {
      "--backend", "reference",
      "--cases",   "24",
      "--seed",    "1",
      "--shard",   "1/1",
      "--json",    (dir / "fuzz_report" / "shard_1_of_1.json").string()};
  if (fuzz::RunFuzzCli(fuzz, registry, out, err) != 0) {
    std::cerr << "mm-parser-fuzz-seeds: mm-fuzz: " << err.str();
    ok = false;
  }
  std::cout << "mm-parser-fuzz-seeds: seeds of " << parser_fuzz::kKinds.size() << " parsers in "
            << dir.string() << "\n";
  return ok ? 0 : 1;
}
