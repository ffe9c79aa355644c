// What the parsers' libFuzzer targets (parser_fuzzer.cc) and their seed maker
// (make_parser_seeds.cc) share: the kinds of file fuzzed and the machine identity the calibration
// tables of the seeds carry, so that a mutated table gets past the identity check into its cells.
#ifndef MM_CONFORMANCE_LIBFUZZER_PARSER_FUZZ_H_
#define MM_CONFORMANCE_LIBFUZZER_PARSER_FUZZ_H_

#include <array>
#include <string_view>
#include <vector>

#include "mm/backends/auto/auto_backend.h"
#include "mm/engine/matmul_plan.h"

namespace mm::parser_fuzz {

// Every kind of file a libFuzzer target exists for; a target's executable is
// mm_<kind>_fuzzer and its seeds are in <seeds>/<kind>/.
inline constexpr std::array<std::string_view, 6> kKinds = {
    "expectations",        // --expectations (mm-conformance, mm-fuzz, auto's MM_EXPECTATIONS)
    "outputs_manifest",    // mm_outputs.json of an --outputs tree
    "calibration_table",   // auto's table (MM_AUTO_TABLE)
    "conformance_report",  // a JSON report read back by --resume and `mm-conformance merge`
    "fuzz_report",         // an mm-fuzz --json report read back by `mm-fuzz merge`
    "runtime_frames",      // what a driver writes to its stdout (docs/runtime-protocol.md)
};

// The requests the runtime_frames target answers in turn, by id 1, 2, 3, 4, ... (cycling): a
// driver's stdout is its hello and then one reply to each.
inline std::vector<mm::MatMulDesc> RuntimeFrameRequests() {
  return {{mm::DType::kFloat, {2, 3}, {3, 4}},
          {mm::DType::kInt64, {3}, {3}},
          {mm::DType::kBFloat16, {2, 0}, {0, 2}}};
}

// The identity of the seeds' calibration tables, and the one their target expects.
inline AutoIdentity FuzzAutoIdentity() {
  AutoIdentity identity;
  identity.cpu_model = "parser fuzzing";
  identity.cpu_features = "avx2 fma";
  identity.logical_cpus = 2;
  identity.onednn_max_cpu_isa = "unset";
  identity.mm_version = "0";
  identity.omp_wait_policy = "passive";
  identity.threads = 2;
  identity.backends = {{"reference", "mm reference"}, {"eigen", "Eigen 3.4"}};
  return identity;
}

}  // namespace mm::parser_fuzz

#endif  // MM_CONFORMANCE_LIBFUZZER_PARSER_FUZZ_H_
