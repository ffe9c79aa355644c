#include "mm/backends/plugin/plugin_loader.h"

#include <dlfcn.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <mutex>
#include <optional>
#include <set>

#include "mm/engine/backend.h"
#include "mm/engine/io/names.h"
#include "mm/engine/io/paths.h"
#include "mm/engine/io/text.h"
#include "mm/engine/matmul_plan.h"
#include "mm/engine/process/process.h"
#include "mm/mm_backend_plugin.h"

namespace mm {
namespace {

// Size of every text buffer handed to a plugin (the header promises at least 256).
constexpr std::size_t kTextCapacity = 1024;

// Text from a plugin as mm can print and store it: valid UTF-8 sequences kept (strictly: no
// overlong forms, surrogates or code points above U+10FFFF, as JSON writers demand), control
// characters (C0, DEL and C1: io::IsControl) and every other byte replaced by '?'.
std::string Sanitized(std::string_view text) { return io::ReplacingControls(text, "?"); }

// A zero-filled buffer the plugin writes a NUL-terminated string into; Text() never reads past it
// even when the plugin forgot the NUL, and returns it Sanitized.
class TextBuffer {
 public:
  char* data() { return buffer_.data(); }
  std::size_t capacity() const { return buffer_.size(); }
  std::string Text() {
    buffer_.back() = '\0';
    return Sanitized(buffer_.data());
  }

 private:
  std::array<char, kTextCapacity> buffer_{};
};

std::string_view PluginStatusName(std::int32_t code) {
  switch (code) {
    case MM_STATUS_OK:
      return "OK";
    case MM_STATUS_INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case MM_STATUS_RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case MM_STATUS_UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case MM_STATUS_INTERNAL:
      return "INTERNAL";
  }
  return "UNKNOWN";
}

StatusCode ToStatusCode(std::int32_t code) {
  switch (code) {
    case MM_STATUS_INVALID_ARGUMENT:
      return StatusCode::kInvalidArgument;
    case MM_STATUS_RESOURCE_EXHAUSTED:
      return StatusCode::kResourceExhausted;
    case MM_STATUS_UNIMPLEMENTED:
      return StatusCode::kUnimplemented;
    case MM_STATUS_INTERNAL:
      return StatusCode::kInternal;
  }
  return StatusCode::kUnknown;
}

// Runs `call`, a call into the plugin. A process the plugin forked during it never returns into
// mm: only the process that called answers (a copy would answer a second time, and run on with
// mm's state).
template <class Call>
decltype(auto) CallPlugin(Call&& call) {
  const pid_t caller = getpid();
  struct LeaveIfCopy {
    pid_t caller;
    ~LeaveIfCopy() {
      if (getpid() != caller) _exit(0);
    }
  } leave{caller};
  return call();
}

std::int32_t ToPluginDType(DType dtype) { return GetDTypeInfo(dtype).onnx_enum; }

// The problem as the ABI describes it, pointing into a plan this object keeps.
class Problem {
 public:
  explicit Problem(MatMulPlan plan) : plan_(std::move(plan)) {
    problem_.dtype = ToPluginDType(plan_.desc.dtype);
    problem_.a_rank = static_cast<std::int32_t>(plan_.desc.a_dims.size());
    problem_.a_dims = plan_.desc.a_dims.data();
    problem_.b_rank = static_cast<std::int32_t>(plan_.desc.b_dims.size());
    problem_.b_dims = plan_.desc.b_dims.data();
    problem_.y_rank = static_cast<std::int32_t>(plan_.y_dims.size());
    problem_.y_dims = plan_.y_dims.empty() ? nullptr : plan_.y_dims.data();
    problem_.m = plan_.m;
    problem_.n = plan_.n;
    problem_.k = plan_.k;
    problem_.batch = plan_.batch;
    problem_.batch_rank = static_cast<std::int32_t>(plan_.batch_dims.size());
    const bool has_batch = !plan_.batch_dims.empty();
    problem_.batch_dims = has_batch ? plan_.batch_dims.data() : nullptr;
    problem_.a_batch_strides = has_batch ? plan_.a_batch_strides.data() : nullptr;
    problem_.b_batch_strides = has_batch ? plan_.b_batch_strides.data() : nullptr;
  }
  Problem(const Problem&) = delete;
  Problem& operator=(const Problem&) = delete;

  const mm_matmul_problem* get() const { return &problem_; }
  const MatMulPlan& plan() const { return plan_; }

 private:
  MatMulPlan plan_;
  mm_matmul_problem problem_{};
};

std::size_t DTypeIndex(DType dtype) {
  return static_cast<std::size_t>(std::find(kAllDTypes.begin(), kAllDTypes.end(), dtype) -
                                  kAllDTypes.begin());
}

// What this process keeps of a plugin, learnt in the load child: everything but its code.
struct PluginInfo {
  std::string name;
  std::string description;  // Sanitized; may be empty.
  std::uint32_t abi_version = 0;
  std::array<Arithmetic, kAllDTypes.size()> arithmetic;  // Declared (or default), per dtype.
};

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

// A plugin's table as its entry returned it (the first `size` bytes are its version's).
struct OpenedTable {
  const mm_backend_plugin* table;
  std::size_t size;
};

StatusOr<OpenedTable> OpenTableUnguarded(const std::string& absolute) {
  // RTLD_NOW: an unresolved symbol is a refusal now, not a crash in the middle of a run.
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
  // The version comes first in every table; nothing past its version's size is read.
  const std::uint32_t version = table->abi_version;
  if (version < MM_BACKEND_PLUGIN_ABI_VERSION_OLDEST || version > MM_BACKEND_PLUGIN_ABI_VERSION) {
    return InvalidArgumentError("speaks plugin ABI version " + std::to_string(version) +
                                ", but this mm speaks versions " +
                                std::to_string(MM_BACKEND_PLUGIN_ABI_VERSION_OLDEST) + " to " +
                                std::to_string(MM_BACKEND_PLUGIN_ABI_VERSION) +
                                "; rebuild the plugin against this mm's mm/mm_backend_plugin.h");
  }
  return OpenedTable{table, version == 1 ? MM_BACKEND_PLUGIN_V1_SIZE : sizeof(mm_backend_plugin)};
}

// Loads the library at `absolute` into this process (its constructors run) and calls its entry;
// a signal handler they replaced is reinstalled (announced on stderr when `announce`).
StatusOr<OpenedTable> OpenTable(const std::string& path, const std::string& absolute,
                                bool announce) {
  SignalGuard guard;
  StatusOr<OpenedTable> opened = OpenTableUnguarded(absolute);
  guard.Restore(path, announce);
  return opened;
}

Status CheckName(const std::string& name);

// The promises of a table mm checks before anything else: a valid name, no NULL required function.
Status CheckTable(const mm_backend_plugin& table) {
  if (table.name == nullptr) return InvalidArgumentError("the backend name is NULL");
  MM_RETURN_IF_ERROR(CheckName(table.name));
  std::string null_functions;
  for (const auto& [field, is_null] : {std::pair{"supports", table.supports == nullptr},
                                       {"prepare", table.prepare == nullptr},
                                       {"execute", table.execute == nullptr},
                                       {"release", table.release == nullptr}}) {
    if (is_null) null_functions += (null_functions.empty() ? "" : ", ") + std::string(field);
  }
  if (!null_functions.empty()) {
    return InvalidArgumentError("required function pointer(s) NULL in the table of '" +
                                std::string(table.name) + "': " + null_functions);
  }
  return OkStatus();
}

// One plugin: what the load child learnt of it, and, once Open() loaded it into this process, its
// table and the lock that keeps calls into it one at a time (the ABI promises plugins they are
// never called concurrently, whatever the number of Backend instances). The library is never
// unloaded: backends, primitives and strings may still point into it.
class Library {
 public:
  // `announce`: this is the process that reports, where a replaced signal handler is said.
  Library(std::string path, std::string absolute_path, PluginInfo info, bool announce)
      : path_(std::move(path)),
        absolute_path_(std::move(absolute_path)),
        info_(std::move(info)),
        announcing_pid_(announce ? getpid() : -1) {}

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
  Status Open() {
    std::lock_guard lock(open_mutex_);
    if (opened_) return OkStatus();
    MM_ASSIGN_OR_RETURN(OpenedTable opened,
                        OpenTable(path_, absolute_path_, getpid() == announcing_pid_));
    MM_RETURN_IF_ERROR(CheckTable(*opened.table));
    if (opened.table->abi_version != info_.abi_version || opened.table->name != info_.name) {
      return FailedPreconditionError(
          "its table is not the one it gave when it was loaded (ABI "
          "version " +
          std::to_string(info_.abi_version) + ", name '" + info_.name + "')");
    }
    std::memcpy(&table_, opened.table, std::min(opened.size, sizeof(table_)));
    opened_ = true;
    return OkStatus();
  }

  // "plugin 'name' (path)": the context added to errors met during a run. (At load time the
  // refusal names the file already.)
  std::string Who() const { return "plugin '" + info_.name + "' (" + path_ + ")"; }

  // Asks supports(); a contract violation (an answer outside the three values, or no note where
  // one is required) is returned as an error.
  StatusOr<Support> AskSupports(const Problem& problem) {
    TextBuffer text;
    std::int32_t answer;
    {
      std::lock_guard lock(mutex_);
      answer =
          CallPlugin([&] { return table_.supports(problem.get(), text.data(), text.capacity()); });
    }
    std::string note = text.Text();
    const std::string what = problem.plan().desc.ToString();
    switch (answer) {
      case MM_SUPPORT_NATIVE:
        return Support::Native();
      case MM_SUPPORT_BY_CONVERSION:
      case MM_SUPPORT_NO:
        if (note.empty()) {
          return InternalError(std::string("supports() answered ") +
                               (answer == MM_SUPPORT_NO ? "NO" : "BY_CONVERSION") + " for " + what +
                               " without a note; the plugin ABI requires one");
        }
        return answer == MM_SUPPORT_NO ? Support::No(std::move(note))
                                       : Support::ByConversion(std::move(note));
    }
    return InternalError("supports() answered " + std::to_string(answer) + " for " + what +
                         "; valid answers are 0 (native), 1 (by conversion), 2 (no)");
  }

  // True when a plugin's failure comes without the message the ABI requires.
  static bool IsViolation(std::int32_t code, TextBuffer& text) {
    return code != MM_STATUS_OK && text.Text().empty();
  }

  // Turns a plugin's status and message into a Status; a failure without a message is itself a
  // contract violation, reported as such.
  Status ToStatus(std::string_view function, std::int32_t code, TextBuffer& text,
                  const MatMulDesc& desc) const {
    if (code == MM_STATUS_OK) return OkStatus();
    std::string message = text.Text();
    const std::string code_text =
        std::to_string(code) + " (" + std::string(PluginStatusName(code)) + ")";
    if (message.empty()) {
      return InternalError(std::string(function) + "() returned status " + code_text +
                           " with no message for " + desc.ToString() +
                           "; the plugin ABI requires one");
    }
    return Status(ToStatusCode(code),
                  std::string(function) + "() failed with " + code_text + ": " + message);
  }

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

class PluginPrimitive final : public MatMulPrimitive {
 public:
  // `handle` came from a successful prepare; it is released here, once.
  PluginPrimitive(MatMulPlan plan, std::shared_ptr<Library> library, void* handle)
      : MatMulPrimitive(std::move(plan)), library_(std::move(library)), handle_(handle) {}
  ~PluginPrimitive() override {
    std::lock_guard lock(library_->mutex());
    CallPlugin([this] { library_->table().release(handle_); });
  }

  // The plugin's describe() for this handle; empty when it has none.
  std::string implementation() const override {
    if (library_->table().describe == nullptr) return "";
    TextBuffer text;
    {
      std::lock_guard lock(library_->mutex());
      CallPlugin([&] { library_->table().describe(handle_, text.data(), text.capacity()); });
    }
    return text.Text();
  }

 protected:
  Status Run(TensorView a, TensorView b, MutableTensorView y) override {
    const std::int32_t dtype = ToPluginDType(plan().desc.dtype);
    auto dims_or_null = [](std::span<const std::int64_t> dims) {
      return dims.empty() ? nullptr : dims.data();
    };
    const mm_const_tensor a_tensor{dtype, static_cast<std::int32_t>(a.dims.size()),
                                   dims_or_null(a.dims), a.data};
    const mm_const_tensor b_tensor{dtype, static_cast<std::int32_t>(b.dims.size()),
                                   dims_or_null(b.dims), b.data};
    const mm_tensor y_tensor{dtype, static_cast<std::int32_t>(y.dims.size()), dims_or_null(y.dims),
                             y.data};
    TextBuffer text;
    std::int32_t code;
    {
      std::lock_guard lock(library_->mutex());
      code = CallPlugin([&] {
        return library_->table().execute(handle_, &a_tensor, &b_tensor, &y_tensor, text.data(),
                                         text.capacity());
      });
    }
    return library_->ToStatus("execute", code, text, plan().desc).WithContext(library_->Who());
  }

 private:
  std::shared_ptr<Library> library_;
  void* handle_;
};

class PluginBackend final : public Backend {
 public:
  explicit PluginBackend(std::shared_ptr<Library> library) : library_(std::move(library)) {}

  std::string_view name() const override { return library_->name(); }

  Support Supports(const MatMulDesc& desc) const override {
    auto plan = PlanMatMul(desc);
    if (!plan.ok()) return Support::No("not a valid MatMul: " + plan.status().message());
    Problem problem(std::move(*plan));
    auto support = library_->AskSupports(problem);
    // A contract violation must not look like a declared UNSUPPORTED: the caller goes on to
    // Prepare, whose PrepareProduct asks again and reports the violation as an error.
    if (!support.ok()) return Support::Native();
    return *support;
  }

  std::string RunsOn() const override {
    return "plugin " + library_->path() + " (ABI version " +
           std::to_string(library_->info().abi_version) + ")";
  }

  // What the plugin's arithmetic() declared at load time; its own dtype without one.
  Arithmetic DeclaredArithmetic(DType dtype) const override { return library_->arithmetic(dtype); }

  const std::string& library_path() const { return library_->absolute_path(); }

 protected:
  // Reached only when Supports() accepted the plan and K > 0 and Y is not empty: the engine
  // answers those (the ABI promises plugins they never see them).
  StatusOr<std::unique_ptr<MatMulPrimitive>> PrepareProduct(const MatMulPlan& plan) override {
    Problem problem(plan);
    auto asked = library_->AskSupports(problem);
    if (!asked.ok()) return asked.status().WithContext(library_->Who());
    if (!asked->supported()) {
      return UnimplementedError(library_->Who() + " does not support " + plan.desc.ToString() +
                                ": " + asked->note);
    }
    TextBuffer text;
    void* handle = nullptr;
    std::int32_t code;
    {
      std::lock_guard lock(library_->mutex());
      code = CallPlugin([&] {
        return library_->table().prepare(problem.get(), &handle, text.data(), text.capacity());
      });
    }
    MM_RETURN_IF_ERROR(
        library_->ToStatus("prepare", code, text, plan.desc).WithContext(library_->Who()));
    return std::unique_ptr<MatMulPrimitive>(
        std::make_unique<PluginPrimitive>(plan, library_, handle));
  }

 private:
  std::shared_ptr<Library> library_;
};

// Asks a version-2 plugin's arithmetic() for every dtype and keeps the answers; the first invalid
// one (see mm_arithmetic) is the refusal, naming the plugin and the dtype. Without the function
// (and for version 1) every dtype keeps its own type.
Status AskArithmetic(const mm_backend_plugin& table, PluginInfo& info) {
  for (DType dtype : kAllDTypes) info.arithmetic[DTypeIndex(dtype)] = Arithmetic::OwnType(dtype);
  const auto declare = table.arithmetic;
  if (declare == nullptr) return OkStatus();
  for (DType dtype : kAllDTypes) {
    mm_arithmetic answer{ToPluginDType(dtype), 0};
    CallPlugin([&] { declare(ToPluginDType(dtype), &answer); });
    const std::string what = "arithmetic() of plugin '" + info.name + "' for " +
                             std::string(DTypeName(dtype)) + " declared ";
    std::optional<DType> accumulation;
    for (DType candidate : kAllDTypes) {
      if (ToPluginDType(candidate) == answer.accumulation) accumulation = candidate;
    }
    if (!accumulation) {
      return InvalidArgumentError(what + "accumulation type " +
                                  std::to_string(answer.accumulation) +
                                  ", which is not an mm_dtype");
    }
    if (IsFloat(dtype) && !IsFloat(*accumulation)) {
      return InvalidArgumentError(what + "accumulation in " +
                                  std::string(DTypeName(*accumulation)) +
                                  "; a float dtype accumulates in float, double, float16 or "
                                  "bfloat16");
    }
    if (!IsFloat(dtype) && *accumulation != dtype) {
      return InvalidArgumentError(what + "accumulation in " +
                                  std::string(DTypeName(*accumulation)) +
                                  "; an integer dtype is exact modulo 2^bits: declare the dtype "
                                  "itself");
    }
    if (answer.flushes_subnormals != 0 && answer.flushes_subnormals != 1) {
      return InvalidArgumentError(
          what + "flushes_subnormals = " + std::to_string(answer.flushes_subnormals) +
          "; valid are 0 and 1");
    }
    if (!IsFloat(dtype) && answer.flushes_subnormals != 0) {
      return InvalidArgumentError(what + "flushes_subnormals = 1; integers have no subnormals");
    }
    info.arithmetic[DTypeIndex(dtype)] = {*accumulation, answer.flushes_subnormals == 1};
  }
  return OkStatus();
}

// Runs supports() for every dtype on [2,3] x [3,4], then prepare, execute and release on the first
// supported one, and returns the first contract violation. The plugin's own failures (with a
// message) are its business and show up in the results; only broken promises refuse the load. Y
// has slack on both sides, so a plugin writing outside Y cannot corrupt memory here (the harness
// reports such writes as ERROR).
Status Probe(Library& library) {
  std::optional<DType> runnable;
  for (DType dtype : kAllDTypes) {
    MM_ASSIGN_OR_RETURN(MatMulPlan plan, PlanMatMul({dtype, {2, 3}, {3, 4}}));
    Problem problem(std::move(plan));
    MM_ASSIGN_OR_RETURN(Support support, library.AskSupports(problem));
    if (support.supported() && !runnable) runnable = dtype;
  }
  if (!runnable) return OkStatus();
  MM_ASSIGN_OR_RETURN(MatMulPlan plan, PlanMatMul({*runnable, {2, 3}, {3, 4}}));
  const Problem problem(plan);
  const mm_backend_plugin& table = library.table();
  std::lock_guard lock(library.mutex());
  TextBuffer text;
  void* handle = nullptr;
  const std::int32_t prepared = CallPlugin(
      [&] { return table.prepare(problem.get(), &handle, text.data(), text.capacity()); });
  if (prepared != MM_STATUS_OK) {
    return library.IsViolation(prepared, text)
               ? library.ToStatus("prepare", prepared, text, plan.desc)
               : OkStatus();
  }
  const std::size_t element = DTypeSize(*runnable);
  constexpr std::size_t kSlack = 256;
  std::vector<std::byte> a(6 * element), b(12 * element), y(kSlack + 8 * element + kSlack);
  const std::int32_t dtype = ToPluginDType(*runnable);
  const mm_const_tensor a_tensor{dtype, 2, plan.desc.a_dims.data(), a.data()};
  const mm_const_tensor b_tensor{dtype, 2, plan.desc.b_dims.data(), b.data()};
  const mm_tensor y_tensor{dtype, 2, plan.y_dims.data(), y.data() + kSlack};
  TextBuffer execute_text;
  const std::int32_t executed = CallPlugin([&] {
    return table.execute(handle, &a_tensor, &b_tensor, &y_tensor, execute_text.data(),
                         execute_text.capacity());
  });
  CallPlugin([&] { table.release(handle); });
  return library.IsViolation(executed, execute_text)
             ? library.ToStatus("execute", executed, execute_text, plan.desc)
             : OkStatus();
}

Status CheckName(const std::string& name) { return io::CheckName(name, "the backend name"); }

// ---- Loading in a child process: what it sends back ---------------------------------------------
// The child sends records: a tag byte and a netstring ("5:hello"). kEnteringArithmetic comes
// before arithmetic() is called, kLoaded with the table's data (or the refusal), kProbed with the
// probe's verdict. What arrived says where a child that died or hung was.
constexpr char kEnteringArithmetic = 'A';
constexpr char kLoaded = 'L';
constexpr char kProbed = 'P';

void PutField(std::string& out, std::string_view field) {
  out += std::to_string(field.size());
  out += ':';
  out.append(field);
}

// The next field of `in`, consumed; nullopt when it is truncated or malformed.
std::optional<std::string_view> TakeField(std::string_view& in) {
  const std::size_t colon = in.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon > 9) return std::nullopt;
  std::size_t size = 0;
  for (char c : in.substr(0, colon)) {
    if (c < '0' || c > '9') return std::nullopt;
    size = size * 10 + static_cast<std::size_t>(c - '0');
  }
  if (in.size() - colon - 1 < size) return std::nullopt;
  const std::string_view field = in.substr(colon + 1, size);
  in.remove_prefix(colon + 1 + size);
  return field;
}

std::optional<long long> TakeNumber(std::string_view& in) {
  const auto field = TakeField(in);
  if (!field || field->empty() || field->size() > 18) return std::nullopt;
  long long value = 0;
  bool negative = false;
  for (std::size_t i = 0; i < field->size(); ++i) {
    const char c = (*field)[i];
    if (i == 0 && c == '-') {
      negative = true;
    } else if (c >= '0' && c <= '9') {
      value = value * 10 + (c - '0');
    } else {
      return std::nullopt;
    }
  }
  return negative ? -value : value;
}

void PutStatus(std::string& out, const Status& status) {
  PutField(out, std::to_string(static_cast<int>(status.code())));
  PutField(out, status.message());
}

std::optional<Status> TakeStatus(std::string_view& in) {
  const auto code = TakeNumber(in);
  const auto message = TakeField(in);
  if (!code || !message || *code < 0 || *code > static_cast<int>(StatusCode::kDataLoss)) {
    return std::nullopt;
  }
  if (*code == 0) return OkStatus();
  return Status(static_cast<StatusCode>(*code), Sanitized(*message));
}

std::string EncodeLoaded(const StatusOr<PluginInfo>& loaded) {
  std::string out;
  PutStatus(out, loaded.status());
  if (!loaded.ok()) return out;
  PutField(out, loaded->name);
  PutField(out, loaded->description);
  PutField(out, std::to_string(loaded->abi_version));
  for (const Arithmetic& arithmetic : loaded->arithmetic) {
    PutField(out, std::to_string(DTypeIndex(arithmetic.accumulation)));
    PutField(out, arithmetic.flushes_subnormals ? "1" : "0");
  }
  return out;
}

// The inverse of EncodeLoaded; nullopt when garbled.
std::optional<StatusOr<PluginInfo>> DecodeLoaded(std::string_view in) {
  const std::optional<Status> status = TakeStatus(in);
  if (!status) return std::nullopt;
  if (!status->ok()) return StatusOr<PluginInfo>(*status);
  PluginInfo info;
  const auto name = TakeField(in);
  const auto description = TakeField(in);
  const auto version = TakeNumber(in);
  if (!name || !description || !version || !CheckName(std::string(*name)).ok() ||
      *version < MM_BACKEND_PLUGIN_ABI_VERSION_OLDEST || *version > MM_BACKEND_PLUGIN_ABI_VERSION) {
    return std::nullopt;
  }
  info.name = *name;
  info.description = Sanitized(*description);
  info.abi_version = static_cast<std::uint32_t>(*version);
  for (Arithmetic& arithmetic : info.arithmetic) {
    const auto index = TakeNumber(in);
    const auto flushes = TakeNumber(in);
    if (!index || !flushes || *index < 0 || *index >= static_cast<long long>(kAllDTypes.size()) ||
        (*flushes != 0 && *flushes != 1)) {
      return std::nullopt;
    }
    arithmetic = {kAllDTypes[static_cast<std::size_t>(*index)], *flushes == 1};
  }
  if (!in.empty()) return std::nullopt;
  return StatusOr<PluginInfo>(std::move(info));
}

using SendRecord = std::function<void(char tag, std::string_view payload)>;

// Whether two copies of a plugin's table (made as Library::Open makes them) are the same table:
// the same functions and texts, field by field (their padding is not compared).
bool SameTable(const mm_backend_plugin& a, const mm_backend_plugin& b) {
  return a.abi_version == b.abi_version && a.name == b.name && a.description == b.description &&
         a.supports == b.supports && a.prepare == b.prepare && a.execute == b.execute &&
         a.release == b.release && a.describe == b.describe && a.arithmetic == b.arithmetic;
}

// dlopen (constructors), the entry, the table's checks, arithmetic(): what the parent keeps. The
// table read is copied to `table`.
StatusOr<PluginInfo> Inspect(const std::string& path, const std::string& absolute, bool announce,
                             const SendRecord& send, mm_backend_plugin& table) {
  MM_ASSIGN_OR_RETURN(OpenedTable opened, OpenTable(path, absolute, announce));
  table = {};
  std::memcpy(&table, opened.table, std::min(opened.size, sizeof(table)));
  MM_RETURN_IF_ERROR(CheckTable(table));
  PluginInfo info;
  info.name = table.name;
  info.description = table.description != nullptr ? Sanitized(table.description) : "";
  info.abi_version = table.abi_version;
  send(kEnteringArithmetic, "");
  MM_RETURN_IF_ERROR(AskArithmetic(table, info));
  return info;
}

// Everything a plugin's code does at load time, with what it gives sent as records: the loading
// (Inspect) and the probe. In the load child; in this process when the probe is not isolated.
void LoadAndProbe(const std::string& path, const std::string& absolute, bool announce,
                  const SendRecord& send) {
  mm_backend_plugin inspected{};
  StatusOr<PluginInfo> info = Inspect(path, absolute, announce, send, inspected);
  send(kLoaded, EncodeLoaded(info));
  if (!info.ok()) return;
  Library library(path, absolute, *std::move(info), announce);
  Status verdict = library.Open();
  // The probe must run the table every later process gets from its first call of the entry.
  if (verdict.ok() && !SameTable(library.table(), inspected)) {
    verdict = FailedPreconditionError(
        "its entry function returned another table on its second call than on its first (other "
        "functions or texts); a plugin's table must never change");
  }
  if (verdict.ok()) verdict = Probe(library);
  std::string payload;
  PutStatus(payload, verdict);
  send(kProbed, payload);
}

// The records a load child sent, as far as they arrived.
struct Records {
  bool entering_arithmetic = false;
  std::optional<StatusOr<PluginInfo>> loaded;
  std::optional<Status> probed;
  bool garbled = false;
};

Records ParseRecords(std::string_view in) {
  Records records;
  while (!in.empty()) {
    const char tag = in.front();
    in.remove_prefix(1);
    const std::optional<std::string_view> payload = TakeField(in);
    if (!payload) break;  // Cut short by the child's end.
    if (tag == kEnteringArithmetic && payload->empty() && !records.loaded) {
      records.entering_arithmetic = true;
    } else if (tag == kLoaded && !records.loaded) {
      records.loaded = DecodeLoaded(*payload);
      if (!records.loaded) records.garbled = true;
    } else if (tag == kProbed && records.loaded && !records.probed) {
      std::string_view rest = *payload;
      records.probed = TakeStatus(rest);
      if (!records.probed || !rest.empty()) records.garbled = true;
    } else {
      records.garbled = true;
    }
    if (records.garbled) break;
  }
  return records;
}

void WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

std::string SecondsText(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", seconds);
  return text;
}

// A plugin loaded and probed: what the parent keeps, and, when the probe's child died or hung,
// what happened ("crashed during the load probe: SIGABRT (signal 6)"): the plugin is then
// registered as a backend that cannot start.
struct Loaded {
  PluginInfo info;
  std::string died;
  // Set instead when the child died or hung while loading: what happened, a refusal
  // ("crashed while loading (constructor or entry function): SIGSEGV (signal 11)").
  std::string died_loading;
};

// What a load child that sent `records` and ended with `wait_status` (nullopt: killed after
// `timeout_seconds` without an end) gave: the plugin, or the refusal.
StatusOr<Loaded> Interpret(const Records& records, std::optional<int> wait_status,
                           double timeout_seconds) {
  if (records.garbled) {
    return InvalidArgumentError(
        "the process loading it sent garbled data (the plugin wrote to "
        "a descriptor it does not own?)");
  }
  auto ended = [&](const std::string& where) {
    if (!wait_status) {
      const std::string within = "no answer within " + SecondsText(timeout_seconds) + " s";
      return records.loaded ? "hung " + where + " (" + within + ")"
                            : "hung " + where + ": " + within;
    }
    return process::DescribeWaitStatus(*wait_status, where);
  };
  if (!records.loaded) {
    Loaded died;
    died.died_loading =
        ended(records.entering_arithmetic ? "in arithmetic() while loading"
                                          : "while loading (constructor or entry function)");
    return died;
  }
  MM_RETURN_IF_ERROR(records.loaded->status());
  Loaded loaded{records.loaded->value(), "", ""};
  if (!records.probed) {
    loaded.died = ended("during the load probe");
    return loaded;
  }
  MM_RETURN_IF_ERROR(*records.probed);
  return loaded;
}

bool HasElfHeader(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  char magic[4] = {};
  file.read(magic, sizeof(magic));
  return file.gcount() == 4 && std::memcmp(magic,
                                           "\x7f"
                                           "ELF",
                                           4) == 0;
}

// Loads and checks one library: its data, or the refusal (without the "backend library" prefix;
// a child that died or hung while loading is said in Loaded::died_loading).
// The plugin's code runs only in the load child unless options.isolate_probe is off.
StatusOr<Loaded> Load(const std::string& path, const std::filesystem::path& absolute,
                      const PluginLoadOptions& options) {
  std::error_code ec;
  const auto status = std::filesystem::status(absolute, ec);
  if (!std::filesystem::exists(status)) return NotFoundError("no such file");
  if (!std::filesystem::is_regular_file(status)) {
    return InvalidArgumentError("not a regular file (a shared object is expected)");
  }
  if (!HasElfHeader(absolute)) {
    return InvalidArgumentError(
        "not a shared object (no ELF header; build the plugin as a shared "
        "library, e.g. CMake add_library(NAME MODULE ...))");
  }
  std::string bytes;
  if (!options.isolate_probe) {
    LoadAndProbe(path, absolute, /*announce=*/true, [&bytes](char tag, std::string_view payload) {
      bytes += tag;
      PutField(bytes, payload);
    });
    return Interpret(ParseRecords(bytes), 0, 0);
  }
  auto child = process::Child::Start([&path, &absolute](int fd) {
    LoadAndProbe(path, absolute, /*announce=*/false, [fd](char tag, std::string_view payload) {
      std::string record(1, tag);
      PutField(record, payload);
      WriteAll(fd, record);
    });
  });
  if (!child.ok()) return child.status();
  // Complete once the verdict (or a refusal) is in: a process the plugin forked may hold the pipe.
  const auto complete = [](const std::string& text) {
    const Records records = ParseRecords(text);
    return records.garbled || records.probed || (records.loaded && !records.loaded->ok());
  };
  const auto finished = child->Finish(options.probe_timeout_seconds, bytes, complete);
  std::optional<int> wait_status;  // None: the child was killed when its time was up.
  if (!finished.ok()) {
    wait_status = SIGKILL;
  } else if (!finished->timed_out) {
    wait_status = finished->wait_status;
  }
  return Interpret(ParseRecords(bytes), wait_status, options.probe_timeout_seconds);
}

}  // namespace

std::string PluginLibraryPath(const Backend& backend) {
  const auto* plugin = dynamic_cast<const PluginBackend*>(&backend);
  return plugin != nullptr ? plugin->library_path() : std::string();
}

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
    auto library = Load(path, absolute, options);
    if (!library.ok()) return fail(library.status());
    if (!library->died_loading.empty()) {
      return InvalidArgumentError("backend library '" + path + "' " + library->died_loading);
    }
    const std::string name = library->info.name;
    if (registry.Contains(name)) {
      return fail(InvalidArgumentError("the backend name '" + name + "' is already taken by " +
                                       registry.Description(name)));
    }
    std::string description = library->info.description;
    description += (description.empty() ? "" : " ") + std::string("[plugin ") +
                   io::ReportedPath(path).string() + "]";
    const std::string died = library->died;
    auto shared = std::make_shared<Library>(path, absolute.string(), std::move(library->info),
                                            /*announce=*/true);
    // The library is loaded into a process only where a backend of it is created: in isolated
    // runs the workers, never the process that writes the reports.
    const Status registered =
        died.empty()
            ? registry.Register(
                  name, std::move(description),
                  [shared]() -> StatusOr<std::unique_ptr<Backend>> {
                    MM_RETURN_IF_ERROR(shared->Open().WithContext(shared->Who()));
                    return std::unique_ptr<Backend>(std::make_unique<PluginBackend>(shared));
                  })
            // Judged like any backend, and every result says why it could not run.
            : registry.Register(name, description + " (" + died + ")",
                                [died, path]() -> StatusOr<std::unique_ptr<Backend>> {
                                  return InternalError("plugin '" + path + "' " + died);
                                });
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
