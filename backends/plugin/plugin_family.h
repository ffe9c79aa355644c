// The family backend a plugin is (version 3 of the ABI), private to backends/plugin: SupportsOp,
// DeclaredArithmetic, Compute and Implementation answered by the plugin's op_ functions, every
// answer checked. A plugin of versions 1 and 2, or of version 3 without op_supports, computes
// MatMul only and is refused for the family with a reason naming its ABI version.
#ifndef MM_BACKENDS_PLUGIN_PLUGIN_FAMILY_H_
#define MM_BACKENDS_PLUGIN_PLUGIN_FAMILY_H_

#include <memory>

#include "library.h"
#include "mm/family/backend.h"

namespace mm::plugin_internal {

// The family backend of `library` (Open() has loaded it into this process).
std::unique_ptr<family::FamilyBackend> MakePluginFamily(std::shared_ptr<Library> library);

// The load probe's part for the family: op_supports() for every description of FamilyDescs(), then
// op_compute() once, on a small problem of the first description it supports at its operator's
// newest version; the first contract violation (an answer out of range or without its note, a
// failure without a message, a write outside Y, a changed input) as the error. The plugin's own
// failures with a message are not violations. OK for a plugin that computes MatMul only.
Status ProbeFamily(Library& library);

}  // namespace mm::plugin_internal

#endif  // MM_BACKENDS_PLUGIN_PLUGIN_FAMILY_H_
