#include "mm/backends/auto/auto_deviations.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace mm {
namespace {

// The dtypes a case pattern names ("test_matmul_float16_*" -> float16): the pattern's alphanumeric
// words that DTypeFromName accepts. Empty when it names none.
std::vector<DType> DTypesNamedIn(std::string_view pattern) {
  std::vector<DType> out;
  std::string word;
  for (char c : std::string(pattern) + " ") {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      word += c;
      continue;
    }
    if (!word.empty()) {
      auto dtype = DTypeFromName(word);
      if (dtype.ok() && std::find(out.begin(), out.end(), *dtype) == out.end()) {
        out.push_back(*dtype);
      }
    }
    word.clear();
  }
  return out;
}

}  // namespace

std::vector<AutoDeviation> AutoDeviationsOf(const DeviationsFile& file) {
  std::vector<AutoDeviation> out;
  for (const DeclaredDeviation& e : file.entries) {
    // A deviation of another CPU's code path leaves the backend eligible here.
    if (!e.NotApplicableOn(RunningCpuFeatures()).empty()) continue;
    out.push_back({e.backend_pattern, DTypesNamedIn(e.case_pattern),
                   "declared " + std::string(DeclaredDeviationKindName(e.kind)) + " in " +
                       file.source + " (" + e.reason + ")"});
  }
  return out;
}

}  // namespace mm
