// The plugin loader's registration: each library loaded (load_child.h) and registered as a
// backend (plugin_backend.h), or as one that cannot start when its load probe died.
#include "mm/backends/plugin/plugin_loader.h"

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>
#include <utility>

#include "library.h"
#include "load_child.h"
#include "mm/engine/io/paths.h"
#include "plugin_backend.h"

namespace mm {
namespace {

using plugin_internal::Library;
using plugin_internal::Loaded;

// Registers the plugin `library`, loaded from `path` (`absolute`), under its name.
Status RegisterLoaded(BackendRegistry& registry, const std::string& path,
                      const std::filesystem::path& absolute, Loaded library) {
  const std::string name = library.info.name;
  if (registry.Contains(name)) {
    return InvalidArgumentError("the backend name '" + name + "' is already taken by " +
                                registry.Description(name));
  }
  std::string description = library.info.description;
  description += (description.empty() ? "" : " ") + std::string("[plugin ") +
                 io::ReportedPath(path).string() + "]";
  const std::string died = library.died;
  auto shared = std::make_shared<Library>(path, absolute.string(), std::move(library.info),
                                          /*announce=*/true);
  // The library is loaded into a process only where a backend of it is created: in isolated
  // runs the workers, never the process that writes the reports.
  if (died.empty()) {
    return registry.Register(name, std::move(description),
                             [shared]() -> StatusOr<std::unique_ptr<Backend>> {
                               MM_RETURN_IF_ERROR(shared->Open().WithContext(shared->Who()));
                               return plugin_internal::MakePluginBackend(shared);
                             });
  }
  // Judged like any backend, and every result says why it could not run.
  return registry.Register(name, description + " (" + died + ")",
                           [died, path]() -> StatusOr<std::unique_ptr<Backend>> {
                             return InternalError("plugin '" + path + "' " + died);
                           });
}

}  // namespace

Status RegisterBackendLibraries(BackendRegistry& registry, std::span<const std::string> paths) {
  return RegisterBackendLibraries(registry, paths, PluginLoadOptions{});
}

Status RegisterBackendLibraries(BackendRegistry& registry, std::span<const std::string> paths,
                                const PluginLoadOptions& options) {
  std::set<std::filesystem::path> loaded;
  for (const std::string& path : paths) {
    auto fail = [&path](const Status& status) {
      return Status(status.code(), "backend library '" + path + "': " + status.message());
    };
    std::error_code ec;
    // dlopen searches the library path for a name without a slash; a path given here is a file.
    std::filesystem::path absolute = std::filesystem::absolute(path, ec);
    if (ec) return fail(InvalidArgumentError("invalid path: " + ec.message()));
    const std::filesystem::path canonical = std::filesystem::weakly_canonical(absolute, ec);
    if (!ec) {
      if (!loaded.insert(canonical).second) continue;
      absolute = canonical;
    }
    auto library = plugin_internal::Load(path, absolute, options);
    if (!library.ok()) return fail(library.status());
    if (!library->died_loading.empty()) {
      return InvalidArgumentError("backend library '" + path + "' " + library->died_loading);
    }
    const Status registered = RegisterLoaded(registry, path, absolute, *std::move(library));
    if (!registered.ok()) return fail(registered);
  }
  return OkStatus();
}

std::vector<std::string> BackendLibrariesFromEnv(const char* env_value) {
  std::vector<std::string> paths;
  if (env_value == nullptr) return paths;
  std::string_view rest(env_value);
  while (!rest.empty()) {
    const std::size_t colon = rest.find(':');
    std::string_view entry = rest.substr(0, colon);
    if (!entry.empty()) paths.emplace_back(entry);
    if (colon == std::string_view::npos) break;
    rest.remove_prefix(colon + 1);
  }
  return paths;
}

std::vector<std::string> BackendLibrariesToLoad(std::span<const std::string> flag_paths) {
  std::vector<std::string> paths = BackendLibrariesFromEnv(std::getenv(kBackendLibsEnv));
  paths.insert(paths.end(), flag_paths.begin(), flag_paths.end());
  return paths;
}

}  // namespace mm
