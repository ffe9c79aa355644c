// The built-in family catalogue as the harness runs it: built once per process, found by name
// (a worker of a launcher has no catalogue entry's maker), each case one data set.
#include <algorithm>
#include <cstring>
#include <utility>

#include "mm/conformance/loader/family_cases.h"

namespace mm::conformance {

const std::vector<FamilyCase>& BuiltinFamilyCatalogue() {
  static const std::vector<FamilyCase> cases = BuiltinFamilyCases();
  return cases;
}

const FamilyCase* FindBuiltinFamilyCase(std::string_view name) {
  // The cases' positions sorted by name, once: a worker looks up one case per task.
  static const std::vector<const FamilyCase*> by_name = [] {
    std::vector<const FamilyCase*> sorted;
    for (const FamilyCase& c : BuiltinFamilyCatalogue()) sorted.push_back(&c);
    std::sort(sorted.begin(), sorted.end(),
              [](const FamilyCase* x, const FamilyCase* y) { return x->name < y->name; });
    return sorted;
  }();
  const auto it =
      std::lower_bound(by_name.begin(), by_name.end(), name,
                       [](const FamilyCase* c, std::string_view n) { return c->name < n; });
  return it != by_name.end() && (*it)->name == name ? *it : nullptr;
}

StatusOr<FamilyDataSet> FamilyCaseDataSet(const FamilyCase& family_case) {
  const family::Problem& problem = family_case.problem;
  FamilyDataSet set;
  set.name = std::string(kFamilyCaseDataSet);
  set.op = problem.op;
  set.version = problem.version;
  set.attributes = problem.attributes;
  for (const family::NamedInput& input : problem.inputs) {
    const TensorView& view = input.tensor;
    MM_ASSIGN_OR_RETURN(Tensor copy,
                        Tensor::Create(view.dtype, Dims(view.dims.begin(), view.dims.end())));
    if (copy.NumBytes() > 0) std::memcpy(copy.raw_data(), view.data, copy.NumBytes());
    set.inputs.emplace_back(input.name, std::move(copy));
  }
  MM_ASSIGN_OR_RETURN(set.y, FamilyCaseExpectedY(family_case));
  return set;
}

}  // namespace mm::conformance
