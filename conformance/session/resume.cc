#include "mm/conformance/session/resume.h"

#include <algorithm>
#include <limits>
#include <set>
#include <string_view>
#include <utility>

#include "mm/conformance/cli/names.h"

namespace mm::conformance {
namespace {

std::string_view RuleName(ToleranceRule rule) {
  return rule == ToleranceRule::kOnnx ? "onnx" : "bound";
}

// Whether the header `before` describes the same run as `now`; the error says what differs.
Status CheckSameRun(const Report& before, const Report& now, const std::string& refused) {
  if (before.selection.fingerprint.empty()) {
    return InvalidArgumentError(refused +
                                "it does not say which cases it selected (a merged report, or "
                                "one written by an older mm)");
  }
  if (before.version != now.version) {
    return InvalidArgumentError(refused + "it was written by mm " + before.version +
                                ", this is mm " + now.version);
  }
  if (before.backends != now.backends) {
    return InvalidArgumentError(refused + "it ran the backends " + cli::Joined(before.backends) +
                                ", this run selects " + cli::Joined(now.backends) +
                                " (give the same --backend and --backend-lib options)");
  }
  if (before.rule != now.rule) {
    return InvalidArgumentError(refused + "it was judged under --tolerance " +
                                std::string(RuleName(before.rule)) + ", this run under " +
                                std::string(RuleName(now.rule)));
  }
  if (before.tolerance.rtol != now.tolerance.rtol || before.tolerance.atol != now.tolerance.atol) {
    return InvalidArgumentError(refused + "its --rtol/--atol differ from this run's");
  }
  if (before.expectations.has_value() != now.expectations.has_value() ||
      (before.expectations && before.expectations->source != now.expectations->source)) {
    return InvalidArgumentError(refused + "its --expectations file differs from this run's");
  }
  if (before.selection.fingerprint != now.selection.fingerprint ||
      before.selection.cases != now.selection.cases ||
      before.selection.results != now.selection.results) {
    return InvalidArgumentError(
        refused + "it selected other cases (" + std::to_string(before.selection.cases) +
        " cases, " + std::to_string(before.selection.results) + " results), this run selects " +
        std::to_string(now.selection.cases) + " cases, " + std::to_string(now.selection.results) +
        " results (give the same data, --case, --filter, --exclude and --shard options)");
  }
  return OkStatus();
}

// The (process, backend) groups of `path`'s results whose resource figures disagree with each
// other (ResourceTrajectories).
using Groups = std::set<std::pair<std::int64_t, std::string>>;
StatusOr<Groups> DisagreeingGroups(const std::string& path, std::string& first_why) {
  ResourceTrajectories trajectories;
  ResultReader reader;
  MM_RETURN_IF_ERROR(reader.Open(path));
  while (true) {
    MM_ASSIGN_OR_RETURN(std::optional<Result> r, reader.Next());
    if (!r) break;
    if (r->resources) {
      trajectories.Add(r->backend, *r->resources, ResultIdentity(*r), TensorBytesBound(*r));
    }
  }
  Groups groups;
  for (const ResourceTrajectories::Disagreement& d : trajectories.Finish()) {
    if (first_why.empty()) first_why = d.result + ": " + d.why;
    groups.insert({d.process, d.backend});
  }
  return groups;
}

// Counts in resumed.keep, per case, the results of `path` that are the next ones the case would
// give and consistent under resumed.rules, and not of `distrusted` groups; the first one that is
// not closes its case.
Status ScanKept(const std::string& path, const std::string& refused, const Report& now,
                const Catalog& catalog, const std::vector<CaseStart>& selected,
                const Groups& distrusted, Resumed& resumed) {
  // A case outside the selection is never taken: its results stay closed from the start.
  std::vector<bool> closed(catalog.cases.size(), true);
  for (const CaseStart& c : selected) closed[c.case_index] = false;
  std::size_t last_case = 0;  // Results of an earlier case after a later one's are not taken.
  const std::size_t nb = now.backends.size();
  ResultReader reader;
  MM_RETURN_IF_ERROR(reader.Open(path));
  while (true) {
    MM_ASSIGN_OR_RETURN(std::optional<Result> r, reader.Next());
    if (!r) break;
    const auto c = static_cast<std::size_t>(r->case_index);
    if (r->case_index < 0 || c >= catalog.cases.size() || catalog.cases[c].name != r->case_name) {
      return InvalidArgumentError(refused + "it holds a result of case '" + r->case_name +
                                  "' at index " + std::to_string(r->case_index) +
                                  ", which this run has not");
    }
    // Results are kept while they are the next ones the case would give; the rest runs again.
    const CaseEntry& entry = catalog.cases[c];
    const std::size_t k = resumed.keep[c];
    bool next = !closed[c] && c >= last_case && k < ResultsOfCase(catalog, c, nb) &&
                r->backend == now.backends[k % nb] &&
                (!entry.valid() || r->data_set == entry.data_sets.name(k / nb));
    last_case = std::max(last_case, c);
    if (next) {
      Status consistent = CheckResultConsistent(*r, resumed.rules);
      if (consistent.ok() && r->resources &&
          distrusted.count({r->resources->process, r->backend}) > 0) {
        consistent = InvalidArgumentError(resumed.first_inconsistency);
      }
      if (!consistent.ok()) {
        if (resumed.first_inconsistency.empty()) {
          resumed.first_inconsistency = ResultIdentity(*r) + ": " + consistent.message();
        }
        ++resumed.inconsistent;
        next = false;
      }
    }
    if (next) {
      ++resumed.keep[c];
    } else {
      closed[c] = true;
    }
  }
  return OkStatus();
}

}  // namespace

Selection SelectionOf(const Catalog& catalog, const std::vector<CaseStart>& selected,
                      std::size_t num_backends) {
  std::uint64_t combined = 0;
  Selection selection;
  for (const CaseStart& c : selected) {
    std::uint64_t hash = 14695981039346656037ull;
    auto mix = [&hash](std::string_view text) {
      for (unsigned char ch : text) {
        hash ^= ch;
        hash *= 1099511628211ull;
      }
      hash ^= 0xff;
      hash *= 1099511628211ull;
    };
    const CaseEntry& entry = catalog.cases[c.case_index];
    mix(std::to_string(c.case_index));
    mix(entry.name);
    for (std::size_t d = 0; d < entry.data_sets.size(); ++d) mix(entry.data_sets.name(d));
    combined ^= hash;
    ++selection.cases;
    selection.results +=
        static_cast<std::int64_t>(ResultsOfCase(catalog, c.case_index, num_backends));
  }
  selection.fingerprint = FingerprintText(combined);
  return selection;
}

StatusOr<Resumed> LoadResumed(const std::string& path, const Report& now, const Catalog& catalog,
                              const std::vector<CaseStart>& selected) {
  MM_ASSIGN_OR_RETURN(Report before, ReadReportHeader(path));
  const std::string refused = "'" + path + "' is not a report of this run: ";
  MM_RETURN_IF_ERROR(CheckSameRun(before, now, refused));
  Resumed resumed;
  resumed.path = path;
  resumed.keep.assign(catalog.cases.size(), 0);
  resumed.rules = {now.tolerance, now.rule, now.expectations ? &*now.expectations : nullptr};
  MM_ASSIGN_OR_RETURN(const Groups distrusted,
                      DisagreeingGroups(path, resumed.first_inconsistency));
  MM_RETURN_IF_ERROR(ScanKept(path, refused, now, catalog, selected, distrusted, resumed));
  const std::size_t nb = now.backends.size();
  for (const CaseStart& c : selected) {
    const std::size_t total = ResultsOfCase(catalog, c.case_index, nb);
    std::uint32_t& k = resumed.keep[c.case_index];
    if (k >= total) continue;
    if (!catalog.cases[c.case_index].valid()) k = 0;  // An invalid case's results come together.
    resumed.to_run.push_back({c.case_index, k / nb, k % nb});
  }
  return resumed;
}

ResumeMerger::ResumeMerger(const Resumed& resumed, ResultSink& next)
    : resumed_(resumed), next_(next), taken_(resumed.keep.size(), 0) {
  status_ = reader_.Open(resumed.path);
  Advance();
}

void ResumeMerger::Add(Result r) {
  Drain(r.case_index);
  next_.Add(std::move(r));
}

Status ResumeMerger::Finish() {
  Drain(std::numeric_limits<std::int64_t>::max());
  return status_;
}

void ResumeMerger::Advance() {
  head_.reset();
  if (!status_.ok()) return;
  auto r = reader_.Next();
  if (!r.ok()) {
    status_ = r.status();
    return;
  }
  head_ = std::move(r).value();
}

void ResumeMerger::Drain(std::int64_t upto) {
  while (head_ && head_->case_index <= upto) {
    const auto c = static_cast<std::size_t>(head_->case_index);
    if (c < taken_.size() && taken_[c] < resumed_.keep[c]) {
      if (Status consistent = CheckResultConsistent(*head_, resumed_.rules); !consistent.ok()) {
        status_ = InvalidArgumentError("'" + resumed_.path + "' changed while it was read: " +
                                       ResultIdentity(*head_) + ": " + consistent.message());
        head_.reset();
        return;
      }
      ++taken_[c];
      next_.Add(std::move(*head_));
    }
    Advance();
  }
}

}  // namespace mm::conformance
