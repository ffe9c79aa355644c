#include "mm/conformance/judging/verdict.h"

#include <string>

namespace mm::conformance {

std::string_view VerdictName(Verdict verdict) {
  switch (verdict) {
    case Verdict::kBound:
      return "BOUND";
    case Verdict::kImprecise:
      return "IMPRECISE";
    case Verdict::kPass:
      return "PASS";
    case Verdict::kFail:
      return "FAIL";
    case Verdict::kUnsupported:
      return "UNSUPPORTED";
    case Verdict::kXFail:
      return "XFAIL";
    case Verdict::kXPass:
      return "XPASS";
    case Verdict::kSkip:
      return "SKIP";
    case Verdict::kError:
      break;
  }
  return "ERROR";
}

StatusOr<Verdict> VerdictFromName(std::string_view name) {
  for (Verdict v : kAllVerdicts) {
    if (VerdictName(v) == name) return v;
  }
  return InvalidArgumentError("unknown verdict '" + std::string(name) + "'");
}

Verdict WorseVerdict(Verdict a, Verdict b) {
  auto rank = [](Verdict v) {
    switch (v) {
      case Verdict::kPass:
        return 0;
      case Verdict::kSkip:
        return 1;
      case Verdict::kXFail:
        return 2;
      case Verdict::kUnsupported:
        return 3;
      case Verdict::kImprecise:
        return 4;
      case Verdict::kBound:
        return 5;
      case Verdict::kFail:
        return 6;
      case Verdict::kXPass:
        return 7;
      case Verdict::kError:
        break;
    }
    return 8;
  };
  return rank(a) >= rank(b) ? a : b;
}

Verdict JudgedVerdict(bool within_tolerance, bool within_bound) {
  if (within_tolerance) return within_bound ? Verdict::kPass : Verdict::kImprecise;
  return within_bound ? Verdict::kBound : Verdict::kFail;
}

bool FailsUnder(Verdict verdict, ToleranceRule rule) {
  switch (verdict) {
    case Verdict::kFail:
    case Verdict::kError:
    case Verdict::kXPass:
      return true;
    case Verdict::kBound:
      return rule == ToleranceRule::kOnnx;
    case Verdict::kImprecise:
      return rule == ToleranceRule::kBound;
    case Verdict::kPass:
    case Verdict::kUnsupported:
    case Verdict::kXFail:
    case Verdict::kSkip:
      break;
  }
  return false;
}

Verdict ApplyXFail(Verdict verdict, ToleranceRule rule) {
  switch (verdict) {
    case Verdict::kUnsupported:
    case Verdict::kXFail:
    case Verdict::kXPass:
    case Verdict::kSkip:
      return verdict;
    default:
      return FailsUnder(verdict, rule) ? Verdict::kXFail : Verdict::kXPass;
  }
}

int ExitCodeOf(const VerdictCounts<int>& counts, const ExitFacts& facts) {
  if (facts.official_failed) return kExitOfficial;
  if (!facts.any_case) return kExitUsage;
  int failures = 0;
  for (Verdict verdict : kAllVerdicts) {
    if (FailsUnder(verdict, facts.rule)) failures += counts[verdict];
  }
  const bool strict_failures =
      facts.strict && (counts[Verdict::kUnsupported] > 0 || facts.resource_findings > 0);
  if (failures > 0 || strict_failures) return kExitFailed;
  const int not_run = counts[Verdict::kUnsupported] + counts[Verdict::kSkip];
  if (facts.skip_exit_code && not_run == counts.total() && counts.total() > 0) {
    return *facts.skip_exit_code;
  }
  return kExitPassed;
}

Verdict FromElementVerdict(family::ElementVerdict verdict) {
  switch (verdict) {
    case family::ElementVerdict::kPass:
      return Verdict::kPass;
    case family::ElementVerdict::kBound:
      return Verdict::kBound;
    case family::ElementVerdict::kImprecise:
      return Verdict::kImprecise;
    case family::ElementVerdict::kFail:
      break;
  }
  return Verdict::kFail;
}

}  // namespace mm::conformance
