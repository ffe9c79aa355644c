// Running every (case, data set) on every selected backend and judging the result: PASS, FAIL,
// UNSUPPORTED or ERROR, against the expected output and, three-way, against the reference backend.
#ifndef MM_CONFORMANCE_RUNNER_H_
#define MM_CONFORMANCE_RUNNER_H_

#include <optional>
#include <string>
#include <vector>

#include "conformance/compare.h"
#include "conformance/loader/catalog.h"
#include "engine/registry.h"

namespace mm::conformance {

// PASS and FAIL: within / outside both ONNX's tolerance and the error bound of the backend's
// declared arithmetic; BOUND: outside the tolerance, within the bound; IMPRECISE: within the
// tolerance, outside the bound (compare.h, Grade); UNSUPPORTED; ERROR.
enum class Verdict { kPass, kFail, kUnsupported, kError, kBound, kImprecise };
// "PASS", "FAIL", "UNSUPPORTED", "ERROR", "BOUND", "IMPRECISE".
std::string_view VerdictName(Verdict verdict);
// The worse of two verdicts: ERROR > FAIL > BOUND > IMPRECISE > UNSUPPORTED > PASS.
Verdict WorseVerdict(Verdict a, Verdict b);
// The verdict of a judged result.
Verdict VerdictFromGrade(Grade grade);

// Which rule decides the exit code: ONNX's fixed tolerance (the default: BOUND fails, IMPRECISE
// passes) or the error bound (--tolerance bound: BOUND passes, IMPRECISE fails).
enum class ToleranceRule { kOnnx, kBound };
// True when `verdict` is a failure under `rule` (FAIL and ERROR always are).
bool FailsUnder(Verdict verdict, ToleranceRule rule);

// The name of the backend every other is compared with.
inline constexpr std::string_view kReferenceBackend = "reference";

// One (case, data set, backend) outcome.
struct Result {
  std::string case_name;
  std::string source;    // Where the case came from (data root or "built-in").
  std::string data_set;  // Empty when the case could not be loaded.
  std::string backend;
  std::optional<DType> dtype;  // Empty when unknown (invalid case).
  Dims a_dims, b_dims;
  Verdict verdict = Verdict::kError;
  // PASS: summary of the comparison; FAIL: the worst element and counts; UNSUPPORTED: the
  // backend's reason; ERROR: what went wrong.
  std::string message;
  std::string support_note;  // The backend's note for kByConversion ("f16 via f32"); else empty.
  // What actually computed Y (MatMulPrimitive::implementation(): "oneDNN gemm:jit (ISA avx2)",
  // "engine: K = 0, Y is exact zeros"); empty when nothing ran or the backend does not say.
  std::string implementation;
  // Wall time of Supports + Prepare + Execute on this data set, for JUnit's time attribute; node
  // tests are tiny, so this says nothing about throughput (mm-bench does).
  double seconds = 0;
  std::optional<Comparison> vs_expected;
  // The error-bound rule against the expected output (float dtypes; integers: exact).
  std::optional<BoundCheck> vs_bound;
  // Three-way: this backend's Y against the reference backend's Y, with the same tolerance.
  // "is reference", "bit-identical", "within tolerance (...)", "differs: ...", or why there is no
  // reference result.
  std::string vs_reference;
  std::optional<Comparison> vs_reference_comparison;
};

struct RunOptions {
  std::vector<std::string> backends;  // Names to run, in order; every name must be registered.
  Tolerance tolerance;
};

// What one backend runs on here (Backend::RunsOn()), for reports.
struct BackendInfo {
  std::string name;
  std::string description;  // The registry's one-line description.
  std::string runs_on;      // RunsOn(), or "failed to start: ..." when it cannot be created.
};
// Creates each of `names` once and asks what it runs on. Never throws.
std::vector<BackendInfo> DescribeBackends(const BackendRegistry& registry,
                                          const std::vector<std::string>& names);

// Runs every case of `catalog` on every backend of `options`. Each backend is created once; a
// backend that fails to start gives ERROR results. Invalid cases give one ERROR result per backend.
// Never throws: an exception escaping a backend becomes an ERROR.
std::vector<Result> RunConformance(const Catalog& catalog, const BackendRegistry& registry,
                                   const RunOptions& options);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_RUNNER_H_
