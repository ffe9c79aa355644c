// The Backend a plugin is, private to backends/plugin: Supports, Prepare and the declared
// arithmetic answered by the plugin's library (library.h).
#ifndef MM_BACKENDS_PLUGIN_PLUGIN_BACKEND_H_
#define MM_BACKENDS_PLUGIN_PLUGIN_BACKEND_H_

#include <memory>

#include "library.h"
#include "mm/engine/backend.h"

namespace mm::plugin_internal {

// A backend of `library`, which Open() has loaded into this process. PluginLibraryPath
// (plugin_loader.h) recognises it.
std::unique_ptr<Backend> MakePluginBackend(std::shared_ptr<Library> library);

}  // namespace mm::plugin_internal

#endif  // MM_BACKENDS_PLUGIN_PLUGIN_BACKEND_H_
