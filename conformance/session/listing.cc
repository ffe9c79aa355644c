#include <algorithm>
#include <iomanip>

#include "mm/conformance/report/escape.h"
#include "mm/conformance/session/session.h"

namespace mm::conformance {
namespace {

// The data roots, the cases (with their official state), the skipped and shadowed models.
void PrintCases(const Catalog& catalog, const OfficialReport& official, std::ostream& out) {
  out << "data roots (first wins):\n";
  if (catalog.roots.empty()) out << "  (none)\n";
  for (const DataRoot& root : catalog.roots) {
    out << "  " << PrintableText(root.path.string()) << " (" << root.origin << ")\n";
  }
  std::size_t width = 4;
  for (const CaseEntry& c : catalog.cases) width = std::max(width, c.name.size());
  const bool family = std::any_of(catalog.cases.begin(), catalog.cases.end(),
                                  [](const CaseEntry& c) { return c.op != family::Op::kMatMul; });
  out << (family ? "cases of MatMul and its family (" : "MatMul cases (") << catalog.cases.size()
      << "):\n";
  for (const CaseEntry& c : catalog.cases) {
    out << "  " << std::left << std::setw(static_cast<int>(width + 2)) << PrintableText(c.name);
    if (c.model) {
      out << std::setw(9) << DTypeName(c.model->a.dtype) << "opset " << c.model->opset
          << " (MatMul-" << c.model->matmul_version << "), " << c.data_sets.size() << " data set"
          << (c.data_sets.size() == 1 ? "" : "s") << ", ";
    } else if (c.family) {
      const std::string dtype = c.family->inputs.empty()
                                    ? ""
                                    : std::string(DTypeName(c.family->inputs[0].declared.dtype));
      out << std::setw(9) << dtype << "opset " << c.family->opset << " ("
          << family::OpName(c.family->op) << "-" << c.family->version << "), " << c.data_sets.size()
          << " data set" << (c.data_sets.size() == 1 ? "" : "s") << ", ";
    } else {
      out << "INVALID (" << PrintableText(c.error.message()) << "), ";
    }
    out << PrintableText(c.dir_is == CaseEntry::DirIs::kNone ? c.source() : c.dir());
    if (IsOfficialCase(c.name)) {
      for (const OfficialStatus& s : official.cases) {
        if (s.name == c.name) out << " [official: " << OfficialStateName(s.state) << "]";
      }
    }
    out << "\n";
  }
  out << "skipped (" << catalog.skipped.size() << "):\n";
  for (const SkippedModel& s : catalog.skipped) {
    out << "  " << PrintableText(s.name) << ": " << PrintableText(s.reason) << " ("
        << PrintableText(s.dir.string()) << ")\n";
  }
  if (!catalog.shadowed.empty()) {
    out << "shadowed (" << catalog.shadowed.size() << "):\n";
    for (const ShadowedCase& s : catalog.shadowed) {
      out << "  " << PrintableText(s.name) << " at " << PrintableText(s.dir.string()) << " ("
          << PrintableText(s.winner) << " wins)\n";
    }
  }
}

void PrintOfficial(const OfficialReport& official, std::ostream& out) {
  // MatMul's 7 are counted; the family's cases found (CheckOfficialCorpora) on a line of their own.
  int cases = 0, intact = 0, family = 0, family_intact = 0;
  std::size_t width = 20;
  for (const OfficialStatus& s : official.cases) {
    const bool is_intact = s.state == OfficialStatus::State::kIntact;
    (IsFamilyOfficialCase(s.name) ? family : cases) += 1;
    (IsFamilyOfficialCase(s.name) ? family_intact : intact) += is_intact ? 1 : 0;
    width = std::max(width, s.name.size() + 2);
  }
  out << "official corpus: " << intact << " of " << cases << " intact\n";
  if (family > 0) {
    out << "official family corpus: " << family_intact << " of " << family << " found intact\n";
  }
  for (const OfficialStatus& s : official.cases) {
    out << "  " << std::left << std::setw(static_cast<int>(width)) << s.name
        << OfficialStateName(s.state);
    if (!s.dir.empty()) out << " at " << PrintableText(s.dir.string());
    for (const std::string& p : s.problems) out << "\n    " << PrintableText(p);
    out << "\n";
  }
  if (const std::string hint = MissingOfficialHint(official); !hint.empty()) {
    out << "  " << hint << "\n";
  }
}

// One backend's line: its name, padded to `width`, and its description. At least two spaces follow
// the name, whatever its length: a name never runs into its description.
void PrintBackendLine(std::string_view name, std::string_view description, std::size_t width,
                      std::ostream& out) {
  out << "  " << std::left << std::setw(static_cast<int>(width + 2)) << PrintableText(name)
      << PrintableText(description) << "\n";
}

void PrintBackends(const BackendRegistry& registry, const std::vector<std::string>& backends,
                   std::ostream& out) {
  std::string selected;
  for (const std::string& b : backends) selected += (selected.empty() ? "" : ", ") + b;
  out << "backends (selected: " << selected << "):\n";
  const std::vector<std::string> names = registry.Names();
  const std::vector<std::string> unavailable = registry.UnavailableNames();
  // The column fits the longest name of either list (onnxruntime-web, a plugin's 64 characters).
  std::size_t width = 10;
  for (const auto* list : {&names, &unavailable}) {
    for (const std::string& name : *list) width = std::max(width, name.size());
  }
  for (const std::string& name : names) {
    PrintBackendLine(name, registry.Description(name), width, out);
  }
  if (!unavailable.empty()) {
    out << "backends not available on this machine (" << unavailable.size() << "):\n";
    for (const std::string& name : unavailable) {
      PrintBackendLine(name, registry.Description(name), width, out);
      PrintBackendLine("", "not available: " + registry.UnavailableReason(name), width, out);
    }
  }
}

}  // namespace

void PrintList(const ConformanceRun& run, std::ostream& out) {
  PrintCases(run.catalog, run.official, out);
  PrintOfficial(run.official, out);
  PrintBackends(run.registry, run.backends, out);
}

}  // namespace mm::conformance
