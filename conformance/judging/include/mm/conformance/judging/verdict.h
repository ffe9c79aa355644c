// The verdicts of mm-conformance and mm-fuzz: one enum, and the one table of what each means, when
// it fails a run, and what an expectations file's XFAIL entry turns it into.
//
// Two rules judge a result of a float dtype (integers are exact under both), both defined in
// mm/oracle/error_bound.h and applied to tensors by Judge (conformance/judging/compare.h): ONNX's
// fixed tolerance (|got - expected| <= atol + rtol |expected|) and the K-aware error bound of the
// backend's declared arithmetic. `--tolerance onnx|bound` picks the
// rule that decides the exit code (ToleranceRule; mm-conformance's default is onnx, mm-fuzz's is
// bound).
//
//   verdict      meaning                                        fails a run    with an XFAIL entry
//                                                               onnx  bound    onnx    bound
//   PASS         within the tolerance and within the bound      no    no       XPASS   XPASS
//   BOUND        outside the tolerance, within the bound: the   yes   no       XFAIL   XPASS
//                tolerance is too tight there; as exact as the
//                declared arithmetic allows
//   IMPRECISE    within the tolerance, outside the bound: less  no    yes      XPASS   XFAIL
//                exact than the declared arithmetic (double in
//                float, truncating rounding, a narrow sum)
//   FAIL         outside both (also: wrong dtype or shape)      yes   yes      XFAIL   XFAIL
//   UNSUPPORTED  the backend said no (Supports), with a reason  no*   no*      stays UNSUPPORTED
//   ERROR        Prepare or Execute failed, an exception, a     yes   yes      XFAIL   XFAIL
//                crash, a hang, memory past the limit, a write
//                outside Y, an invalid case
//   XFAIL        an XFAIL entry's result that failed            no    no       -
//   XPASS        an XFAIL entry's result that did not fail:     yes   yes      -
//                remove the entry
//   SKIP         a SKIP entry's result, not run                 no    no       -
//
//   * UNSUPPORTED fails a run under mm-conformance --strict.
// A SKIP entry makes any result SKIP. An XFAIL entry's result is XFAIL exactly when its verdict
// fails under the run's rule (FailsUnder), else XPASS (ApplyXFail). mm-fuzz gives no XPASS per
// result: it reports each XFAIL entry that no failing result matched.
#ifndef MM_CONFORMANCE_JUDGING_VERDICT_H_
#define MM_CONFORMANCE_JUDGING_VERDICT_H_

#include <array>
#include <cstddef>
#include <numeric>
#include <optional>
#include <string_view>

#include "mm/engine/status.h"
#include "mm/family/judge.h"

namespace mm::conformance {

// The verdicts of the table above (declaration order is the order reports list them in).
enum class Verdict {
  kPass,
  kFail,
  kUnsupported,
  kError,
  kBound,
  kImprecise,
  kXFail,
  kXPass,
  kSkip
};
// Every verdict, in declaration order.
inline constexpr std::array<Verdict, 9> kAllVerdicts = {
    Verdict::kPass,      Verdict::kFail,  Verdict::kUnsupported, Verdict::kError, Verdict::kBound,
    Verdict::kImprecise, Verdict::kXFail, Verdict::kXPass,       Verdict::kSkip};

// A count per verdict, indexed by Verdict.
template <class T>
struct VerdictCounts {
  std::array<T, kAllVerdicts.size()> counts{};

  T& operator[](Verdict verdict) { return counts[static_cast<std::size_t>(verdict)]; }
  T operator[](Verdict verdict) const { return counts[static_cast<std::size_t>(verdict)]; }
  // The results of every verdict.
  T total() const { return std::accumulate(counts.begin(), counts.end(), T{0}); }
};

// "PASS", "FAIL", "UNSUPPORTED", "ERROR", "BOUND", "IMPRECISE", "XFAIL", "XPASS", "SKIP".
std::string_view VerdictName(Verdict verdict);
// The verdict named `name` (exactly as VerdictName gives it); INVALID_ARGUMENT naming it otherwise.
StatusOr<Verdict> VerdictFromName(std::string_view name);

// The worse of two verdicts:
// ERROR > XPASS > FAIL > BOUND > IMPRECISE > UNSUPPORTED > XFAIL > SKIP > PASS.
Verdict WorseVerdict(Verdict a, Verdict b);

// The verdict of a judged result from its two rules: PASS, BOUND, IMPRECISE or FAIL.
Verdict JudgedVerdict(bool within_tolerance, bool within_bound);

// The verdict of a family result whose elements were judged `verdict` together (JudgeFamily):
// PASS, BOUND, IMPRECISE or FAIL alike.
Verdict FromElementVerdict(family::ElementVerdict verdict);

// Which rule decides the exit code: ONNX's fixed tolerance (BOUND fails, IMPRECISE passes) or the
// error bound (--tolerance bound: BOUND passes, IMPRECISE fails).
enum class ToleranceRule { kOnnx, kBound };
// True when `verdict` is a failure under `rule`: the "fails a run" columns of the table.
bool FailsUnder(Verdict verdict, ToleranceRule rule);

// What an XFAIL entry makes of a result judged `verdict` under `rule`: XFAIL when it fails under
// `rule`, XPASS when it was judged and does not (PASS, and BOUND or IMPRECISE where `rule` lets it
// pass); UNSUPPORTED, and a verdict an entry already decided (XFAIL, XPASS, SKIP), unchanged.
Verdict ApplyXFail(Verdict verdict, ToleranceRule rule);

// Exit codes of mm-conformance.
inline constexpr int kExitPassed = 0;    // Every selected result passed (UNSUPPORTED allowed
                                         // unless --strict).
inline constexpr int kExitFailed = 1;    // Any FAIL or ERROR (or UNSUPPORTED under --strict).
inline constexpr int kExitUsage = 2;     // Usage error, unwritable report, or no MatMul case.
inline constexpr int kExitOfficial = 3;  // --require-official and an official case is missing
                                         // or altered.

// What besides the verdict counts decides a run's exit code.
struct ExitFacts {
  ToleranceRule rule = ToleranceRule::kOnnx;
  bool strict = false;                // --strict: UNSUPPORTED and resource findings fail.
  bool official_failed = false;       // --require-official and the corpus is incomplete or altered.
  bool any_case = true;               // False when no MatMul case was found.
  int resource_findings = 0;          // Backends with a resource finding.
  std::optional<int> skip_exit_code;  // --skip-exit-code: when every result is UNSUPPORTED/SKIP.
};

// mm-conformance's exit code for a run whose results counted `counts`: kExitOfficial when
// official_failed; kExitUsage without any case; kExitFailed when a verdict fails under `rule` (the
// table above) or, under strict, on an UNSUPPORTED result or a resource finding;
// skip_exit_code when every result (at least one) is UNSUPPORTED or SKIP; else kExitPassed.
int ExitCodeOf(const VerdictCounts<int>& counts, const ExitFacts& facts);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_JUDGING_VERDICT_H_
