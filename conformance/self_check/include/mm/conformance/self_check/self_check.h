// The harness's self-check: proof that the gate can fail. Deliberately wrong backends
// (planted_backends.h) run through the same judgement, worker isolation, reports and exit-code
// logic as mm-conformance, on the gate's cases (the data roots' and the built-ins) plus cases
// built in memory where those cannot reveal a fault; each must be caught with the verdict it
// deserves, and the correct control must pass.
#ifndef MM_CONFORMANCE_SELF_CHECK_SELF_CHECK_H_
#define MM_CONFORMANCE_SELF_CHECK_SELF_CHECK_H_

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "mm/conformance/loader/catalog.h"
#include "mm/conformance/report/merge.h"
#include "mm/conformance/report/report.h"
#include "mm/conformance/running/runner.h"
#include "mm/conformance/self_check/planted_backends.h"
#include "mm/conformance/self_check/planted_family.h"

namespace mm::self_check {

// The cases built in memory, each revealing a fault the official and built-in cases cannot (NaN
// inputs, float16 and bfloat16 sums, integers near their limits, broadcasting, K with a tail,
// several data sets per case). Expected outputs are the exact oracle's (mm/oracle/error_bound.h).
std::vector<conformance::CaseEntry> SelfCheckCases();

// A planted fault of a case rather than of a backend: a data set whose expected Y holds the
// product's element count in another shape. A backend cannot produce a wrong shape (the harness
// allocates Y from the plan and the engine checks every view), so this is where a wrong shape
// really meets the harness; the correct backend must get ERROR on it.
conformance::CaseEntry WrongShapeCase();
// The name the self-check reports the wrong-shape fault under.
inline constexpr std::string_view kWrongShapeFault = "wrong_output_shape";
// What the correct backend's ERROR on that case must say: the shapes, not another cause.
inline constexpr std::string_view kWrongShapeText = "gives [2,3] but output_0.pb has shape [3,2]";

struct SelfCheckOptions {
  std::vector<conformance::DataRoot> roots;  // The gate's data roots (the official cases).
  bool builtin = true;                       // Include the built-in cases.
  int jobs = 1;                              // Worker processes.
  double timeout_seconds = 30;               // Per result, as in a gate run.
  // The exit-code logic being proven: mm-conformance's. The self-check's tests replace it with
  // broken ones to show that the self-check notices.
  using ExitCodeFn = int (*)(const conformance::Report&, bool any_case,
                             std::optional<int> skip_exit_code);
  ExitCodeFn exit_code = conformance::ExitCodeOf;
  // The faults planted through the runtime protocol (planted_driver.py on the Python SDK), run
  // when python3 with numpy is there. The planted hang's driver is killed after
  // `hang_timeout_seconds` (what it costs, once); the others' after `timeout_seconds`.
  bool drivers = true;
  double hang_timeout_seconds = 3;
  // Makes each planted family backend (planted_family.h). The self-check's tests replace it with
  // one that plants a fault wrongly (a correct kernel), to show that the self-check notices.
  using FamilyBackendFn = std::unique_ptr<Backend> (*)(const PlantedFamilyBackend& planted);
  FamilyBackendFn make_family_backend = MakePlantedFamilyBackend;
};

// What the harness made of one planted fault (or of the control).
struct PlantedOutcome {
  std::string name;
  std::string why;
  conformance::Verdict got = conformance::Verdict::kPass;  // Worst verdict over its results.
  conformance::Verdict needed = conformance::Verdict::kPass;
  conformance::ToleranceRule rule = conformance::ToleranceRule::kOnnx;
  int exit_code = 0;         // The exit-code logic's answer for its results under `rule`.
  int needed_exit_code = 0;  // kExitFailed for a fault, kExitPassed for the control.
  std::string evidence;      // "<case>/<data set>: <message>" of the worst result.
  // Text the worst result's message must hold, when not empty ("conformance gap: "): the fault
  // caught for what it is, not by another error.
  std::string needed_text;
  // A planted family backend's results that are not the verdicts their cases deserve (no FAIL in
  // a class aimed at its fault, a case where its fault cannot show not PASSed), in words; empty
  // when they are (and for MatMul's planted faults, which are judged by their worst verdict).
  std::string unmet;
  bool caught() const {
    return got == needed && exit_code == needed_exit_code &&
           evidence.find(needed_text) != std::string::npos && unmet.empty();
  }
};

struct SelfCheckResult {
  // The control, every planted backend, the wrong shape, every planted family backend (its
  // control first), the runtime-protocol faults.
  std::vector<PlantedOutcome> outcomes;
  int cases = 0;  // Cases run (the gate's and the self-check's).
  // Why the runtime-protocol faults did not run (no python3 or numpy), empty when they did.
  std::string drivers_not_run;
  // Names of the outcomes not caught (for the control: not passed), in order.
  std::vector<std::string> Missed() const;
};

// The outcome of `planted`'s results, judged as RunSelfCheck judges them: its worst verdict, the
// exit code under its rule, and, where it must ERROR, whether its worst result says the planted
// cause (PlantedBackend::needed_text).
PlantedOutcome JudgePlanted(const PlantedBackend& planted, std::vector<conformance::Result> results,
                            const SelfCheckOptions& options);

// Runs the self-check. Each backend's results are written to a JSON report and read back before
// being judged, so a report that loses or changes a verdict is a miss too. The planted family
// backends run on the built-in family cases of every class aimed at a planted fault
// (ClassesAimedAt), whatever `options.builtin` says (they are the self-check's own cases for
// them): each must FAIL a case of every class aimed at its fault and PASS every case where its
// fault cannot show (FaultCanShow), and the control must PASS them all.
SelfCheckResult RunSelfCheck(const SelfCheckOptions& options);

// One line per outcome, "  caught  transposed_b: FAIL, exit 1 (needed FAIL, exit 1 under
// --tolerance onnx): ..." or "  MISSED  ..." with the worst result, then a summary line. `quiet`:
// only the MISSED lines and the summary.
void WriteSelfCheck(const SelfCheckResult& result, std::ostream& out, bool quiet = false);

// --self-check of mm-conformance (RunEnvironment::self_check, conformance/session/session.h):
// RunSelfCheck over `roots` and WriteSelfCheck to `out`; kExitPassed when nothing is missed, else
// kExitFailed.
int RunSelfCheckCommand(const std::vector<conformance::DataRoot>& roots, bool builtin, int jobs,
                        bool quiet, std::ostream& out);

}  // namespace mm::self_check

#endif  // MM_CONFORMANCE_SELF_CHECK_SELF_CHECK_H_
