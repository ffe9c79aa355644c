// The plugin loader: backends from shared libraries. Loads a plugin written against
// mm/mm_backend_plugin.h (ABI version 1 or 2), checks it, and registers it in a BackendRegistry,
// where it is a backend like the built-in ones. Every tool offers this the same way:
// `--backend-lib PATH` (repeatable) and the MM_BACKEND_LIBS environment variable, both passed here.
#ifndef MM_BACKENDS_PLUGIN_PLUGIN_LOADER_H_
#define MM_BACKENDS_PLUGIN_PLUGIN_LOADER_H_

#include <span>
#include <string>
#include <vector>

#include "mm/engine/backend.h"
#include "mm/engine/registry.h"
#include "mm/engine/status.h"

namespace mm {

// The environment variable holding colon-separated plugin paths, loaded by every tool.
inline constexpr char kBackendLibsEnv[] = "MM_BACKEND_LIBS";

// Loads the plugin at each of `paths`, in order, and registers each under the name its table
// gives. The same file named twice (by any path) is loaded once. Stops at the first refusal and
// returns it, as INVALID_ARGUMENT (NOT_FOUND for a missing file) with a message naming the file
// and what is wrong: missing file, not a shared object, no entry symbol, another ABI version,
// a required function pointer that is NULL, an empty, malformed or already registered name, an
// invalid arithmetic declaration (version 2: naming the dtype), or a contract violation on the
// load-time probe (supports() answering outside the three values or without a required note;
// prepare() or execute() failing without a message). Plugins registered before a refusal stay
// registered. Libraries stay loaded until the process exits.
// A plugin's code runs first in a child process (PluginLoadOptions): loading it (its
// constructors), its entry, the table's checks, arithmetic() and the load-time probe; this process
// gets back what it keeps as data. A child that crashes, exits or hangs while loading is a refusal
// ("backend library 'PATH' crashed while loading (constructor or entry function): SIGSEGV (signal
// 11)", INVALID_ARGUMENT). One that does so on the probe leaves the plugin registered, as a backend
// whose creation fails saying what happened ("plugin 'PATH' crashed during the load probe: SIGABRT
// (signal 6)"), so a tool judges it (ERROR results) along with the others.
// The library is loaded into a process only where a backend of it is created (BackendRegistry::
// Create): in an isolated run, the workers. Signal handlers its constructors or entry replace
// there (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD) are reinstalled, and in this process
// it is said on stderr.
Status RegisterBackendLibraries(BackendRegistry& registry, std::span<const std::string> paths);

// How plugins are loaded.
struct PluginLoadOptions {
  // Load and probe the plugin in a child process (off: in this one, where a crash ends the tool).
  bool isolate_probe = true;
  // A child with no answer after this long is killed: the plugin "hung while loading" (a
  // refusal) or "hung during the load probe".
  double probe_timeout_seconds = 60;
};
Status RegisterBackendLibraries(BackendRegistry& registry, std::span<const std::string> paths,
                                const PluginLoadOptions& options);

// The absolute path of the shared object `backend` came from when it is a plugin backend (created
// from a registry RegisterBackendLibraries filled); empty for any other backend. What a printed
// "run this again" command needs as `--backend-lib PATH` to find the backend in a fresh process.
std::string PluginLibraryPath(const Backend& backend);

// The paths of MM_BACKEND_LIBS's value `env_value` (colon-separated; empty entries ignored;
// nullptr or empty gives none).
std::vector<std::string> BackendLibrariesFromEnv(const char* env_value);

// What a tool loads: the paths of MM_BACKEND_LIBS (read from the environment) followed by
// `flag_paths` (its --backend-lib arguments). One line for any tool:
//   MM_RETURN_IF_ERROR(RegisterBackendLibraries(registry, BackendLibrariesToLoad(flags)));
std::vector<std::string> BackendLibrariesToLoad(std::span<const std::string> flag_paths);

}  // namespace mm

#endif  // MM_BACKENDS_PLUGIN_PLUGIN_LOADER_H_
