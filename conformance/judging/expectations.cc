#include "mm/conformance/judging/expectations.h"

#include <fnmatch.h>

#include "mm/backends/deviations/deviations_file.h"

namespace mm::conformance {

bool Expectation::Matches(std::string_view case_name, std::string_view backend,
                          std::string_view data_set) const {
  return not_here.empty() &&
         fnmatch(case_pattern.c_str(), std::string(case_name).c_str(), 0) == 0 &&
         fnmatch(backend_pattern.c_str(), std::string(backend).c_str(), 0) == 0 &&
         fnmatch(data_set_pattern.c_str(), std::string(data_set).c_str(), 0) == 0;
}

std::string_view ExpectationKindName(Expectation::Kind kind) {
  return kind == Expectation::Kind::kXFail ? "XFAIL" : "SKIP";
}

const Expectation* Expectations::Find(std::string_view case_name, std::string_view backend,
                                      std::string_view data_set) const {
  for (const Expectation& e : entries) {
    if (e.Matches(case_name, backend, data_set)) return &e;
  }
  return nullptr;
}

namespace {

// The harness's view of a deviations file: its entries, each counting the results it decides.
Expectations ExpectationsOf(const DeviationsFile& file, const std::set<std::string>& cpu) {
  Expectations out;
  out.source = file.source;
  for (const DeclaredDeviation& d : file.entries) {
    Expectation e;
    e.case_pattern = d.case_pattern;
    e.backend_pattern = d.backend_pattern;
    e.kind = d.kind == DeclaredDeviation::Kind::kXFail ? Expectation::Kind::kXFail
                                                       : Expectation::Kind::kSkip;
    e.reason = d.reason;
    e.link = d.link;
    e.data_set_pattern = d.data_set_pattern;
    e.unless_cpu_has = d.unless_cpu_has;
    e.not_here = d.NotApplicableOn(cpu);
    out.entries.push_back(std::move(e));
  }
  return out;
}

}  // namespace

StatusOr<Expectations> ParseExpectations(std::string_view text, std::string_view source,
                                         const std::set<std::string>* cpu_features) {
  MM_ASSIGN_OR_RETURN(const DeviationsFile file, ParseDeviationsFile(text, source));
  return ExpectationsOf(file, cpu_features ? *cpu_features : RunningCpuFeatures());
}

StatusOr<Expectations> LoadExpectations(const std::filesystem::path& path) {
  MM_ASSIGN_OR_RETURN(const DeviationsFile file, LoadDeviationsFile(path));
  return ExpectationsOf(file, RunningCpuFeatures());
}

}  // namespace mm::conformance
