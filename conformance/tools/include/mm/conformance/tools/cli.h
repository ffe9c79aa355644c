// The mm-conformance command line, as a function so tests can run it in-process: the options
// parsed, then the steps of conformance/session/session.h.
#ifndef MM_CONFORMANCE_TOOLS_CLI_H_
#define MM_CONFORMANCE_TOOLS_CLI_H_

#include <ostream>
#include <string>
#include <vector>

#include "mm/conformance/judging/verdict.h"
#include "mm/conformance/session/resume.h"
#include "mm/conformance/session/session.h"
#include "mm/engine/registry.h"

namespace mm::conformance {

// Runs mm-conformance with `args` (without the program name), printing to `out` and `err`, with
// what `env` gives (env.builtin required): the backends of env.builtin and the plugins of
// MM_BACKEND_LIBS (read from the environment) and --backend-lib. `args` starting with "merge"
// merge shard reports instead. Returns the exit code. Both streams are written through
// ConsoleStream (console_stream.h): no control character but mm's own newlines and tabs.
int RunConformanceCli(const std::vector<std::string>& args, const RunEnvironment& env,
                      std::ostream& out, std::ostream& err);

// RunConformanceCli with an environment of `builtin`, `env_onnx_data` (MM_ONNX_DATA) and
// `env_expectations` (MM_EXPECTATIONS), nullptr when unset; without a self-check (--self-check is
// then a usage error).
int RunConformanceCli(const std::vector<std::string>& args, const BackendRegistry& builtin,
                      const char* env_onnx_data, std::ostream& out, std::ostream& err,
                      const char* env_expectations = nullptr);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_TOOLS_CLI_H_
