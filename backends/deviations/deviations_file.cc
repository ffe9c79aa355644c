#include "mm/backends/deviations/deviations_file.h"

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "mm/engine/io/input_file.h"
#include "mm/engine/io/json.h"
#include "mm/engine/io/paths.h"
#include "mm/engine/io/text.h"

namespace mm {
namespace {

// The alternatives of one "unless_cpu_has" item: "avx512_vnni|avx_vnni" is two, "avx512bw" one.
std::vector<std::string_view> Alternatives(std::string_view item) {
  std::vector<std::string_view> out;
  for (std::size_t start = 0;;) {
    const std::size_t bar = item.find('|', start);
    out.push_back(item.substr(start, bar == std::string_view::npos ? bar : bar - start));
    if (bar == std::string_view::npos) return out;
    start = bar + 1;
  }
}

// The entry's "unless_cpu_has" (absent: every CPU) into `features`.
Status CpuFeaturesOf(const nlohmann::json& item, const std::string& entry,
                     std::vector<std::string>& features) {
  if (!item.contains("unless_cpu_has")) return OkStatus();
  const nlohmann::json& list = item.at("unless_cpu_has");
  const auto bad = [](const nlohmann::json& f) {
    if (!f.is_string()) return true;
    const std::vector<std::string_view> names = Alternatives(f.get_ref<const std::string&>());
    return std::any_of(names.begin(), names.end(), [](std::string_view n) { return n.empty(); });
  };
  if (!list.is_array() || list.empty() || std::any_of(list.begin(), list.end(), bad)) {
    return InvalidArgumentError(entry +
                                ": \"unless_cpu_has\" must be a non-empty array of CPU feature "
                                "names as /proc/cpuinfo's flags give them (e.g. [\"avx512bw\"]), "
                                "an item naming alternatives as \"avx512_vnni|avx_vnni\"");
  }
  for (const nlohmann::json& f : list) features.push_back(f.get<std::string>());
  return OkStatus();
}

// The entry `item` (named `entry` in messages) as a DeclaredDeviation.
StatusOr<DeclaredDeviation> EntryOf(const nlohmann::json& item, const std::string& entry) {
  static const std::set<std::string> kKeys = {"case",   "backend", "data_set",      "expect",
                                              "reason", "link",    "unless_cpu_has"};
  for (const auto& [key, value] : item.items()) {
    if (!kKeys.count(key)) {
      return InvalidArgumentError(entry + ": unknown key \"" + key +
                                  "\" (allowed: case, backend, data_set, expect, reason, link, "
                                  "unless_cpu_has)");
    }
  }
  auto text_of = [&](const char* key, std::string& field) -> Status {
    if (!item.contains(key) || !item.at(key).is_string() ||
        item.at(key).get_ref<const std::string&>().empty()) {
      return InvalidArgumentError(
          entry + ": \"" + key + "\" must be a non-empty string" +
          (std::string_view(key) == "reason" || std::string_view(key) == "link"
               ? " (every known failure says why and where it is tracked)"
               : ""));
    }
    field = item.at(key).get<std::string>();
    return OkStatus();
  };
  DeclaredDeviation e;
  std::string kind;
  MM_RETURN_IF_ERROR(text_of("case", e.case_pattern));
  MM_RETURN_IF_ERROR(text_of("backend", e.backend_pattern));
  if (item.contains("data_set")) MM_RETURN_IF_ERROR(text_of("data_set", e.data_set_pattern));
  MM_RETURN_IF_ERROR(text_of("expect", kind));
  MM_RETURN_IF_ERROR(text_of("reason", e.reason));
  MM_RETURN_IF_ERROR(text_of("link", e.link));
  // A NUL would cut a glob short at fnmatch (so "*\u0000name" matched every result).
  for (const auto& [key, pattern] : {std::pair{"case", &e.case_pattern},
                                     {"backend", &e.backend_pattern},
                                     {"data_set", &e.data_set_pattern}}) {
    MM_RETURN_IF_ERROR(io::CheckPatternText(*pattern, entry + ": the \"" + key + "\" pattern"));
  }
  MM_RETURN_IF_ERROR(CpuFeaturesOf(item, entry, e.unless_cpu_has));
  if (kind == "XFAIL") {
    e.kind = DeclaredDeviation::Kind::kXFail;
  } else if (kind == "SKIP") {
    e.kind = DeclaredDeviation::Kind::kSkip;
  } else {
    return InvalidArgumentError(entry + ": \"expect\" is \"" + kind +
                                "\"; it must be \"XFAIL\" or \"SKIP\"");
  }
  return e;
}

}  // namespace

std::string DeclaredDeviation::NotApplicableOn(const std::set<std::string>& cpu_features) const {
  if (unless_cpu_has.empty()) return "";
  std::string has;
  for (const std::string& item : unless_cpu_has) {
    const std::vector<std::string_view> names = Alternatives(item);
    const auto found = std::find_if(names.begin(), names.end(), [&](std::string_view n) {
      return cpu_features.count(std::string(n)) > 0;
    });
    if (found == names.end()) return "";
    has += (has.empty() ? "" : ", ") + std::string(*found);
  }
  return "this CPU has " + has;
}

const std::set<std::string>& RunningCpuFeatures() {
  static const std::set<std::string> features = [] {
    std::set<std::string> out;
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
      if (!line.starts_with("flags")) continue;
      std::istringstream words(line.substr(line.find(':') + 1));
      for (std::string word; words >> word;) out.insert(word);
      break;
    }
    return out;
  }();
  return features;
}

std::string_view DeclaredDeviationKindName(DeclaredDeviation::Kind kind) {
  return kind == DeclaredDeviation::Kind::kXFail ? "XFAIL" : "SKIP";
}

StatusOr<DeviationsFile> ParseDeviationsFile(std::string_view text, std::string_view source) {
  const std::string where(source);
  MM_ASSIGN_OR_RETURN(const nlohmann::json j, io::ParseJson(text, where));
  if (!j.is_object() || !j.contains("expectations") || !j.at("expectations").is_array()) {
    return InvalidArgumentError(where + ": expected an object {\"expectations\": [...]}");
  }
  for (const auto& [key, value] : j.items()) {
    if (key != "expectations") {
      return InvalidArgumentError(where + ": unknown key \"" + key + "\" (only \"expectations\")");
    }
  }
  DeviationsFile out;
  out.source = where;
  const auto& list = j.at("expectations");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& item = list[i];
    std::string entry = where + ": entry " + std::to_string(i);
    if (!item.is_object()) return InvalidArgumentError(entry + " is not an object");
    if (item.contains("case") && item.at("case").is_string()) {
      entry += " (case \"" + io::ConsoleText(item.at("case").get<std::string>()) + "\")";
    }
    MM_ASSIGN_OR_RETURN(DeclaredDeviation e, EntryOf(item, entry));
    out.entries.push_back(std::move(e));
  }
  return out;
}

StatusOr<DeviationsFile> LoadDeviationsFile(const std::filesystem::path& path) {
  MM_ASSIGN_OR_RETURN(const std::string text, io::ReadInputFile(path, io::kExpectationsFile));
  // Named in messages and reports as reports name paths (relative in the working directory).
  return ParseDeviationsFile(text, io::ReportedPath(path).string());
}

}  // namespace mm
