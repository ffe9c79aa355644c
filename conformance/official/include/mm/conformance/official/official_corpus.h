// The official-corpus tripwire: the 7 official ONNX MatMul node tests (ONNX v1.20 - v1.22,
// onnx/backend/test/data/node) and the SHA-256 of every one of their files, embedded at build time
// from onnx_matmul_sha256sums.txt. Checks whether the data roots hold them, byte for byte.
#ifndef MM_CONFORMANCE_OFFICIAL_OFFICIAL_CORPUS_H_
#define MM_CONFORMANCE_OFFICIAL_OFFICIAL_CORPUS_H_

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "mm/conformance/loader/catalog.h"
#include "mm/engine/status.h"

namespace mm::conformance {

// One file of an official case: its path relative to the case directory and its SHA-256.
struct OfficialFile {
  std::string path;  // "test_data_set_0/input_0.pb".
  std::string sha256;
};

// One official case: its name and files.
struct OfficialCase {
  std::string name;  // "test_matmul_2d".
  std::vector<OfficialFile> files;
};

// Parses `sha256sum` output ("<64 hex>  ./<case>/<path>" per line). Errors name the line.
StatusOr<std::vector<OfficialCase>> ParseSha256Sums(std::string_view text);

// The embedded onnx_matmul_sha256sums.txt and the 7 cases it lists (sorted by name).
std::string_view OfficialSha256SumsText();
const std::vector<OfficialCase>& OfficialCases();
// The embedded onnx_family_sha256sums.txt and the 20 official node tests of MatMul's family it
// lists (ONNX v1.22.0: 11 Gemm, 1 MatMulInteger, 8 QLinearMatMul; sorted by name).
std::string_view FamilySha256SumsText();
const std::vector<OfficialCase>& FamilyOfficialCases();
// True when `name` is one of the official cases of MatMul's family.
bool IsFamilyOfficialCase(std::string_view name);
// True when `name` is one of the official cases, MatMul's or its family's.
bool IsOfficialCase(std::string_view name);

// What the data roots hold of one official case.
struct OfficialStatus {
  enum class State { kIntact, kMissing, kAltered };
  std::string name;
  State state = State::kMissing;
  std::filesystem::path dir;          // Where it was found (empty when missing).
  std::vector<std::string> problems;  // For kAltered: "model.onnx: SHA-256 differs", ...
};

// The tripwire's findings, one entry per official case in name order.
struct OfficialReport {
  std::vector<OfficialStatus> cases;
  int Count(OfficialStatus::State state) const;
  // True when every official case is present and intact.
  bool complete() const {
    return Count(OfficialStatus::State::kIntact) == static_cast<int>(cases.size());
  }
};

std::string_view OfficialStateName(OfficialStatus::State state);  // "intact", "missing", "altered".

// How to get the official cases `report` lacks: empty when none is missing, else one sentence
// naming how many are missing and scripts/fetch-onnx-testdata.sh (Debian's libonnx-testdata has
// only 3 of the 7), or --data-dir / MM_ONNX_DATA for a copy elsewhere.
std::string MissingOfficialHint(const OfficialReport& report);

// Looks up each case of `official` in `roots` (first root wins, as for running) and compares every
// file's bytes with its checksum. A file missing, changed, or present but not listed (e.g. an extra
// data set) makes the case altered.
OfficialReport CheckOfficialCorpus(const std::vector<DataRoot>& roots,
                                   const std::vector<OfficialCase>& official = OfficialCases());

// The tripwire of a run: CheckOfficialCorpus of MatMul's 7, then each official family case the
// roots hold (intact or altered; one they lack is not listed, so a MatMul run's report is
// unchanged and MissingOfficialHint speaks of MatMul's alone). An altered family case fails
// --require-official as an altered MatMul one does.
OfficialReport CheckOfficialCorpora(const std::vector<DataRoot>& roots);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_OFFICIAL_OFFICIAL_CORPUS_H_
