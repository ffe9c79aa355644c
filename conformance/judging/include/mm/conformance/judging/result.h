// One judged result, the record every later step (isolation's wire, reports, --resume, merge)
// carries, and how a declared expectation (XFAIL, SKIP) decides its final verdict.
#ifndef MM_CONFORMANCE_JUDGING_RESULT_H_
#define MM_CONFORMANCE_JUDGING_RESULT_H_

#include <cstdint>
#include <optional>
#include <string>

#include "mm/conformance/judging/compare.h"
#include "mm/conformance/judging/expectations.h"
#include "mm/conformance/judging/resources.h"
#include "mm/conformance/judging/verdict.h"
#include "mm/engine/backend.h"
#include "mm/engine/matmul_plan.h"
#include "mm/oracle/error_bound.h"

namespace mm::conformance {

// One (case, data set, backend) outcome.
struct Result {
  std::string case_name;
  // The case's position in the catalog of the whole (unsharded) run: shard reports are merged in
  // this order.
  std::int64_t case_index = 0;
  std::string source;    // Where the case came from (data root or "built-in").
  std::string data_set;  // Empty when the case could not be loaded.
  std::string backend;
  // The operator: "MatMul", or one of its family's ("Gemm", "MatMulInteger", "QLinearMatMul").
  // A report written before the field existed holds MatMul results only.
  std::string op = "MatMul";
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
  // For XFAIL, XPASS and SKIP: the declaring entry's "reason (link)"; else empty.
  std::string expectation;
  // Why the data set's expected Y is suspect: it is not the exact product of its own A and B within
  // the bound of a computation in its own type (integers: not equal to it). Empty when it is. Says
  // nothing about the backend, whose verdict is decided as for any result.
  std::string data_suspect;
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
  // What the backend's call left behind in the process that made it
  // (conformance/judging/resources.h); empty when the backend was not called (a SKIP, an invalid
  // case, a worker that died first).
  std::optional<CallResources> resources;
};

// Whether `result` comes from a call in which its backend computed the product: it did not decline
// it (UNSUPPORTED), and the engine did not answer it above the backend (K = 0, an empty Y). Only
// such calls count toward a backend's resource figures: a leak is not diluted by calls that never
// reached it.
inline bool BackendComputed(const Result& result) {
  return result.verdict != Verdict::kUnsupported && !IsEngineAnswer(result.implementation);
}

// Decides `result` by the first entry of `expectations` matching its case and backend (none:
// unchanged): XFAIL as ApplyXFail (judging/verdict.h) says, SKIP makes it SKIP. A run applies it in
// one place, RunConformanceStreaming, after the verdict, for in-process and isolated runs, crashes
// included; CheckResultConsistent derives a stored result's verdict with it.
void ApplyExpectation(const Expectations* expectations, ToleranceRule rule, Result& result);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_JUDGING_RESULT_H_
