// libFuzzer targets over the files mm reads besides ONNX ones (the loader has its own target,
// conformance/loader/libfuzzer/): one executable, run by the name mm_<kind>_fuzzer of a kind of
// file (parser_fuzz.h's kKinds; the build links each name to it), which chooses the kind its
// inputs are read as. Each input is the file's whole
// text, given to the function that reads such a file: any crash, sanitizer report, leak or timeout
// is a finding. With MM_PARSER_FUZZ_SEEDS_MUST_PARSE=1 an input that is refused aborts too, so a
// run over the seeds (ctest's parser_fuzz.seeds) proves they reach past the first check.
// Build and run: scripts/fuzz-parsers.sh [SECONDS] (the asan tree, build preset loader-fuzz).
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mm/backends/auto/auto_backend.h"
#include "mm/backends/cmd/runtime_protocol.h"
#include "mm/conformance/fuzz/fuzz_merge.h"
#include "mm/conformance/fuzz/fuzz_report_reader.h"
#include "mm/conformance/judging/expectations.h"
#include "mm/conformance/report/merge.h"
#include "mm/conformance/running/outputs_backend.h"
#include "parser_fuzz.h"

namespace {

namespace fs = std::filesystem;
using namespace mm;

// The kind fuzzed, its index in kKinds: set from the executable's name before the first input.
std::size_t g_kind = 0;

// libFuzzer runs the empty input first, before the seeds; it is no seed.
bool g_input_is_empty = false;

void Check(const Status& status) {
  static const bool must_parse = [] {
    const char* value = std::getenv("MM_PARSER_FUZZ_SEEDS_MUST_PARSE");
    return value != nullptr && std::string_view(value) == "1";
  }();
  if (must_parse && !g_input_is_empty && !status.ok()) {
    std::fprintf(stderr, "%s: a seed was refused: %s\n",
                 std::string(parser_fuzz::kKinds[g_kind]).c_str(), status.ToString().c_str());
    std::abort();
  }
}

// One scratch file per fuzzing process, for the readers that take a path.
const fs::path& ScratchFile() {
  static const fs::path path = [] {
    std::string pattern = (fs::temp_directory_path() / "mm-parser-fuzz-XXXXXX").string();
    const int fd = mkstemp(pattern.data());
    if (fd < 0) std::abort();
    close(fd);
    std::atexit([] { std::remove(ScratchFile().c_str()); });
    return fs::path(pattern);
  }();
  return path;
}

void WriteScratch(std::string_view text) {
  std::FILE* file = std::fopen(ScratchFile().c_str(), "wb");
  if (file == nullptr) std::abort();
  if (!text.empty() && std::fwrite(text.data(), 1, text.size(), file) != text.size()) std::abort();
  std::fclose(file);
}

void FuzzExpectations(std::string_view text) {
  auto parsed = conformance::ParseExpectations(text, "fuzz");
  Check(parsed.status());
  if (!parsed.ok()) return;
  for (const conformance::Expectation& e : parsed->entries) {
    (void)parsed->Find(e.case_pattern, e.backend_pattern);
  }
}

void FuzzOutputsManifest(std::string_view text) {
  Check(conformance::ParseOutputsManifest(text, "fuzz").status());
}

void FuzzCalibrationTable(std::string_view text) {
  Check(ParseAutoTable(text, "fuzz", parser_fuzz::FuzzAutoIdentity()).status());
}

// Both ways a report is read back: whole (ReportFromJson), and as --resume and merge read it,
// its header and then its results one at a time from the file.
void FuzzConformanceReport(std::string_view text) {
  (void)conformance::ReportFromJson(text);
  WriteScratch(text);
  auto header = conformance::ReadReportHeader(ScratchFile().string());
  Check(header.status());
  if (!header.ok()) return;
  conformance::ResultReader reader;
  Status opened = reader.Open(ScratchFile().string());
  Check(opened);
  if (!opened.ok()) return;
  while (true) {
    auto next = reader.Next();
    Check(next.status());
    if (!next.ok() || !next->has_value()) return;
  }
}

// As mm-fuzz merge reads a shard's report: checked field by field, then merged on its own.
void FuzzFuzzReport(std::string_view text) {
  auto report = fuzz::ParseFuzzReport(text, "fuzz");
  Check(report.status());
  if (!report.ok()) return;
  std::vector<fuzz::ShardReport> shards;
  shards.push_back(std::move(report).value());
  Check(fuzz::MergeFuzzReports(shards).status());
}

// A driver's stdout in memory.
class Frames final : public runtime::ByteSource {
 public:
  explicit Frames(std::string_view bytes) : bytes_(bytes) {}
  bool at_end() const { return bytes_.empty(); }
  Status Read(std::span<std::byte> into) override {
    if (into.size() > bytes_.size()) return InternalError("the driver ended");
    std::memcpy(into.data(), bytes_.data(), into.size());
    bytes_.remove_prefix(into.size());
    return OkStatus();
  }

 private:
  std::string_view bytes_;
};

// As the backend reads a driver: the hello, then a reply to each request of
// RuntimeFrameRequests in turn, Y read into a buffer of exactly Y's bytes, until the bytes end.
void FuzzRuntimeFrames(std::string_view text) {
  static const std::vector<MatMulPlan> plans = [] {
    std::vector<MatMulPlan> out;
    for (const MatMulDesc& desc : parser_fuzz::RuntimeFrameRequests()) {
      out.push_back(PlanMatMul(desc).value());
    }
    return out;
  }();
  Frames frames(text);
  Check(runtime::ReadHello(frames).status());
  for (std::uint64_t id = 1; !frames.at_end(); ++id) {
    const MatMulPlan& plan = plans[(id - 1) % plans.size()];
    std::vector<std::byte> y(static_cast<std::size_t>(plan.y_elements) *
                             DTypeSize(plan.desc.dtype));
    const Status read = runtime::ReadReply(frames, {id, plan.desc.dtype, plan.y_dims}, y).status();
    Check(read);
    if (!read.ok()) return;
  }
}

// One per kind, in kKinds's order.
constexpr void (*kFuzzers[])(std::string_view) = {FuzzExpectations,     FuzzOutputsManifest,
                                                  FuzzCalibrationTable, FuzzConformanceReport,
                                                  FuzzFuzzReport,       FuzzRuntimeFrames};
static_assert(std::size(kFuzzers) == parser_fuzz::kKinds.size());

}  // namespace

// Chooses the kind from the name the executable was run by, mm_<kind>_fuzzer; any other name is
// an error naming the valid ones.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  const std::string name = *argc > 0 ? fs::path((*argv)[0]).filename().string() : "";
  for (std::size_t i = 0; i < parser_fuzz::kKinds.size(); ++i) {
    if (name == "mm_" + std::string(parser_fuzz::kKinds[i]) + "_fuzzer") {
      g_kind = i;
      return 0;
    }
  }
  std::fprintf(stderr,
               "parser fuzzer: run by the name mm_<kind>_fuzzer, not '%s'; kinds:", name.c_str());
  for (std::string_view kind : parser_fuzz::kKinds) {
    std::fprintf(stderr, " %s", std::string(kind).c_str());
  }
  std::fprintf(stderr, "\n");
  std::exit(2);
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  g_input_is_empty = size == 0;
  kFuzzers[g_kind](std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
