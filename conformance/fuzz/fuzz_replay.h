// Internal to mm_fuzz (not published): how a finding is run again, as the campaign (fuzzer.cc)
// reports and exports it.
#ifndef MM_CONFORMANCE_FUZZ_FUZZ_REPLAY_H_
#define MM_CONFORMANCE_FUZZ_FUZZ_REPLAY_H_

#include <filesystem>
#include <string>

#include "mm/conformance/fuzz/fuzzer.h"

namespace mm::fuzz {

// The mm-fuzz command that finds `f` again: its seed, index, dtype and backend, the plugin's
// library (`library_path`) or the driver's command (`driver_command`) when the backend is one,
// --check-threads for a NONDETERMINISTIC finding, and what auto ran on when the backend is auto.
std::string ReplayLine(const FuzzOptions& options, const Finding& f,
                       const std::string& library_path, const std::string& driver_command);

// The README.md of an exported minimal problem in `dir`: what was found and the commands that run
// it again, the node test itself and the original problem.
std::string ExportReadme(const FuzzOptions& options, const Finding& f,
                         const std::filesystem::path& dir, const std::string& library_path,
                         const std::string& driver_command);

// The lines that show `f` on the console as it is found: kind, backend, (operator,) the problem,
// its minimal form, the judgement, the replay line, the declared expectation and the export.
std::string FindingLog(const Finding& f);

// The name of `f`'s exported node test: test_mm_fuzz_<kind>_<backend>_<dtype>_s<seed>_i<index>,
// for a family operator with the operator in lower case before the dtype
// (test_mm_fuzz_fail_mine_matmulinteger_uint8_s1_i3).
std::string CaseName(const Finding& f);

}  // namespace mm::fuzz

#endif  // MM_CONFORMANCE_FUZZ_FUZZ_REPLAY_H_
