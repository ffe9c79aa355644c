// The planted family backends through the same run, judgement and reports as a gate run: on the
// built-in family cases of the classes aimed at the planted faults.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "mm/conformance/loader/family_cases.h"
#include "mm/conformance/session/run.h"
#include "mm/family/plan.h"
#include "self_check_internal.h"

namespace mm::self_check {
namespace {

using conformance::Result;
using conformance::Verdict;

// At most this many unmet cases are named; the count says how many there are.
constexpr std::size_t kNamedUnmet = 3;

// The class of every case of the built-in family catalogue aimed at some planted fault, by name.
std::map<std::string, std::string> AimedCases() {
  std::set<std::string> classes;
  for (const PlantedFamilyBackend& planted : PlantedFamilyBackends()) {
    for (const std::string& c : ClassesAimedAt(planted.fault)) classes.insert(c);
  }
  std::map<std::string, std::string> cases;
  for (const conformance::FamilyCase& c : conformance::BuiltinFamilyCatalogue()) {
    if (classes.contains(c.op_class)) cases.emplace(c.name, c.op_class);
  }
  return cases;
}

// Whether `fault` can change an element of the built-in family case `name`'s Y; true (then its
// verdict is not required to be PASS) when the case is unknown or does not plan.
bool CanShow(FamilyFault fault, const std::string& name) {
  const conformance::FamilyCase* c = conformance::FindBuiltinFamilyCase(name);
  if (c == nullptr) return true;
  const auto plan = family::PlanProblem(c->problem);
  return !plan.ok() || FaultCanShow(fault, *plan);
}

// The check of `planted`'s results: its needed verdict (FAIL; ERROR for a stray write) in every
// class aimed at its fault, a PASS on every case where its fault cannot show (for the control:
// everywhere).
ResultsCheck DeservedVerdicts(const PlantedFamilyBackend& planted,
                              const std::map<std::string, std::string>& class_of) {
  return [&planted, &class_of](const std::vector<Result>& results) {
    std::vector<std::string> unmet;
    std::set<std::string> caught_classes;
    for (const Result& r : results) {
      const auto it = class_of.find(r.case_name);
      if (it != class_of.end() && r.verdict == planted.needed) caught_classes.insert(it->second);
      if (r.verdict != Verdict::kPass && !CanShow(planted.fault, r.case_name)) {
        unmet.push_back(r.case_name + " " + std::string(conformance::VerdictName(r.verdict)) +
                        " where the fault cannot show");
      }
    }
    for (const std::string& c : ClassesAimedAt(planted.fault)) {
      if (!caught_classes.contains(c)) {
        unmet.push_back("no " + std::string(conformance::VerdictName(planted.needed)) +
                        " in class " + c);
      }
    }
    std::string out;
    for (std::size_t i = 0; i < std::min(unmet.size(), kNamedUnmet); ++i) {
      out += (i == 0 ? "" : "; ") + unmet[i];
    }
    if (unmet.size() > kNamedUnmet) {
      out += "; and " + std::to_string(unmet.size() - kNamedUnmet) + " more";
    }
    return out;
  };
}

}  // namespace

void RunFamilyPlants(const SelfCheckOptions& options, SelfCheckResult& out) {
  const std::map<std::string, std::string> class_of = AimedCases();
  conformance::DiscoverOptions discover;
  discover.builtin = true;
  discover.shape_classes = true;
  discover.select = [&class_of](const std::string& name) { return class_of.contains(name); };
  const conformance::Catalog catalog = conformance::Discover({}, discover);

  BackendRegistry registry;
  std::vector<std::string> names;
  for (const PlantedFamilyBackend& planted : PlantedFamilyBackends()) {
    const SelfCheckOptions::FamilyBackendFn make = options.make_family_backend;
    (void)registry.Register(
        planted.name, "planted family fault: " + planted.why,
        [planted, make]() -> StatusOr<std::unique_ptr<Backend>> { return make(planted); });
    names.push_back(planted.name);
  }
  conformance::RunOptions run;
  run.backends = names;
  run.isolate = true;
  run.jobs = std::max(1, options.jobs);
  run.timeout_seconds = options.timeout_seconds;
  const std::vector<Result> results = conformance::RunConformance(catalog, registry, run);

  out.cases += static_cast<int>(catalog.cases.size());
  for (const PlantedFamilyBackend& planted : PlantedFamilyBackends()) {
    std::vector<Result> own;
    for (const Result& r : results) {
      if (r.backend == planted.name) own.push_back(r);
    }
    out.outcomes.push_back(Judge(planted.name, planted.why, planted.needed,
                                 conformance::ToleranceRule::kOnnx, std::move(own), options,
                                 planted.needed_text, DeservedVerdicts(planted, class_of)));
  }
}

}  // namespace mm::self_check
