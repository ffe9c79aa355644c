#include "mm/engine/testing/cli_run.h"

#include <sstream>

namespace mm::testing {

CliRun RunCli(const CliEntry& entry, const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const int code = entry(args, out, err);
  return {code, out.str(), err.str()};
}

}  // namespace mm::testing
