#include "mm/backends/auto/auto_deviations.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace mm {
namespace {

// The alphanumeric words of a case pattern ("test_matmul_float16_*" -> test, matmul, float16).
std::vector<std::string> WordsOf(std::string_view pattern) {
  std::vector<std::string> words;
  std::string word;
  for (char c : std::string(pattern) + " ") {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      word += c;
      continue;
    }
    if (!word.empty()) words.push_back(word);
    word.clear();
  }
  return words;
}

// The element types a case pattern names: its words that ElementTypeFromName accepts
// ("test_matmul_float16_*" -> float16; "test_qlinearmatmul_2D_uint8_float16" -> uint8, float16).
// Empty when it names none.
std::vector<DType> DTypesNamedIn(std::string_view pattern) {
  std::vector<DType> out;
  for (const std::string& word : WordsOf(pattern)) {
    auto dtype = ElementTypeFromName(word);
    if (dtype.ok() && std::find(out.begin(), out.end(), *dtype) == out.end()) {
      out.push_back(*dtype);
    }
  }
  return out;
}

// The operators a case pattern names, as mm's case names spell them: ONNX's tests
// ("test_gemm_*", "test_matmulinteger", "test_qlinearmatmul_*", "test_matmul_*"), the built-in
// family cases ("mm_family_gemm13_*", the version after the name; "mm_family_*": the three) and
// mm-fuzz's ("fuzz/Gemm/*"). Empty when it names none: the deviation concerns every operator.
std::vector<family::Op> OpsNamedIn(std::string_view pattern) {
  std::vector<family::Op> out;
  auto add = [&](family::Op op) {
    if (std::find(out.begin(), out.end(), op) == out.end()) out.push_back(op);
  };
  bool family_named = false;
  for (std::string word : WordsOf(pattern)) {
    std::transform(word.begin(), word.end(), word.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    while (!word.empty() && std::isdigit(static_cast<unsigned char>(word.back()))) word.pop_back();
    family_named = family_named || word == "family";
    for (family::Op op : family::kAllOps) {
      std::string name(family::OpName(op));
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      if (word == name) add(op);
    }
  }
  // "mm_family_*" alone: every operator of the family ("mm_family_gemm13_*": Gemm only).
  if (out.empty() && family_named) {
    for (family::Op op : family::kAllOps) {
      if (op != family::Op::kMatMul) add(op);
    }
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
                       file.source + " (" + e.reason + ")",
                   OpsNamedIn(e.case_pattern)});
  }
  return out;
}

}  // namespace mm
