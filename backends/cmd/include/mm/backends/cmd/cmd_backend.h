// Backends that are driver programs: a MatMul of another runtime (numpy, PyTorch, ...) judged by
// mm through the runtime protocol (runtime_protocol.h, docs/runtime-protocol.md). Each backend
// instance starts its own driver (in an isolated run: each worker its own), says hello, and turns
// every product into a request; its family() computes the operators of MatMul's family the hello
// declares (protocol 2, family_protocol.h) and refuses the others with the hello's reason. A driver
// is treated like an isolated worker: a crash, a hang past the timeout, memory past the limit, a
// malformed or truncated frame, a reply of the wrong shape or dtype, or output nobody asked for is
// an error for that call, and the driver is started anew for the next one. A stop request
// (process::StopRequested) ends a call or a hello within 100 ms: CANCELLED, the driver's process
// group killed and reaped.
#ifndef MM_BACKENDS_CMD_CMD_BACKEND_H_
#define MM_BACKENDS_CMD_CMD_BACKEND_H_

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mm/backends/cmd/runtime_protocol.h"
#include "mm/engine/backend.h"
#include "mm/engine/registry.h"
#include "mm/engine/status.h"

namespace mm::runtime {

// How long a driver may take and how much memory it may use. Process-wide: the tools set them
// from --timeout and --memory-limit before any backend is created; a backend keeps the values it
// was created with.
struct DriverLimits {
  double timeout_seconds = 60;          // A start (with its hello) or a call taking longer: killed.
  std::int64_t memory_limit_bytes = 0;  // Resident memory past it: killed. 0: no limit.
};
void SetDriverLimits(const DriverLimits& limits);
DriverLimits GetDriverLimits();

// A driver: the backend's name and the command that starts it.
struct DriverCommand {
  std::string name;               // The backend's name in reports and --backend.
  std::string command;            // As given: "python3 my_driver.py --fast".
  std::vector<std::string> argv;  // `command` split into words (SplitCommand).
  bool shipped = false;           // One of the drivers mm ships (found by its name alone).
  // `command` as it runs from any directory (AbsoluteCommand), for replay lines; empty: `command`.
  std::string absolute{};
  // Its calls' and start's timeout, when above 0; else the process-wide one (DriverLimits).
  double timeout_seconds = 0;
};

// `argv` as one command for SplitCommand that runs the same from any directory: a program named
// by a relative path ("./venv/bin/python", not "python3", which PATH finds) and every later word
// naming an existing file or folder relative to the working directory ("my_driver.py") made
// absolute, lexically (a symbolic link stays one: a virtual environment's python keeps its
// environment); words quoted where SplitCommand needs it.
std::string AbsoluteCommand(const std::vector<std::string>& argv);

// Splits `command` into words as a POSIX shell does (blanks separate; '...' and "..." quote;
// a backslash escapes the next character, inside double quotes only before $ ` " \ or a
// newline), with no expansion of variables, globs or tildes. INVALID_ARGUMENT for an unclosed
// quote or an empty command.
StatusOr<std::vector<std::string>> SplitCommand(std::string_view command);

// Parses a --backend-cmd value "NAME=COMMAND" (NAME as plugin names: 1 to 64 of [A-Za-z0-9_-]).
// INVALID_ARGUMENT naming the option and what is wrong.
StatusOr<DriverCommand> ParseBackendCmd(std::string_view text);

// Starts the driver of `command` and says hello: the backend, or why it cannot run (the driver's
// end, its stderr's last lines, or what was wrong with its hello).
StatusOr<std::unique_ptr<Backend>> StartCommandBackend(const DriverCommand& command);

// The command of a backend started from a driver given by --backend-cmd, with its relative paths
// made absolute ("python3 /home/me/my_driver.py"); empty for any other backend (a shipped
// driver's included: its name finds it). What a replay line needs as `--backend-cmd NAME=COMMAND`.
std::string DriverCommandOf(const Backend& backend);

// The python3 that runs mm's Python drivers: $MM_PYTHON, else /usr/bin/python3 (Debian's).
std::string PythonPath();

// The folder of mm's Python drivers and SDK (the package mm_runtime/): $MM_RUNTIMES_DIR, else the
// installed one beside the tools (../share/mm/runtimes/python), else the source tree's.
std::filesystem::path DriversDir();

// The runtime's own time for the last call of `primitive` (the y answer's "seconds": the
// runtime's call alone, the pipe left out), when `primitive` is a driver's and its last call was
// answered with a time; else nullopt. What mm-bench times a runtime by.
std::optional<double> LastRuntimeSeconds(const MatMulPrimitive& primitive);

// Registers each "NAME=COMMAND" of `specs` (--backend-cmd values, in order): its driver is started
// once here for its hello (the registry's description names its runtime and version), then one
// is started per backend instance. Stops at the first failure: INVALID_ARGUMENT
// "--backend-cmd NAME: ..." (a malformed value, a name already taken, a driver that fails to
// start or says a malformed hello). A driver whose hello a stop request (process::StopRequested)
// cut short is registered unprobed (its description says so), the driver killed at once.
Status RegisterCommandBackends(BackendRegistry& registry, std::span<const std::string> specs);

// The drivers mm ships (backends/runtimes/python: numpy, torch; backends/runtimes/js), each
// registered on request (BackendRegistry::Selection::kOnRequest: run when named) as available
// (the description naming its runtime's version) or unavailable with why (no interpreter, the
// module or npm package not installed, the driver's file not found). Python is $MM_PYTHON or
// /usr/bin/python3 (Debian's, whose modules python3-numpy and python3-torch install); the drivers'
// folder $MM_RUNTIMES_DIR, else the installed one beside the tools (../share/mm/runtimes/python),
// else the source tree's. The python3 is asked once per process which modules it has. The Node.js
// drivers (onnxruntime, onnxruntime-web, tfjs, tfjs-wasm) likewise: node is $MM_NODE or
// /usr/bin/node; their npm packages are found in $MM_NPM_DIR, else the installed
// ../share/mm/runtimes/js/node_modules, else the checkout's build/runtimes-npm/node_modules
// (scripts/runtimes-npm.sh), each version read from its package.json; their folder is
// $MM_JS_RUNTIMES_DIR, else the installed one, else the source tree's.
Status RegisterShippedDrivers(BackendRegistry& registry);

// The names of the drivers RegisterShippedDrivers registers ("numpy", ..., "tfjs-wasm"), in its
// order: what a build without them (MM_WITH_RUNTIMES=OFF) lists as left out.
std::vector<std::string> ShippedDriverNames();

}  // namespace mm::runtime

#endif  // MM_BACKENDS_CMD_CMD_BACKEND_H_
