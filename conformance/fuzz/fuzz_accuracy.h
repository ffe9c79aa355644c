// Internal to mm_fuzz (not published): what the campaign (fuzzer.cc) measures of a float result
// beside its verdict; MeasureError and Percentile (fuzzer.h) are defined with it.
#ifndef MM_CONFORMANCE_FUZZ_FUZZ_ACCURACY_H_
#define MM_CONFORMANCE_FUZZ_FUZZ_ACCURACY_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "mm/conformance/fuzz/fuzzer.h"

namespace mm::fuzz {

// Whether every element of a float result that NaN/inf inputs reach holds IEEE's answer as the
// judgement accepts it (WithinBound): NaN where the exact value is NaN, the same infinity where it
// is one; NaN also where finite terms may overflow to the other infinity or the declared
// arithmetic flushes subnormals. Counts those elements into `elements`.
bool SpecialsCorrect(TensorView y, const OracleBounds& bounds, std::int64_t& elements);

// What a campaign collects of its float results, per (backend index, dtype), for the accuracy
// statistics.
class AccuracyData {
 public:
  // One result: its error, whether NaN/inf inputs reach an element of its Y and, if so, whether
  // each such element holds IEEE's answer.
  void Record(std::size_t backend, DType dtype, const ResultError& error, bool special,
              bool specials_correct);
  // The statistics per (backend, dtype), the backends named by `names` (by index).
  std::vector<ErrorStats> Statistics(const std::vector<std::string>& names);

 private:
  using Key = std::pair<std::size_t, DType>;
  // Every result's worst ULP error and bound fraction.
  std::map<Key, std::pair<std::vector<double>, std::vector<double>>> errors_;
  // Results with NaN/inf inputs reaching Y, and those with a wrong IEEE special.
  std::map<Key, std::pair<std::int64_t, std::int64_t>> specials_;
};

}  // namespace mm::fuzz

#endif  // MM_CONFORMANCE_FUZZ_FUZZ_ACCURACY_H_
