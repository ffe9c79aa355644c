#include "mm/conformance/judging/result_check.h"

#include <algorithm>
#include <limits>

#include "mm/engine/io/text.h"

namespace mm::conformance {
namespace {

// Whether a stored comparison and bound check hold together; the error says how not.
Status CheckJudgement(const Result& r, const Tolerance& tolerance) {
  const Comparison& c = *r.vs_expected;
  const BoundCheck& b = *r.vs_bound;
  const auto counts = std::to_string(c.differing) + " of " + std::to_string(c.elements);
  if (c.elements < 0 || c.differing < 0 || c.differing > c.elements) {
    return InvalidArgumentError("its comparison counts " + counts + " differing elements");
  }
  if (c.match != (c.differing == 0 && c.mismatch.empty())) {
    return InvalidArgumentError(
        std::string("its comparison says match ") + (c.match ? "true" : "false") + " with " +
        counts + " elements differing" + (c.mismatch.empty() ? "" : " and '" + c.mismatch + "'"));
  }
  if (!c.mismatch.empty()) return OkStatus();
  if (b.elements != c.elements || b.outside < 0 || b.outside > b.elements) {
    return InvalidArgumentError("its bound check counts " + std::to_string(b.outside) + " of " +
                                std::to_string(b.elements) + " elements outside, its comparison " +
                                std::to_string(c.elements) + " elements");
  }
  if (c.worst && r.dtype && IsFloat(*r.dtype)) {
    const WorstElement& w = *c.worst;
    if (FloatElementMatches(w.actual_value, w.expected_value, tolerance) != (c.differing == 0)) {
      return InvalidArgumentError("its worst element (expected " + w.expected + ", got " +
                                  w.actual + ") " +
                                  (c.differing == 0 ? "is outside" : "is within") +
                                  " this run's tolerance, but " + counts + " elements differ");
    }
  }
  return OkStatus();
}

// The verdict `r` had before expectations, derived from its own fields.
StatusOr<Verdict> JudgedBefore(const Result& r, const Tolerance& tolerance) {
  if (r.vs_expected) {
    if (!r.vs_bound) return InvalidArgumentError("it has a comparison but no bound check");
    MM_RETURN_IF_ERROR(CheckJudgement(r, tolerance));
    return JudgedVerdictOf(*r.vs_expected, *r.vs_bound);
  }
  const Verdict before = r.verdict == Verdict::kUnsupported ? r.verdict : Verdict::kError;
  if (r.message.empty()) {
    return InvalidArgumentError(
        std::string(VerdictName(r.verdict)) +
        " without a comparison and without a message saying " +
        (before == Verdict::kUnsupported ? "the backend's reason" : "what went wrong"));
  }
  return before;
}

// The resource figures of `r`, judged `before` expectations: possible (CheckCallResources), and
// counting a computation (`call` >= 1) exactly where BackendComputed did.
Status CheckResources(const Result& r, Verdict before) {
  if (!r.resources) return OkStatus();
  MM_RETURN_IF_ERROR(CheckCallResources(*r.resources));
  const std::int64_t call = r.resources->call;
  if (call == 0 && r.vs_expected && !IsEngineAnswer(r.implementation)) {
    return InvalidArgumentError(
        "its resources' call 0 says its backend computed nothing, but it has a comparison of the "
        "backend's Y");
  }
  if (call > 0 && (before == Verdict::kUnsupported || IsEngineAnswer(r.implementation))) {
    return InvalidArgumentError(
        "its resources' call " + std::to_string(call) +
        " counts a computation of its backend, but " +
        (before == Verdict::kUnsupported ? "the backend declined it" : "the engine answered it"));
  }
  return OkStatus();
}

}  // namespace

Status CheckResultConsistent(const Result& result, const ResultRules& rules) {
  auto before = JudgedBefore(result, rules.tolerance);
  if (!before.ok()) return before.status();
  MM_RETURN_IF_ERROR(CheckResources(result, *before));
  Result derived;
  derived.case_name = result.case_name;
  derived.backend = result.backend;
  derived.verdict = *before;
  ApplyExpectation(rules.expectations, rules.rule, derived);
  if (derived.verdict != result.verdict) {
    std::string why = std::string(VerdictName(result.verdict)) + ", but ";
    if (result.vs_expected && result.vs_expected->mismatch.empty()) {
      why += "its own comparison (" + std::to_string(result.vs_expected->differing) + " of " +
             std::to_string(result.vs_expected->elements) + " elements differ, " +
             std::to_string(result.vs_bound->outside) + " outside the bound) makes it ";
    } else if (result.vs_expected) {
      why += "its own comparison ('" + result.vs_expected->mismatch + "') makes it ";
    } else {
      why += "without a comparison it can only be ";
    }
    why += std::string(VerdictName(*before));
    const bool declared_verdict = result.verdict == Verdict::kXFail ||
                                  result.verdict == Verdict::kXPass ||
                                  result.verdict == Verdict::kSkip;
    if (derived.verdict != *before) {
      why += ", which the current expectations make " + std::string(VerdictName(derived.verdict));
    } else if (declared_verdict && rules.expectations == nullptr) {
      why += " (this run has no expectations file to declare it)";
    } else if (declared_verdict) {
      why += " (no entry of " + rules.expectations->source + " declares it)";
    }
    return InvalidArgumentError(why);
  }
  if (derived.expectation != result.expectation) {
    return InvalidArgumentError("its expectation '" + result.expectation +
                                "' is not what the current expectations say ('" +
                                derived.expectation + "')");
  }
  return OkStatus();
}

std::int64_t TensorBytesBound(const Result& result) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  if (!result.dtype) return 0;
  auto elements = [](const Dims& dims) {
    std::int64_t n = 1;
    for (std::int64_t d : dims) {
      if (d < 0 || __builtin_mul_overflow(n, d, &n)) return kMax;
    }
    return n;
  };
  const std::int64_t a = elements(result.a_dims), b = elements(result.b_dims);
  const std::int64_t k =
      std::max<std::int64_t>(result.a_dims.empty() ? 1 : result.a_dims.back(), 1);
  std::int64_t y = 0, total = 0;
  if (__builtin_mul_overflow(a / k, b / k, &y) || __builtin_add_overflow(a, b, &total) ||
      __builtin_add_overflow(total, y, &total) ||
      __builtin_mul_overflow(total, static_cast<std::int64_t>(DTypeSize(*result.dtype)), &total)) {
    return kMax;
  }
  return total;
}

std::string ResultIdentity(const Result& result) {
  return "case '" + io::ConsoleText(result.case_name) + "', data set '" +
         io::ConsoleText(result.data_set) + "', backend '" + io::ConsoleText(result.backend) + "'";
}

}  // namespace mm::conformance
