#include "mm/conformance/report/shard_check.h"

#include <charconv>
#include <cstdint>
#include <optional>
#include <set>

#include "mm/conformance/judging/verdict.h"
#include "mm/conformance/running/outputs_backend.h"

namespace mm::conformance {
namespace {

// "shard.json (shard 2/3)", or "report 2 (shard 2/3)" without names.
std::string ShardName(const Report& s, const std::vector<std::string>& names, std::size_t i) {
  return (i < names.size() ? "'" + names[i] + "'" : "report " + std::to_string(i + 1)) +
         " (shard " + std::to_string(s.shard.index) + "/" + std::to_string(s.shard.count) + ")";
}

// Whether two expectations files have the same entries (their counts aside).
bool SameEntries(const Expectations& a, const Expectations& b) {
  if (a.source != b.source || a.entries.size() != b.entries.size()) return false;
  for (std::size_t i = 0; i < a.entries.size(); ++i) {
    const Expectation &x = a.entries[i], &y = b.entries[i];
    if (x.case_pattern != y.case_pattern || x.backend_pattern != y.backend_pattern ||
        x.data_set_pattern != y.data_set_pattern || x.kind != y.kind || x.reason != y.reason ||
        x.link != y.link) {
      return false;
    }
  }
  return true;
}

std::optional<std::uint64_t> FingerprintValue(const std::string& text) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
  if (text.size() != 16 || ec != std::errc() || end != text.data() + text.size()) return {};
  return value;
}

// The shards are the parts of one selection: each records the whole run's (older reports do
// not), the same one, and their own selections combine into it.
Status CheckSelections(const std::vector<Report>& shards, const std::vector<std::string>& names) {
  const Selection& run = shards.front().run_selection;
  std::uint64_t combined = 0;
  std::int64_t cases = 0, results = 0;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const Report& s = shards[i];
    const std::string which = ShardName(s, names, i);
    const auto own = FingerprintValue(s.selection.fingerprint);
    if (!own || !FingerprintValue(s.run_selection.fingerprint)) {
      return InvalidArgumentError(which +
                                  " does not record which cases it and the whole run selected "
                                  "(\"selection\" with \"run\"): written by an older mm? "
                                  "Run the shards again with this mm to merge them");
    }
    const Selection& r = s.run_selection;
    if (r.fingerprint != run.fingerprint || r.cases != run.cases || r.results != run.results) {
      return InvalidArgumentError(which + " is a shard of another selection than " +
                                  ShardName(shards.front(), names, 0) + " (" +
                                  std::to_string(r.cases) + " cases, " + std::to_string(r.results) +
                                  " results against " + std::to_string(run.cases) + " cases, " +
                                  std::to_string(run.results) +
                                  "): give the same data, --case, --filter and --exclude "
                                  "options to every shard");
    }
    if (s.selection.cases < 0 || s.selection.results < 0) {
      return InvalidArgumentError(which + " records a negative selection");
    }
    combined ^= *own;
    cases += s.selection.cases;
    results += s.selection.results;
  }
  if (FingerprintText(combined) != run.fingerprint || cases != run.cases ||
      results != run.results) {
    return InvalidArgumentError(
        "the shards' selections (" + std::to_string(cases) + " cases, " + std::to_string(results) +
        " results, fingerprint " + FingerprintText(combined) + ") are not the whole run's (" +
        std::to_string(run.cases) + " cases, " + std::to_string(run.results) +
        " results, fingerprint " + run.fingerprint + "): the shards are not of one run");
  }
  return OkStatus();
}

// Whether shard `s`, named `which`, is of the same run as `first`, named `first_name`.
Status CheckShardOfSameRun(const Report& s, const Report& first, const std::string& which,
                           const std::string& first_name) {
  auto differs = [&](const char* what) {
    return InvalidArgumentError(which + " is not from the same run as " + first_name + ": " + what +
                                " differ");
  };
  if (s.version != first.version) return differs("mm versions");
  if (s.tolerance.rtol != first.tolerance.rtol || s.tolerance.atol != first.tolerance.atol) {
    return differs("tolerances");
  }
  if (s.rule != first.rule) return differs("--tolerance rules");
  if (s.strict != first.strict || s.require_official != first.require_official) {
    return differs("--strict / --require-official settings");
  }
  if (s.backends != first.backends) return differs("backends");
  if (s.expectations.has_value() != first.expectations.has_value() ||
      (s.expectations && !SameEntries(*s.expectations, *first.expectations))) {
    return differs("expectations files");
  }
  if (s.roots.size() != first.roots.size()) return differs("data roots");
  for (std::size_t r = 0; r < s.roots.size(); ++r) {
    if (s.roots[r].path != first.roots[r].path) return differs("data roots");
  }
  return OkStatus();
}

}  // namespace

Status CheckShardHeaders(const std::vector<Report>& shards, const std::vector<std::string>& names) {
  if (shards.empty()) return InvalidArgumentError("no shard report to merge");
  const Report& first = shards.front();
  const int count = first.shard.count;
  std::set<int> seen;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const Report& s = shards[i];
    const std::string which = ShardName(s, names, i);
    if (s.interrupted) {
      return FailedPreconditionError(
          which + " is of an interrupted run (" + std::to_string(s.interrupted->results) + " of " +
          std::to_string(s.interrupted->expected) + " results); finish it with --resume first");
    }
    if (s.shard.count != count) {
      return InvalidArgumentError(which + " is not from the same run as " +
                                  ShardName(first, names, 0) + ": shard counts differ");
    }
    if (!seen.insert(s.shard.index).second) {
      return InvalidArgumentError(which + ": shard " + std::to_string(s.shard.index) + "/" +
                                  std::to_string(count) + " is given twice");
    }
    MM_RETURN_IF_ERROR(CheckShardOfSameRun(s, first, which, ShardName(first, names, 0)));
  }
  for (int index = 1; index <= count; ++index) {
    if (!seen.count(index)) {
      return InvalidArgumentError("shard " + std::to_string(index) + "/" + std::to_string(count) +
                                  " is missing; a merged report must cover every shard");
    }
  }
  return CheckSelections(shards, names);
}

ShardResultCheck::ShardResultCheck(const Report& merged)
    : rules_{merged.tolerance, merged.rule, merged.expectations ? &*merged.expectations : nullptr} {
}

void ShardResultCheck::Start(const Report& shard, std::string name) {
  shard_ = shard.shard;
  expected_ = shard.selection.results;
  name_ = std::move(name) + " (shard " + std::to_string(shard_.index) + "/" +
          std::to_string(shard_.count) + ")";
  results_ = 0;
  case_index_ = -1;
  keys_.clear();
  trajectories_ = {};
}

Status ShardResultCheck::Add(const Result& r) {
  const std::string refused = name_ + ": the result of " + ResultIdentity(r) + " ";
  if (!InShard(r.case_name, shard_)) {
    return InvalidArgumentError(refused + "is not of shard " + std::to_string(shard_.index) + "/" +
                                std::to_string(shard_.count) +
                                " (its case belongs to another shard)");
  }
  if (r.case_index < case_index_) {
    return InvalidArgumentError(refused + "comes after a later case's results");
  }
  if (r.case_index != case_index_) {
    case_index_ = r.case_index;
    case_name_ = r.case_name;
    keys_.clear();
  } else if (r.case_name != case_name_) {
    return InvalidArgumentError(refused + "has the case index " + std::to_string(r.case_index) +
                                " of case '" + case_name_ + "'");
  }
  if (Status consistent = CheckResultConsistent(r, rules_); !consistent.ok()) {
    return InvalidArgumentError(refused + "is not consistent with itself: " + consistent.message());
  }
  if (r.resources)
    trajectories_.Add(r.backend, *r.resources, ResultIdentity(r), TensorBytesBound(r));
  // A file of an outputs tree that no result reads is an ERROR of its own, beside the selection's
  // results (several may name one case and data set): never a verdict that passes.
  if (r.vs_reference == kExtraOutputReference) {
    if (r.vs_expected || r.verdict == Verdict::kUnsupported) {
      return InvalidArgumentError(refused + "is an extra output's, which is never judged");
    }
    return OkStatus();
  }
  if (!keys_.insert({r.data_set, r.backend}).second) {
    return InvalidArgumentError(refused + "is given twice");
  }
  ++results_;
  return OkStatus();
}

Status ShardResultCheck::Finish() const {
  // Growth figures lowered below what the results' successive figures show hide a leak.
  if (const auto disagree = trajectories_.Finish(); !disagree.empty()) {
    return InvalidArgumentError(
        name_ + ": the result of " + disagree.front().result +
        " is not consistent with the results before it: " + disagree.front().why);
  }
  if (results_ != expected_) {
    return InvalidArgumentError(name_ + " holds " + std::to_string(results_) +
                                " results, but its selection has " + std::to_string(expected_));
  }
  return OkStatus();
}

}  // namespace mm::conformance
