#include "mm/conformance/official/official_corpus.h"

#include <algorithm>
#include <map>
#include <set>
#include <system_error>

#include "mm/conformance/official/sha256.h"

namespace mm::conformance {
namespace {

namespace fs = std::filesystem;

bool IsHex64(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

}  // namespace

StatusOr<std::vector<OfficialCase>> ParseSha256Sums(std::string_view text) {
  std::map<std::string, OfficialCase> by_name;
  int line_number = 0;
  while (!text.empty()) {
    ++line_number;
    const auto eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (line.empty() || line.front() == '#') continue;
    auto error = [&](const std::string& what) {
      return InvalidArgumentError("SHA256SUMS line " + std::to_string(line_number) + ": " + what);
    };
    if (line.size() < 67 || !IsHex64(line.substr(0, 64)) || line.substr(64, 2) != "  ") {
      return error("expected '<64 lowercase hex>  ./<case>/<file>'");
    }
    std::string_view path = line.substr(66);
    if (path.substr(0, 2) == "./") path.remove_prefix(2);
    const auto slash = path.find('/');
    if (slash == std::string_view::npos || slash == 0 || slash + 1 == path.size()) {
      return error("path '" + std::string(path) + "' is not <case>/<file>");
    }
    OfficialCase& c = by_name[std::string(path.substr(0, slash))];
    c.name = std::string(path.substr(0, slash));
    c.files.push_back({std::string(path.substr(slash + 1)), std::string(line.substr(0, 64))});
  }
  if (by_name.empty()) return InvalidArgumentError("SHA256SUMS lists no file");
  std::vector<OfficialCase> cases;
  for (auto& [name, c] : by_name) cases.push_back(std::move(c));
  return cases;
}

const std::vector<OfficialCase>& OfficialCases() {
  static const std::vector<OfficialCase>* const cases = [] {
    auto parsed = ParseSha256Sums(OfficialSha256SumsText());
    // The text is embedded at build time and checked by a unit test; an empty list would make
    // every tripwire report "complete" vacuously, so it is a build defect worth stopping for.
    if (!parsed.ok() || parsed->empty()) std::abort();
    return new std::vector<OfficialCase>(std::move(parsed).value());
  }();
  return *cases;
}

const std::vector<OfficialCase>& FamilyOfficialCases() {
  static const std::vector<OfficialCase>* const cases = [] {
    auto parsed = ParseSha256Sums(FamilySha256SumsText());
    // As OfficialCases: an empty list would make the tripwire vacuous.
    if (!parsed.ok() || parsed->empty()) std::abort();
    return new std::vector<OfficialCase>(std::move(parsed).value());
  }();
  return *cases;
}

bool IsFamilyOfficialCase(std::string_view name) {
  const auto& cases = FamilyOfficialCases();
  return std::any_of(cases.begin(), cases.end(), [&](const auto& c) { return c.name == name; });
}

bool IsOfficialCase(std::string_view name) {
  auto named = [&](const auto& c) { return c.name == name; };
  return std::any_of(OfficialCases().begin(), OfficialCases().end(), named) ||
         std::any_of(FamilyOfficialCases().begin(), FamilyOfficialCases().end(), named);
}

int OfficialReport::Count(OfficialStatus::State state) const {
  return static_cast<int>(
      std::count_if(cases.begin(), cases.end(), [&](const auto& c) { return c.state == state; }));
}

std::string_view OfficialStateName(OfficialStatus::State state) {
  switch (state) {
    case OfficialStatus::State::kIntact:
      return "intact";
    case OfficialStatus::State::kMissing:
      return "missing";
    case OfficialStatus::State::kAltered:
      break;
  }
  return "altered";
}

std::string MissingOfficialHint(const OfficialReport& report) {
  const int missing = report.Count(OfficialStatus::State::kMissing);
  if (missing == 0) return "";
  // MatMul's cases: the family's are listed only when found (CheckOfficialCorpora).
  const auto matmul_cases =
      std::count_if(report.cases.begin(), report.cases.end(),
                    [](const auto& c) { return !IsFamilyOfficialCase(c.name); });
  return std::to_string(missing) + " of the " + std::to_string(matmul_cases) +
         " official ONNX MatMul node tests are missing (Debian's libonnx-testdata has 3 of them): "
         "scripts/fetch-onnx-testdata.sh in mm's source tree downloads all of them (ONNX v1.22.0, "
         "checked against mm's checksums) into third_party/onnx-testdata/node, a default data "
         "root; or point --data-dir or MM_ONNX_DATA at a copy of onnx/backend/test/data/node";
}

OfficialReport CheckOfficialCorpus(const std::vector<DataRoot>& roots,
                                   const std::vector<OfficialCase>& official) {
  OfficialReport report;
  for (const OfficialCase& c : official) {
    OfficialStatus status;
    status.name = c.name;
    auto dir = LocateCase(roots, c.name);
    if (!dir) {
      report.cases.push_back(std::move(status));
      continue;
    }
    status.dir = *dir;
    std::set<std::string> expected;
    for (const OfficialFile& file : c.files) {
      expected.insert(file.path);
      auto digest = Sha256HexOfFile(*dir / file.path);
      if (!digest.ok()) {
        status.problems.push_back(file.path + ": missing");
      } else if (*digest != file.sha256) {
        status.problems.push_back(file.path + ": SHA-256 " + digest->substr(0, 12) +
                                  "... differs from the official " + file.sha256.substr(0, 12) +
                                  "...");
      }
    }
    std::error_code ec;
    for (auto it = fs::recursive_directory_iterator(*dir, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_directory()) continue;
      const std::string relative = fs::relative(it->path(), *dir, ec).generic_string();
      if (!expected.count(relative)) status.problems.push_back(relative + ": not an official file");
    }
    if (ec) status.problems.push_back("cannot list the directory: " + ec.message());
    status.state =
        status.problems.empty() ? OfficialStatus::State::kIntact : OfficialStatus::State::kAltered;
    report.cases.push_back(std::move(status));
  }
  return report;
}

OfficialReport CheckOfficialCorpora(const std::vector<DataRoot>& roots) {
  OfficialReport report = CheckOfficialCorpus(roots);
  for (OfficialStatus& status : CheckOfficialCorpus(roots, FamilyOfficialCases()).cases) {
    if (status.state != OfficialStatus::State::kMissing) report.cases.push_back(std::move(status));
  }
  return report;
}

}  // namespace mm::conformance
