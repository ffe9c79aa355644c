// A plugin's shared library inside a process, private to backends/plugin: loading it with the
// signal handlers mm relies on guarded, the library object every backend of it shares (its table,
// the lock that keeps calls one at a time), and the primitive wrapping a prepared handle.
#ifndef MM_BACKENDS_PLUGIN_LIBRARY_H_
#define MM_BACKENDS_PLUGIN_LIBRARY_H_

#include <sys/types.h>

#include <memory>
#include <mutex>
#include <string>

#include "abi_adapter.h"
#include "mm/engine/backend.h"
#include "mm/engine/matmul_plan.h"
#include "mm/engine/status.h"
#include "mm/mm_backend_plugin.h"

namespace mm::plugin_internal {

// Loads the library at `absolute` into this process (its constructors run; RTLD_NOW: an
// unresolved symbol is a refusal now, not a crash in the middle of a run), calls its entry and
// returns a copy of the table it gave (CopyTable). A signal handler (SIGINT, SIGTERM, SIGHUP,
// SIGQUIT, SIGPIPE, SIGCHLD) they replaced is reinstalled, and said on stderr, naming `path`,
// when `announce`.
StatusOr<mm_backend_plugin> OpenTable(const std::string& path, const std::string& absolute,
                                      bool announce);

// One plugin: what the load child learnt of it, and, once Open() loaded it into this process, its
// table and the lock that keeps calls into it one at a time (the ABI promises plugins they are
// never called concurrently, whatever the number of Backend instances). The library is never
// unloaded: backends, primitives and strings may still point into it.
class Library {
 public:
  // `announce`: this is the process that reports, where a replaced signal handler is said.
  Library(std::string path, std::string absolute_path, PluginInfo info, bool announce);

  const std::string& path() const { return path_; }
  const std::string& absolute_path() const { return absolute_path_; }
  const std::string& name() const { return info_.name; }
  const PluginInfo& info() const { return info_; }
  // Valid after Open() succeeded.
  const mm_backend_plugin& table() const { return table_; }
  std::mutex& mutex() { return mutex_; }

  const Arithmetic& arithmetic(DType dtype) const { return info_.arithmetic[DTypeIndex(dtype)]; }

  // Loads the library into this process, once (a process forked after that inherits it): where
  // a backend of it is created, never before. Refuses a table that is no longer the one probed.
  Status Open();

  // "plugin 'name' (path)": the context added to errors met during a run. (At load time the
  // refusal names the file already.)
  std::string Who() const { return "plugin '" + info_.name + "' (" + path_ + ")"; }

  // Asks supports() (FromPluginSupport: a contract violation is an error).
  StatusOr<Support> AskSupports(const Problem& problem);

 private:
  std::string path_;
  std::string absolute_path_;
  PluginInfo info_;
  pid_t announcing_pid_;
  std::mutex open_mutex_;
  bool opened_ = false;
  mm_backend_plugin table_{};  // A copy: the plugin promised it never changes.
  std::mutex mutex_;
};

// A product the plugin prepared: execute() on its handle, describe() as its implementation.
class PluginPrimitive final : public MatMulPrimitive {
 public:
  // `handle` came from a successful prepare; it is released here, once.
  PluginPrimitive(MatMulPlan plan, std::shared_ptr<Library> library, void* handle)
      : MatMulPrimitive(std::move(plan)), library_(std::move(library)), handle_(handle) {}
  ~PluginPrimitive() override;

  // The plugin's describe() for this handle; empty when it has none.
  std::string implementation() const override;

 protected:
  Status Run(TensorView a, TensorView b, MutableTensorView y) override;

 private:
  std::shared_ptr<Library> library_;
  void* handle_;
};

}  // namespace mm::plugin_internal

#endif  // MM_BACKENDS_PLUGIN_LIBRARY_H_
