#include "mm/conformance/report/output_file.h"

#include "mm/engine/io/output_file.h"

namespace mm::conformance {

namespace fs = std::filesystem;

Status WriteFileAtomically(const fs::path& path, const std::function<void(std::ostream&)>& write) {
  return io::WriteFileAtomically(path, write);
}

Status WriteFileAtomically(const fs::path& path, std::string_view content) {
  return io::WriteFileAtomically(path, content);
}

bool SameFile(const fs::path& a, const fs::path& b) {
  std::error_code ec_a, ec_b;
  if (fs::exists(a, ec_a) && fs::exists(b, ec_b)) {
    const bool same = fs::equivalent(a, b, ec_a);
    return !ec_a && same;
  }
  // One or both do not exist (yet): compare where they would be created.
  const fs::path ca = fs::weakly_canonical(fs::absolute(a, ec_a), ec_a);
  const fs::path cb = fs::weakly_canonical(fs::absolute(b, ec_b), ec_b);
  return !ec_a && !ec_b && ca == cb;
}

Status CheckDistinctOutputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    for (std::size_t j = i + 1; j < outputs.size(); ++j) {
      const auto& [option_a, a] = outputs[i];
      const auto& [option_b, b] = outputs[j];
      if (a.empty() || b.empty() || !SameFile(a, b)) continue;
      return InvalidArgumentError(option_a + " and " + option_b + " name the same file ('" + a +
                                  "', '" + b + "'): each report needs its own");
    }
  }
  return OkStatus();
}

}  // namespace mm::conformance
