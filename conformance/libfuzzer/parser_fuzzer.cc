// libFuzzer targets over the files mm reads besides ONNX ones (the loader has its own target,
// conformance/loader/libfuzzer/): one executable per kind of file (parser_fuzz.h), the kind chosen
// when it is compiled (MM_PARSER_FUZZ_KIND, its index in kKinds). Each input is the file's whole
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

constexpr std::string_view kKind = parser_fuzz::kKinds[MM_PARSER_FUZZ_KIND];

// libFuzzer runs the empty input first, before the seeds; it is no seed.
bool g_input_is_empty = false;

void Check(const Status& status) {
  static const bool must_parse = [] {
    const char* value = std::getenv("MM_PARSER_FUZZ_SEEDS_MUST_PARSE");
    return value != nullptr && std::string_view(value) == "1";
  }();
  if (must_parse && !g_input_is_empty && !status.ok()) {
    std::fprintf(stderr, "%s: a seed was refused: %s\n", std::string(kKind).c_str(),
                 status.ToString().c_str());
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

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  g_input_is_empty = size == 0;
  kFuzzers[MM_PARSER_FUZZ_KIND](std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
