#include "library.h"

#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <iterator>
#include <utility>

#include "mm/engine/process/process.h"

namespace mm::plugin_internal {
namespace {

// The signals whose handlers mm sets (stop_signals.h, the workers) or relies on (SIGCHLD, for
// waiting): a plugin's constructors and entry must not change them.
constexpr int kGuardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD};

// Records the handlers of kGuardedSignals when made; Restore() reinstalls those changed since.
class SignalGuard {
 public:
  SignalGuard() {
    for (std::size_t i = 0; i < std::size(kGuardedSignals); ++i) {
      sigaction(kGuardedSignals[i], nullptr, &saved_[i]);
    }
  }
  // Reinstalls every handler the plugin at `path` replaced; says so on stderr when `announce`.
  void Restore(const std::string& path, bool announce) {
    for (std::size_t i = 0; i < std::size(kGuardedSignals); ++i) {
      struct sigaction now {};
      sigaction(kGuardedSignals[i], nullptr, &now);
      if (now.sa_handler == saved_[i].sa_handler && now.sa_flags == saved_[i].sa_flags) continue;
      sigaction(kGuardedSignals[i], &saved_[i], nullptr);
      if (announce) {
        std::fprintf(stderr,
                     "mm: plugin '%s' replaced the handler of %s while loading; mm's handler is "
                     "reinstalled\n",
                     Sanitized(path).c_str(), process::SignalName(kGuardedSignals[i]).c_str());
      }
    }
  }

 private:
  std::array<struct sigaction, std::size(kGuardedSignals)> saved_{};
};

StatusOr<mm_backend_plugin> OpenTableUnguarded(const std::string& absolute) {
  void* handle = CallPlugin([&] { return dlopen(absolute.c_str(), RTLD_NOW | RTLD_LOCAL); });
  if (handle == nullptr) {
    const char* error = dlerror();
    return InvalidArgumentError(std::string("cannot be loaded as a shared object: ") +
                                (error ? error : "unknown dlopen error"));
  }
  dlerror();
  void* entry = dlsym(handle, MM_BACKEND_PLUGIN_ENTRY_NAME);
  if (entry == nullptr) {
    return InvalidArgumentError(std::string("does not export the entry function '") +
                                MM_BACKEND_PLUGIN_ENTRY_NAME +
                                "' (declare it with MM_BACKEND_PLUGIN_EXPORT and extern \"C\"; "
                                "see mm/mm_backend_plugin.h)");
  }
  const mm_backend_plugin* table =
      CallPlugin([entry] { return reinterpret_cast<mm_backend_plugin_entry_fn>(entry)(); });
  if (table == nullptr) return InvalidArgumentError("the entry function returned NULL");
  return CopyTable(*table);
}

}  // namespace

StatusOr<mm_backend_plugin> OpenTable(const std::string& path, const std::string& absolute,
                                      bool announce) {
  SignalGuard guard;
  StatusOr<mm_backend_plugin> opened = OpenTableUnguarded(absolute);
  guard.Restore(path, announce);
  return opened;
}

Library::Library(std::string path, std::string absolute_path, PluginInfo info, bool announce)
    : path_(std::move(path)),
      absolute_path_(std::move(absolute_path)),
      info_(std::move(info)),
      announcing_pid_(announce ? getpid() : -1) {}

Status Library::Open() {
  std::lock_guard lock(open_mutex_);
  if (opened_) return OkStatus();
  MM_ASSIGN_OR_RETURN(const mm_backend_plugin table,
                      OpenTable(path_, absolute_path_, getpid() == announcing_pid_));
  MM_RETURN_IF_ERROR(CheckTable(table));
  if (table.abi_version != info_.abi_version || table.name != info_.name) {
    return FailedPreconditionError(
        "its table is not the one it gave when it was loaded (ABI "
        "version " +
        std::to_string(info_.abi_version) + ", name '" + info_.name + "')");
  }
  table_ = table;
  opened_ = true;
  return OkStatus();
}

StatusOr<Support> Library::AskSupports(const Problem& problem) {
  TextBuffer text;
  std::int32_t answer;
  {
    std::lock_guard lock(mutex_);
    answer =
        CallPlugin([&] { return table_.supports(problem.get(), text.data(), text.capacity()); });
  }
  return FromPluginSupport(answer, text.Text(), problem.plan().desc);
}

PluginPrimitive::~PluginPrimitive() {
  std::lock_guard lock(library_->mutex());
  CallPlugin([this] { library_->table().release(handle_); });
}

std::string PluginPrimitive::implementation() const {
  if (library_->table().describe == nullptr) return "";
  TextBuffer text;
  {
    std::lock_guard lock(library_->mutex());
    CallPlugin([&] { library_->table().describe(handle_, text.data(), text.capacity()); });
  }
  return text.Text();
}

Status PluginPrimitive::Run(TensorView a, TensorView b, MutableTensorView y) {
  const std::int32_t dtype = ToPluginDType(plan().desc.dtype);
  const mm_const_tensor a_tensor = ToPluginInput(dtype, a.dims, a.data);
  const mm_const_tensor b_tensor = ToPluginInput(dtype, b.dims, b.data);
  const mm_tensor y_tensor = ToPluginOutput(dtype, y.dims, y.data);
  TextBuffer text;
  std::int32_t code;
  {
    std::lock_guard lock(library_->mutex());
    code = CallPlugin([&] {
      return library_->table().execute(handle_, &a_tensor, &b_tensor, &y_tensor, text.data(),
                                       text.capacity());
    });
  }
  return FromPluginStatus("execute", code, text, plan().desc).WithContext(library_->Who());
}

}  // namespace mm::plugin_internal
