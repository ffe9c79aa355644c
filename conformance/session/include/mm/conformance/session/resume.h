// --resume: what a run takes from its previous report, and the sink that puts those results back
// in front of the new ones.
#ifndef MM_CONFORMANCE_SESSION_RESUME_H_
#define MM_CONFORMANCE_SESSION_RESUME_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mm/conformance/judging/result_check.h"
#include "mm/conformance/loader/catalog.h"
#include "mm/conformance/report/merge.h"
#include "mm/conformance/report/report.h"
#include "mm/conformance/running/runner.h"
#include "mm/engine/status.h"

namespace mm::conformance {

// Which cases and results `selected` (cases of `catalog`, run on `num_backends` backends) are, with
// a fingerprint: the exclusive or, over the cases, of a hash (FNV-1a, 64 bits) of each case's
// catalog index, name and data sets, so the shards of a run combine into the fingerprint of the
// whole run (MergeShardHeaders checks that they do).
Selection SelectionOf(const Catalog& catalog, const std::vector<CaseStart>& selected,
                      std::size_t num_backends);

// What a resumed run takes from its previous report: per case index, how many of its results
// (a prefix, in run order) are kept, and where each case not finished starts; the rule the kept
// results were checked under, and how many results were refused by it (the first refusal's
// result and reason: "case 'x', data set 'y', backend 'z': its resources' ...").
struct Resumed {
  std::string path;
  std::vector<std::uint32_t> keep;
  std::vector<CaseStart> to_run;
  ResultRules rules;
  std::int64_t inconsistent = 0;
  std::string first_inconsistency;
};

// Checks that `path` is a report of the same run as `now` (same mm, cases, backends, tolerance,
// rule and expectations) and finds what it already finished: per case, the results in run order
// up to the first one that is out of place, repeated, not consistent with itself
// (CheckResultConsistent under `now`'s rule, its resource figures included) or of a process and
// backend whose resource figures disagree with each other (ResourceTrajectories: a first pass over
// the file); that one and the rest of its case run again. The error names the file and the
// difference.
StatusOr<Resumed> LoadResumed(const std::string& path, const Report& now, const Catalog& catalog,
                              const std::vector<CaseStart>& selected);

// Puts the kept results of the previous report in front of the new ones, in catalog order. Each
// is checked again as it is taken: a file changed since LoadResumed read it is an error.
class ResumeMerger final : public ResultSink {
 public:
  ResumeMerger(const Resumed& resumed, ResultSink& next);
  void Add(Result r) override;
  // Gives the kept results after the last new one; the first reading error, if any.
  Status Finish();

 private:
  void Advance();
  void Drain(std::int64_t upto);
  const Resumed& resumed_;
  ResultSink& next_;
  ResultReader reader_;
  Status status_;
  std::optional<Result> head_;
  std::vector<std::uint32_t> taken_;
};

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_SESSION_RESUME_H_
