#include "backends/plugin/plugin_loader.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <set>

#include "engine/backend.h"
#include "engine/matmul_plan.h"
#include "mm/mm_backend_plugin.h"

namespace mm {
namespace {

// Size of every text buffer handed to a plugin (the header promises at least 256).
constexpr std::size_t kTextCapacity = 1024;
constexpr std::size_t kMaxNameLength = 64;

// Text from a plugin as mm can print and store it: valid UTF-8 sequences kept (strictly: no
// overlong forms, surrogates or code points above U+10FFFF, as JSON writers demand), control
// characters and every other byte replaced by '?'.
std::string Sanitized(std::string_view text) {
  std::string out;
  std::size_t i = 0;
  while (i < text.size()) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
    const unsigned char c = byte(0);
    std::size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;  // Allowed range of the second byte.
    if (c >= 0x20 && c < 0x7F) {
      length = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      length = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      length = 3;
      if (c == 0xE0) low = 0xA0;
      if (c == 0xED) high = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      length = 4;
      if (c == 0xF0) low = 0x90;
      if (c == 0xF4) high = 0x8F;
    }
    bool valid = length > 0 && i + length <= text.size();
    for (std::size_t k = 1; valid && k < length; ++k) {
      valid = k == 1 ? (byte(1) >= low && byte(1) <= high) : (byte(k) >= 0x80 && byte(k) <= 0xBF);
    }
    if (valid) {
      out.append(text.substr(i, length));
      i += length;
    } else {
      out += '?';
      ++i;
    }
  }
  return out;
}

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

// One loaded library: its table and the lock that keeps calls into it one at a time (the ABI
// promises plugins they are never called concurrently, whatever the number of Backend instances).
// The library is never unloaded: backends, primitives and strings may still point into it.
class Library {
 public:
  // `table` is `size` bytes long (its version's size); the fields of later versions stay zero.
  Library(std::string path, std::string absolute_path, const mm_backend_plugin* table,
          std::size_t size)
      : path_(std::move(path)), absolute_path_(std::move(absolute_path)), name_(table->name) {
    std::memcpy(&table_, table, std::min(size, sizeof(table_)));
    for (DType dtype : kAllDTypes) arithmetic_[Index(dtype)] = Arithmetic::OwnType(dtype);
  }

  const std::string& path() const { return path_; }
  const std::string& absolute_path() const { return absolute_path_; }
  const std::string& name() const { return name_; }
  const mm_backend_plugin& table() const { return table_; }
  std::mutex& mutex() { return mutex_; }

  const Arithmetic& arithmetic(DType dtype) const { return arithmetic_[Index(dtype)]; }
  void set_arithmetic(DType dtype, Arithmetic arithmetic) {
    arithmetic_[Index(dtype)] = arithmetic;
  }

  // "plugin 'name' (path)": the context added to errors met during a run. (At load time the
  // refusal names the file already.)
  std::string Who() const { return "plugin '" + name_ + "' (" + path_ + ")"; }

  // Asks supports(); a contract violation (an answer outside the three values, or no note where
  // one is required) is returned as an error.
  StatusOr<Support> AskSupports(const Problem& problem) {
    TextBuffer text;
    std::int32_t answer;
    {
      std::lock_guard lock(mutex_);
      answer = table_.supports(problem.get(), text.data(), text.capacity());
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
  static std::size_t Index(DType dtype) {
    return static_cast<std::size_t>(std::find(kAllDTypes.begin(), kAllDTypes.end(), dtype) -
                                    kAllDTypes.begin());
  }

  std::string path_;
  std::string absolute_path_;
  mm_backend_plugin table_{};  // A copy: the plugin promised it never changes.
  std::string name_;
  std::mutex mutex_;
  std::array<Arithmetic, kAllDTypes.size()> arithmetic_;  // Declared (or default), per dtype.
};

class PluginPrimitive final : public MatMulPrimitive {
 public:
  // `handle` came from a successful prepare; it is released here, once.
  PluginPrimitive(MatMulPlan plan, std::shared_ptr<Library> library, void* handle)
      : MatMulPrimitive(std::move(plan)), library_(std::move(library)), handle_(handle) {}
  ~PluginPrimitive() override {
    std::lock_guard lock(library_->mutex());
    library_->table().release(handle_);
  }

  // The plugin's describe() for this handle; empty when it has none.
  std::string implementation() const override {
    if (library_->table().describe == nullptr) return "";
    TextBuffer text;
    {
      std::lock_guard lock(library_->mutex());
      library_->table().describe(handle_, text.data(), text.capacity());
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
      code = library_->table().execute(handle_, &a_tensor, &b_tensor, &y_tensor, text.data(),
                                       text.capacity());
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
           std::to_string(library_->table().abi_version) + ")";
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
      code = library_->table().prepare(problem.get(), &handle, text.data(), text.capacity());
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
Status AskArithmetic(Library& library) {
  const auto declare = library.table().arithmetic;
  if (declare == nullptr) return OkStatus();
  for (DType dtype : kAllDTypes) {
    mm_arithmetic answer{ToPluginDType(dtype), 0};
    {
      std::lock_guard lock(library.mutex());
      declare(ToPluginDType(dtype), &answer);
    }
    const std::string what = "arithmetic() of plugin '" + library.name() + "' for " +
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
    library.set_arithmetic(dtype, {*accumulation, answer.flushes_subnormals == 1});
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
  const std::int32_t prepared = table.prepare(problem.get(), &handle, text.data(), text.capacity());
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
  const std::int32_t executed = table.execute(handle, &a_tensor, &b_tensor, &y_tensor,
                                              execute_text.data(), execute_text.capacity());
  table.release(handle);
  return library.IsViolation(executed, execute_text)
             ? library.ToStatus("execute", executed, execute_text, plan.desc)
             : OkStatus();
}

// What a probe run in a child process gave: the probe's own verdict, or, when the child died or
// hung before giving one, what happened ("crashed during the load probe: SIGABRT (signal 6)").
struct IsolatedProbe {
  Status verdict;
  std::string died;
};

// Runs Probe in a child process, so a plugin that crashes, aborts, exits or hangs on the probe's
// problem cannot take the tool down; the child is killed after `timeout_seconds`.
IsolatedProbe ProbeInChild(Library& library, double timeout_seconds) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return {Probe(library), ""};
  // Buffered output would otherwise be written twice if the plugin calls exit().
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return {Probe(library), ""};
  }
  if (pid == 0) {
    close(fds[0]);
    const Status verdict = Probe(library);
    const std::string message =
        std::to_string(static_cast<int>(verdict.code())) + "\n" + verdict.message();
    std::size_t done = 0;
    while (done < message.size()) {
      const ssize_t n = write(fds[1], message.data() + done, message.size() - done);
      if (n <= 0) break;
      done += static_cast<std::size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string answer;
  bool hung = false;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  while (true) {
    const double left =
        std::chrono::duration<double, std::milli>(deadline - std::chrono::steady_clock::now())
            .count();
    if (left <= 0) {
      hung = true;
      break;
    }
    pollfd fd{fds[0], POLLIN, 0};
    const int ready = poll(&fd, 1, static_cast<int>(std::ceil(left)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char chunk[4096];
    const ssize_t n = read(fds[0], chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    answer.append(chunk, static_cast<std::size_t>(n));
  }
  close(fds[0]);
  if (hung) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::size_t newline = answer.find('\n');
  if (!hung && WIFEXITED(status) && WEXITSTATUS(status) == 0 && newline != std::string::npos) {
    const int code = std::atoi(answer.substr(0, newline).c_str());
    if (code == 0) return {OkStatus(), ""};
    return {Status(static_cast<StatusCode>(code), answer.substr(newline + 1)), ""};
  }
  if (hung) {
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%g", timeout_seconds);
    return {OkStatus(),
            std::string("hung during the load probe (no answer within ") + seconds + " s)"};
  }
  if (WIFSIGNALED(status)) {
    const char* abbrev = sigabbrev_np(WTERMSIG(status));
    return {OkStatus(), "crashed during the load probe: " +
                            (abbrev ? "SIG" + std::string(abbrev) : std::string("signal")) +
                            " (signal " + std::to_string(WTERMSIG(status)) + ")"};
  }
  return {OkStatus(),
          "exited with status " + std::to_string(WEXITSTATUS(status)) + " during the load probe"};
}

Status CheckName(const std::string& name) {
  if (name.empty()) return InvalidArgumentError("the backend name is empty");
  if (name.size() > kMaxNameLength) {
    return InvalidArgumentError("the backend name '" + name.substr(0, kMaxNameLength) +
                                "...' is longer than 64 characters");
  }
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) {
      std::string shown;
      for (char s : name) shown += (s >= 0x20 && s < 0x7f) ? s : '?';
      return InvalidArgumentError("the backend name '" + shown +
                                  "' has a character outside [A-Za-z0-9_-]");
    }
  }
  return OkStatus();
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

// Loads and checks one library; returns it, or the refusal (without the "backend library" prefix).
// `died` receives what happened when the probe's child died or hung (the library is then
// returned, to be registered as a backend that cannot start).
StatusOr<std::shared_ptr<Library>> Load(const std::string& path,
                                        const std::filesystem::path& absolute,
                                        const PluginLoadOptions& options, std::string& died) {
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
  // RTLD_NOW: an unresolved symbol is a refusal now, not a crash in the middle of a run.
  void* handle = dlopen(absolute.c_str(), RTLD_NOW | RTLD_LOCAL);
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
  const mm_backend_plugin* table = reinterpret_cast<mm_backend_plugin_entry_fn>(entry)();
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
  const std::size_t size = version == 1 ? MM_BACKEND_PLUGIN_V1_SIZE : sizeof(mm_backend_plugin);
  if (table->name == nullptr) return InvalidArgumentError("the backend name is NULL");
  MM_RETURN_IF_ERROR(CheckName(table->name));
  std::string null_functions;
  for (const auto& [field, is_null] : {std::pair{"supports", table->supports == nullptr},
                                       {"prepare", table->prepare == nullptr},
                                       {"execute", table->execute == nullptr},
                                       {"release", table->release == nullptr}}) {
    if (is_null) null_functions += (null_functions.empty() ? "" : ", ") + std::string(field);
  }
  if (!null_functions.empty()) {
    return InvalidArgumentError("required function pointer(s) NULL in the table of '" +
                                std::string(table->name) + "': " + null_functions);
  }
  auto library = std::make_shared<Library>(path, absolute.string(), table, size);
  MM_RETURN_IF_ERROR(AskArithmetic(*library));
  if (!options.isolate_probe) {
    MM_RETURN_IF_ERROR(Probe(*library));
    return library;
  }
  IsolatedProbe probe = ProbeInChild(*library, options.probe_timeout_seconds);
  MM_RETURN_IF_ERROR(probe.verdict);
  died = std::move(probe.died);
  return library;
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
    std::string died;
    auto library = Load(path, absolute, options, died);
    if (!library.ok()) return fail(library.status());
    const std::string& name = (*library)->name();
    if (registry.Contains(name)) {
      return fail(InvalidArgumentError("the backend name '" + name + "' is already taken by " +
                                       registry.Description(name)));
    }
    std::string description = (*library)->table().description != nullptr
                                  ? Sanitized((*library)->table().description)
                                  : std::string();
    description += (description.empty() ? "" : " ") + std::string("[plugin ") + path + "]";
    std::shared_ptr<Library> shared = *library;
    const Status registered =
        died.empty() ? registry.Register(name, std::move(description),
                                         [shared]() -> StatusOr<std::unique_ptr<Backend>> {
                                           return std::unique_ptr<Backend>(
                                               std::make_unique<PluginBackend>(shared));
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
