// Loading a plugin for the first time, private to backends/plugin: its file checked, then
// everything its code does at load time (constructors, entry, the table's checks, arithmetic(),
// the load-time probe) run in a child process that sends back data (load_records.h).
#ifndef MM_BACKENDS_PLUGIN_LOAD_CHILD_H_
#define MM_BACKENDS_PLUGIN_LOAD_CHILD_H_

#include <filesystem>
#include <string>

#include "load_records.h"
#include "mm/backends/plugin/plugin_loader.h"
#include "mm/engine/status.h"

namespace mm::plugin_internal {

// Loads and checks the library at `absolute` (given as `path`): its data, or the refusal (without
// the "backend library" prefix; a child that died or hung while loading is said in
// Loaded::died_loading). The plugin's code runs only in the load child unless
// options.isolate_probe is off.
StatusOr<Loaded> Load(const std::string& path, const std::filesystem::path& absolute,
                      const PluginLoadOptions& options);

}  // namespace mm::plugin_internal

#endif  // MM_BACKENDS_PLUGIN_LOAD_CHILD_H_
