// The drivers mm ships (backends/runtimes/python and backends/runtimes/js) as one table, and their
// registration: one path for every language, each language saying how its drivers are run and
// how their package's version is found.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>

#include "driver_process.h"
#include "mm/backends/cmd/cmd_backend.h"
#include "mm/engine/io/input_file.h"
#include "mm/engine/io/json.h"
#include "mm/engine/io/paths.h"
#include "mm/engine/process/process.h"

namespace mm::runtime {
namespace {

enum class Language { kPython, kNode };

struct ShippedDriver {
  const char* name;      // The backend's name.
  Language language;     // What runs the script.
  const char* script;    // In that language's drivers' folder.
  const char* argument;  // Given to the script ("" for none).
  const char* package;   // Whose version the backend reports: the Python module, the npm package.
  const char* debian;    // The Debian package of a Python module ("" for an npm package).
  const char* what;
};

constexpr ShippedDriver kShippedDrivers[] = {
    {"numpy", Language::kPython, "numpy_driver.py", "", "numpy", "python3-numpy",
     "numpy.matmul into mm's Y buffer (out=)"},
    {"torch", Language::kPython, "torch_driver.py", "", "torch", "python3-torch",
     "torch.matmul on the CPU into mm's Y buffer (out=), at mm's thread count"},
    // Their npm packages are installed by scripts/setup.sh (npm ci --ignore-scripts, from the
    // committed package-lock.json).
    {"onnxruntime", Language::kNode, "onnxruntime_driver.js", "", "onnxruntime-node", "",
     "ONNX Runtime for Node.js, CPU execution provider, one session per dtype"},
    {"onnxruntime-web", Language::kNode, "onnxruntime_web_driver.js", "", "onnxruntime-web", "",
     "ONNX Runtime Web's wasm backend under Node.js, one session per dtype"},
    {"tfjs", Language::kNode, "tfjs_driver.js", "cpu", "@tensorflow/tfjs-backend-cpu", "",
     "TensorFlow.js tf.matMul on its cpu backend"},
    {"tfjs-wasm", Language::kNode, "tfjs_driver.js", "wasm", "@tensorflow/tfjs-backend-wasm", "",
     "TensorFlow.js tf.matMul on its wasm backend (XNNPACK)"},
};

// How the drivers of one language run: the program, their folder, and what a driver's package
// is at (its version, or why the driver cannot run: the program or the package missing).
struct Runtime {
  const char* language;             // "Python", as descriptions say "the Python driver".
  std::string program;              // As commands show it.
  std::vector<std::string> prefix;  // The argv before the script.
  std::filesystem::path dir;        // The drivers' folder.
  const char* dir_variable;         // The variable that sets it.
  std::function<StatusOr<std::string>(const ShippedDriver&)> version;
};

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

// The installed mm's share/mm/runtimes/SUB when `marker` is there, else `source`.
std::filesystem::path InstalledOr(const char* sub, const char* marker, const char* source) {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto installed = exe.parent_path().parent_path() / "share/mm/runtimes" / sub;
    if (std::filesystem::exists(installed / marker, ec)) return installed;
  }
  return source;
}

// Prints "MODULE VERSION" per module named, "-" for a version where it is not installed, without
// importing it (importing torch takes a second).
constexpr char kProbe[] =
    "import importlib.util as u, importlib.metadata as m, sys\n"
    "for n in sys.argv[1:]:\n"
    "    try:\n"
    "        v = m.version(n) if u.find_spec(n) else '-'\n"
    "    except Exception:\n"
    "        v = '?'\n"
    "    print(n, v)\n";

// Module -> version as "MODULE VERSION" lines give them.
std::map<std::string, std::string> VersionLines(const std::string& out) {
  std::map<std::string, std::string> versions;
  std::size_t at = 0;
  while (at < out.size()) {
    const std::size_t end = std::min(out.find('\n', at), out.size());
    const std::string line = out.substr(at, end - at);
    if (const std::size_t space = line.find(' '); space != std::string::npos) {
      versions[line.substr(0, space)] = line.substr(space + 1);
    }
    at = end + 1;
  }
  return versions;
}

// Module -> version ("-": not installed) as `python` reports them, or why it could not say;
// asked once per process and python.
StatusOr<std::map<std::string, std::string>> ModuleVersions(const std::string& python) {
  static std::mutex mutex;
  static std::map<std::string, StatusOr<std::map<std::string, std::string>>> cache;
  std::lock_guard lock(mutex);
  if (auto it = cache.find(python); it != cache.end()) return it->second;
  std::vector<std::string> argv = {python, "-c", kProbe};
  for (const ShippedDriver& driver : kShippedDrivers) {
    if (driver.language == Language::kPython) argv.push_back(driver.package);
  }
  StatusOr<std::map<std::string, std::string>> versions = std::map<std::string, std::string>();
  auto program = process::Program::Start(argv);
  if (!program.ok()) {
    versions = program.status();
  } else {
    DriverProcess probe(*std::move(program), DriverLimits{10, 0});
    probe.StartClock();
    std::string out;
    char c;
    while (probe.Read(std::as_writable_bytes(std::span(&c, 1))).ok()) out += c;
    versions = VersionLines(out);
    if (versions->empty()) {
      versions = FailedPreconditionError(python + " did not run" + probe.StderrTail());
    }
  }
  return cache.emplace(python, versions).first->second;
}

// The Python drivers: run by PythonPath(), each needing a Debian Python module.
Runtime PythonRuntime() {
  const std::string python = PythonPath();
  std::error_code ec;
  StatusOr<std::map<std::string, std::string>> versions =
      std::filesystem::exists(python, ec) ? ModuleVersions(python)
                                          : NotFoundError(python + " not found (set MM_PYTHON)");
  auto version = [python, versions](const ShippedDriver& shipped) -> StatusOr<std::string> {
    if (!versions.ok()) return versions.status();
    const auto it = versions->find(shipped.package);
    if (it == versions->end() || it->second == "-") {
      return NotFoundError(std::string("the Python module ") + shipped.package +
                           " is not installed for " + python + " (Debian package " +
                           shipped.debian + "; scripts/setup.sh installs it)");
    }
    return it->second;
  };
  return {"Python", python, {python}, DriversDir(), "MM_RUNTIMES_DIR", version};
}

// The version in node_modules/PACKAGE/package.json, read without loading the package.
StatusOr<std::string> NpmVersion(const std::filesystem::path& modules, const std::string& package) {
  // Named as reports name paths: relative where it is in the checkout or the working directory.
  const std::filesystem::path file =
      io::ReportedPath(modules / package / "package.json", MM_SOURCE_DIR);
  MM_ASSIGN_OR_RETURN(std::string text,
                      io::ReadInputFile(file, io::InputKind{"npm package.json", io::kMiB}));
  MM_ASSIGN_OR_RETURN(nlohmann::json json, io::ParseJson(text, file.string()));
  if (!json.is_object() || !json.contains("version") || !json["version"].is_string()) {
    return InvalidArgumentError(file.string() + ": no \"version\" string");
  }
  return json["version"].get<std::string>();
}

// The Node.js drivers: run by $MM_NODE or /usr/bin/node, each needing an npm package.
Runtime NodeRuntime() {
  const std::string node = EnvOr("MM_NODE", "/usr/bin/node");
  const std::filesystem::path dir = EnvOr(
      "MM_JS_RUNTIMES_DIR", InstalledOr("js", "mm_runtime.js", MM_JS_RUNTIMES_SOURCE_DIR).string());
  const std::filesystem::path modules =
      EnvOr("MM_NPM_DIR", InstalledOr("js/node_modules", "", MM_NPM_SOURCE_DIR).string());
  auto version = [node, modules](const ShippedDriver& shipped) -> StatusOr<std::string> {
    std::error_code ec;
    if (!std::filesystem::exists(node, ec)) {
      return NotFoundError(node + " not found (Debian package nodejs; or set MM_NODE)");
    }
    StatusOr<std::string> version = NpmVersion(modules, shipped.package);
    if (version.ok()) return version;
    return NotFoundError(
        std::string("the npm package ") + shipped.package + " is not installed in " +
        io::ReportedPath(modules, MM_SOURCE_DIR).string() +
        " (scripts/setup.sh installs it; or set MM_NPM_DIR): " + version.status().message());
  };
  // env sets NODE_PATH, so the driver finds the packages wherever they were installed.
  return {"Node.js",
          node,
          {"/usr/bin/env", "NODE_PATH=" + modules.string(), node},
          dir,
          "MM_JS_RUNTIMES_DIR",
          version};
}

// `shipped` registered on request, or as unavailable with why.
Status RegisterShipped(BackendRegistry& registry, const ShippedDriver& shipped,
                       const Runtime& runtime) {
  const std::filesystem::path script = runtime.dir / shipped.script;
  const std::string shown = io::ReportedPath(script, MM_SOURCE_DIR).string();
  std::string what = std::string(shipped.what) + " through the " + runtime.language + " driver " +
                     shown + " (runtime protocol; run when named: --backend " + shipped.name + ")";
  const StatusOr<std::string> version = runtime.version(shipped);
  std::error_code ec;
  if (!version.ok()) {
    return registry.RegisterUnavailable(shipped.name, what, version.status().message());
  }
  if (!std::filesystem::exists(script, ec)) {
    return registry.RegisterUnavailable(
        shipped.name, what,
        "the driver " + shown + " is not there (set " + runtime.dir_variable + ")");
  }
  what = std::string(shipped.package) + " " + *version + ": " + what;
  std::vector<std::string> argv = runtime.prefix;
  argv.push_back(script.string());
  std::string command = runtime.program + " " + shown;
  if (*shipped.argument != '\0') {
    argv.push_back(shipped.argument);
    command += std::string(" ") + shipped.argument;
  }
  const DriverCommand driver{shipped.name, command, argv, /*shipped=*/true};
  return registry.Register(
      shipped.name, what,
      [driver]() -> StatusOr<std::unique_ptr<Backend>> { return StartCommandBackend(driver); },
      BackendRegistry::Selection::kOnRequest);
}

}  // namespace

std::string PythonPath() { return EnvOr("MM_PYTHON", "/usr/bin/python3"); }

std::filesystem::path DriversDir() {
  return EnvOr("MM_RUNTIMES_DIR",
               InstalledOr("python", "mm_runtime/__init__.py", MM_RUNTIMES_SOURCE_DIR).string());
}

std::vector<std::string> ShippedDriverNames() {
  std::vector<std::string> names;
  for (const ShippedDriver& driver : kShippedDrivers) names.emplace_back(driver.name);
  return names;
}

Status RegisterShippedDrivers(BackendRegistry& registry) {
  const Runtime python = PythonRuntime(), node = NodeRuntime();
  for (const ShippedDriver& shipped : kShippedDrivers) {
    MM_RETURN_IF_ERROR(
        RegisterShipped(registry, shipped, shipped.language == Language::kPython ? python : node));
  }
  return OkStatus();
}

}  // namespace mm::runtime
