#include "mm/backends/cmd/cmd_backend.h"

#include <omp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>

#include "mm/engine/io/input_file.h"
#include "mm/engine/io/json.h"
#include "mm/engine/io/names.h"
#include "mm/engine/io/paths.h"
#include "mm/engine/process/process.h"

namespace mm::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// How much of a driver's stderr is kept (its end), and how much of it an error message quotes.
constexpr std::size_t kStderrKept = 16 * 1024;
constexpr std::size_t kStderrQuoted = 1500;
// Resident memory is sampled this often while a driver works.
constexpr auto kMemoryCheckInterval = std::chrono::milliseconds(100);

std::mutex g_limits_mutex;
DriverLimits g_limits;

std::string Seconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", seconds);
  return text;
}

std::string Mib(std::int64_t bytes) { return std::to_string((bytes + (1 << 19)) >> 20) + " MiB"; }

std::int64_t ResidentBytes(pid_t pid) {
  std::FILE* file = std::fopen(("/proc/" + std::to_string(pid) + "/statm").c_str(), "r");
  if (file == nullptr) return 0;
  long long size = 0, resident = 0;
  const int read = std::fscanf(file, "%lld %lld", &size, &resident);
  std::fclose(file);
  return read == 2 ? resident * sysconf(_SC_PAGESIZE) : 0;
}

// One running driver process: its socket, the end of its stderr, and the deadline of what it is
// doing. Reads and writes poll both descriptors, so a driver that fills its stderr never blocks.
class DriverProcess final : public ByteSource {
 public:
  DriverProcess(process::Program program, DriverLimits limits)
      : program_(std::move(program)), limits_(limits) {}

  // The deadline of what the driver is asked now: the limit's timeout from now.
  void StartClock() {
    deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(limits_.timeout_seconds));
  }

  Status Read(std::span<std::byte> into) override {
    while (!into.empty()) {
      const ssize_t n = recv(program_.io_fd(), into.data(), into.size(), MSG_DONTWAIT);
      if (n > 0) {
        into = into.subspan(static_cast<std::size_t>(n));
        continue;
      }
      if (n == 0) return Ended("ended before its answer was complete");
      if (errno != EAGAIN && errno != EINTR) {
        return Ended("closed its stdout (" + std::string(std::strerror(errno)) + ")");
      }
      MM_RETURN_IF_ERROR(Wait(POLLIN));
    }
    return OkStatus();
  }

  Status Write(std::span<const std::byte> bytes) {
    while (!bytes.empty()) {
      const ssize_t n =
          send(program_.io_fd(), bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        bytes = bytes.subspan(static_cast<std::size_t>(n));
        continue;
      }
      if (n < 0 && errno != EAGAIN && errno != EINTR) {
        return Ended("stopped reading its stdin (" + std::string(std::strerror(errno)) + ")");
      }
      MM_RETURN_IF_ERROR(Wait(POLLOUT));
    }
    return OkStatus();
  }

  // How many bytes wait unread on the driver's stdout: output nobody asked for.
  std::size_t Unrequested() {
    char peek[256];
    const ssize_t n = recv(program_.io_fd(), peek, sizeof(peek), MSG_PEEK | MSG_DONTWAIT);
    return n > 0 ? static_cast<std::size_t>(n) : 0;
  }

  // The last of its stderr, for messages: "; stderr: ..." or "".
  std::string StderrTail() {
    DrainStderr();
    std::string_view tail = stderr_;
    while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.remove_suffix(1);
    if (tail.empty()) return "";
    if (tail.size() > kStderrQuoted) tail = tail.substr(tail.size() - kStderrQuoted);
    std::string text;
    for (char c : tail) text += c == '\n' ? '|' : c;
    return "; its stderr ends: " + DriverText(text, kStderrQuoted + 8);
  }

  // Kills the driver and says how it ended: "crashed: SIGSEGV (signal 11)".
  std::string KillAndDescribe() {
    program_.Kill();
    auto ended = program_.Wait();
    return ended.ok() ? process::DescribeWaitStatus(ended->wait_status) : ended.status().message();
  }

 private:
  // The driver closed its end: reaps it and says how it ended. One that lives on (a daemon, a
  // driver that closed its stdout) is killed with its group after process::kExitGraceSeconds.
  Status Ended(const std::string& what) {
    const std::string tail = StderrTail();
    auto ended = program_.Wait(process::kExitGraceSeconds);
    std::string how =
        ended.ok() ? process::DescribeWaitStatus(ended->wait_status) : ended.status().message();
    if (ended.ok() && ended->timed_out) {
      how = "it did not exit within " + Seconds(process::kExitGraceSeconds) +
            " s after closing its stdout, and was killed";
    }
    return InternalError("the driver " + what + ": " + how + tail);
  }

  // Waits until the socket is ready for `events`, keeping stderr drained, the deadline and the
  // memory limit.
  Status Wait(short events) {
    while (true) {
      const auto now = Clock::now();
      if (now >= deadline_) {
        const std::string tail = StderrTail();
        KillAndDescribe();
        return InternalError("the driver did not answer within " +
                             Seconds(limits_.timeout_seconds) + " s (--timeout); it was killed" +
                             tail);
      }
      if (limits_.memory_limit_bytes > 0 && now - last_memory_check_ > kMemoryCheckInterval) {
        last_memory_check_ = now;
        const std::int64_t resident = ResidentBytes(program_.pid());
        if (resident > limits_.memory_limit_bytes) {
          const std::string tail = StderrTail();
          KillAndDescribe();
          return ResourceExhaustedError(
              "the driver went past the memory limit of " + Mib(limits_.memory_limit_bytes) +
              " (--memory-limit; resident memory " + Mib(resident) + "); it was killed" + tail);
        }
      }
      double wait_ms = std::chrono::duration<double, std::milli>(deadline_ - now).count();
      if (limits_.memory_limit_bytes > 0) wait_ms = std::min(wait_ms, 100.0);
      pollfd fds[2] = {{program_.io_fd(), events, 0}, {program_.stderr_fd(), POLLIN, 0}};
      const int ready = poll(fds, stderr_open_ ? 2 : 1, static_cast<int>(std::ceil(wait_ms)));
      if (ready <= 0) continue;
      if (stderr_open_ && fds[1].revents != 0) DrainStderr();
      if (fds[0].revents != 0) return OkStatus();
    }
  }

  void DrainStderr() {
    if (!stderr_open_ || program_.stderr_fd() < 0) return;
    char chunk[4096];
    while (true) {
      const ssize_t n = read(program_.stderr_fd(), chunk, sizeof(chunk));
      if (n > 0) {
        stderr_.append(chunk, static_cast<std::size_t>(n));
        if (stderr_.size() > 2 * kStderrKept) stderr_.erase(0, stderr_.size() - kStderrKept);
        continue;
      }
      if (n == 0) stderr_open_ = false;
      return;
    }
  }

  process::Program program_;
  DriverLimits limits_;
  Clock::time_point deadline_ = Clock::now();
  Clock::time_point last_memory_check_ = Clock::now();
  std::string stderr_;
  bool stderr_open_ = true;
};

// `status` with the end of the driver's stderr, unless it says it already.
Status WithTail(const Status& status, const std::string& tail) {
  if (status.message().find("; its stderr ends: ") != std::string::npos) return status;
  return Status(status.code(), status.message() + tail);
}

// A backend's drivers, one process at a time: started on demand (first at creation, for the
// hello), used by the backend's primitives, ended after any failure that leaves it in an unknown
// state, started anew for the next call. Calls are one at a time (the lock).
class DriverState {
 public:
  DriverState(DriverCommand command, DriverLimits limits, int threads)
      : command_(std::move(command)), limits_(limits), threads_(threads) {}

  const DriverCommand& command() const { return command_; }
  const Hello& hello() const { return hello_; }
  // The command as given may hold a newline (inside quotes): shown on one line.
  std::string Who() const {
    return "driver '" + command_.name + "' (" + DriverText(command_.command) + ")";
  }
  std::optional<double> last_seconds() {
    std::lock_guard lock(mutex_);
    return last_seconds_;
  }

  // Starts the driver and reads its hello (the first one is kept: Supports() answers by it).
  Status Start() {
    std::lock_guard lock(mutex_);
    return StartLocked();
  }

  // One request for `plan`: Y into `y`, or the call's error (a refusal is a conformance gap).
  Status Call(const MatMulPlan& plan, TensorView a, TensorView b, MutableTensorView y) {
    std::lock_guard lock(mutex_);
    last_seconds_.reset();
    if (!process_) MM_RETURN_IF_ERROR(StartLocked().WithContext("restarting it"));
    if (const std::size_t extra = process_->Unrequested(); extra > 0) {
      return Fail(InternalError("the driver wrote " + std::to_string(extra) +
                                "+ bytes to stdout after its last answer, unrequested"));
    }
    MM_ASSIGN_OR_RETURN(std::string start, MatMulRequestStart(++last_id_, plan));
    const std::size_t size = DTypeSize(plan.desc.dtype);
    const auto bytes = [size](const void* data, std::int64_t elements) {
      return std::span(static_cast<const std::byte*>(data),
                       static_cast<std::size_t>(elements) * size);
    };
    std::span<std::byte> y_bytes(static_cast<std::byte*>(y.data),
                                 static_cast<std::size_t>(plan.y_elements) * size);
    process_->StartClock();
    Status sent = process_->Write(std::as_bytes(std::span(start)));
    if (sent.ok()) sent = process_->Write(bytes(a.data, plan.a_elements));
    if (sent.ok()) sent = process_->Write(bytes(b.data, plan.b_elements));
    if (sent.ok()) sent = process_->Write(y_bytes);
    if (!sent.ok()) return Fail(sent);
    StatusOr<Reply> reply =
        ReadReply(*process_, Expected{last_id_, plan.desc.dtype, plan.y_dims}, y_bytes);
    if (!reply.ok()) return Fail(reply.status());
    last_seconds_ = reply->seconds;
    if (const std::size_t extra = process_->Unrequested(); extra > 0) {
      return Fail(InternalError("the driver wrote " + std::to_string(extra) +
                                "+ bytes to stdout after its answer, unrequested"));
    }
    return Answered(*reply, plan);
  }

 private:
  Status StartLocked() {
    process_.reset();
    process::ProgramOptions options;
    // A safety net under the sampling, as the workers have: allocations too fast for it.
    if (limits_.memory_limit_bytes > 0) options.data_limit_bytes = 2 * limits_.memory_limit_bytes;
    MM_ASSIGN_OR_RETURN(process::Program program, process::Program::Start(command_.argv, options));
    auto started = std::make_unique<DriverProcess>(std::move(program), limits_);
    started->StartClock();
    const std::string request = HelloRequest(threads_);
    Status said = started->Write(std::as_bytes(std::span(request)));
    StatusOr<Hello> hello = said.ok() ? ReadHello(*started) : StatusOr<Hello>(said);
    if (!hello.ok()) {
      const std::string tail = started->StderrTail();
      started->KillAndDescribe();
      return WithTail(hello.status(), tail).WithContext(Who() + ": no valid hello");
    }
    if (!hello_known_) hello_ = *std::move(hello);
    hello_known_ = true;
    process_ = std::move(started);
    return OkStatus();
  }

  // A failure after which the driver's state is unknown: it is ended, and started anew next call.
  Status Fail(const Status& status) {
    const std::string tail = process_->StderrTail();
    process_->KillAndDescribe();
    process_.reset();
    return WithTail(status, tail).WithContext(Who() + " (started anew for the next call)");
  }

  Status Answered(const Reply& reply, const MatMulPlan& plan) const {
    switch (reply.kind) {
      case Reply::Kind::kY:
        return OkStatus();
      case Reply::Kind::kError:
        return InternalError(Who() + " failed on " + plan.desc.ToString() + ": " + reply.text);
      case Reply::Kind::kRefused:
        break;
    }
    // Supports() let only dtypes the hello declares supported through: a refusal now is of a
    // problem the runtime claims it computes.
    return ConformanceGapError(Who() + " refused the " + reply.what + " of " +
                               plan.desc.ToString() +
                               ", a dtype its hello declares supported: " + reply.text);
  }

  const DriverCommand command_;
  const DriverLimits limits_;
  const int threads_;
  std::mutex mutex_;
  std::unique_ptr<DriverProcess> process_;
  Hello hello_;
  bool hello_known_ = false;
  std::uint64_t last_id_ = 0;
  std::optional<double> last_seconds_;
};

class CommandPrimitive final : public MatMulPrimitive {
 public:
  CommandPrimitive(MatMulPlan plan, std::shared_ptr<DriverState> state)
      : MatMulPrimitive(std::move(plan)), state_(std::move(state)) {}

  std::string implementation() const override {
    const Hello& hello = state_->hello();
    return hello.runtime + " " + hello.version + " through " + state_->Who();
  }

  std::optional<double> last_seconds() const { return state_->last_seconds(); }

 protected:
  Status Run(TensorView a, TensorView b, MutableTensorView y) override {
    return state_->Call(plan(), a, b, y);
  }

 private:
  std::shared_ptr<DriverState> state_;
};

class CommandBackend final : public Backend {
 public:
  explicit CommandBackend(std::shared_ptr<DriverState> state) : state_(std::move(state)) {}

  std::string_view name() const override { return state_->command().name; }

  Support Supports(const MatMulDesc& desc) const override {
    const DTypeDeclaration& declared = state_->hello().Of(desc.dtype);
    if (!declared.supported) {
      return Support::No(state_->hello().runtime + " " + state_->hello().version + ": " +
                         declared.refused);
    }
    if (!declared.conversion.empty()) return Support::ByConversion(declared.conversion);
    return Support::Native();
  }

  std::string RunsOn() const override {
    const Hello& hello = state_->hello();
    std::string text = hello.runtime + " " + hello.version;
    if (!hello.runs_on.empty()) text += " (" + hello.runs_on + ")";
    return text + "; driver: " + state_->command().command;
  }

  Arithmetic DeclaredArithmetic(DType dtype) const override {
    const DTypeDeclaration& declared = state_->hello().Of(dtype);
    return declared.supported ? declared.arithmetic : Arithmetic::OwnType(dtype);
  }

  const DriverState& state() const { return *state_; }

 protected:
  // K = 0 and empty Y go to the driver: how the runtime answers them is part of its conformance.
  bool JudgesDegenerateProducts() const override { return true; }

  StatusOr<std::unique_ptr<MatMulPrimitive>> PrepareProduct(const MatMulPlan& plan) override {
    const Support support = Supports(plan.desc);
    if (!support.supported()) {
      return UnimplementedError(state_->Who() + " does not support " + plan.desc.ToString() + ": " +
                                support.note);
    }
    return std::unique_ptr<MatMulPrimitive>(std::make_unique<CommandPrimitive>(plan, state_));
  }

 private:
  std::shared_ptr<DriverState> state_;
};

}  // namespace

void SetDriverLimits(const DriverLimits& limits) {
  std::lock_guard lock(g_limits_mutex);
  g_limits = limits;
}

DriverLimits GetDriverLimits() {
  std::lock_guard lock(g_limits_mutex);
  return g_limits;
}

StatusOr<std::vector<std::string>> SplitCommand(std::string_view command) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::exchange(word, {}));
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\\' && i + 1 < command.size()) {
      word += command[++i];
    } else if (c == '\'') {
      const std::size_t close = command.find('\'', i + 1);
      if (close == std::string_view::npos) return InvalidArgumentError("unclosed ' in the command");
      word.append(command.substr(i + 1, close - i - 1));
      i = close;
    } else if (c == '"') {
      std::size_t j = i + 1;
      for (; j < command.size() && command[j] != '"'; ++j) {
        if (command[j] == '\\' && j + 1 < command.size() &&
            std::string_view("$`\"\\\n").find(command[j + 1]) != std::string_view::npos) {
          ++j;
        }
        word += command[j];
      }
      if (j >= command.size()) return InvalidArgumentError("unclosed \" in the command");
      i = j;
    } else {
      word += c;
    }
  }
  if (in_word) words.push_back(std::move(word));
  if (words.empty()) return InvalidArgumentError("the command is empty");
  return words;
}

std::string AbsoluteCommand(const std::vector<std::string>& argv) {
  std::string out;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string word = argv[i];
    const std::filesystem::path path(word);
    std::error_code ec;
    const bool relative = !word.empty() && path.is_relative() && word[0] != '-';
    const bool a_path =
        i == 0 ? word.find('/') != std::string::npos : std::filesystem::exists(path, ec);
    if (relative && a_path) {
      const auto absolute = std::filesystem::absolute(path, ec);
      // "CWD/run/../drivers/d.py" shortened where it still names the same file.
      const auto normal = absolute.lexically_normal();
      if (!ec) word = std::filesystem::equivalent(absolute, normal, ec) ? normal : absolute;
    }
    const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("/._-+=:,@%", c) != nullptr;
    });
    std::string quoted = "'";
    for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += (i == 0 ? "" : " ") + (plain ? word : quoted + "'");
  }
  return out;
}

StatusOr<DriverCommand> ParseBackendCmd(std::string_view text) {
  const std::size_t equals = text.find('=');
  if (equals == std::string_view::npos) {
    return InvalidArgumentError("--backend-cmd '" + DriverText(text, 200) +
                                "': expected NAME=COMMAND");
  }
  DriverCommand command{
      std::string(text.substr(0, equals)), std::string(text.substr(equals + 1)), {}};
  const std::string where = "--backend-cmd " + DriverText(command.name, 80);
  MM_RETURN_IF_ERROR(io::CheckName(command.name, "the backend name").WithContext(where));
  auto argv = SplitCommand(command.command);
  if (!argv.ok()) return argv.status().WithContext(where);
  command.argv = *std::move(argv);
  command.absolute = AbsoluteCommand(command.argv);
  return command;
}

StatusOr<std::unique_ptr<Backend>> StartCommandBackend(const DriverCommand& command) {
  DriverLimits limits = GetDriverLimits();
  if (command.timeout_seconds > 0) limits.timeout_seconds = command.timeout_seconds;
  auto state = std::make_shared<DriverState>(command, limits, omp_get_max_threads());
  MM_RETURN_IF_ERROR(state->Start());
  return std::unique_ptr<Backend>(std::make_unique<CommandBackend>(std::move(state)));
}

std::string DriverCommandOf(const Backend& backend) {
  const auto* command = dynamic_cast<const CommandBackend*>(&backend);
  if (command == nullptr || command->state().command().shipped) return "";
  const DriverCommand& given = command->state().command();
  return given.absolute.empty() ? given.command : given.absolute;
}

std::string PythonPath() {
  const char* python = std::getenv("MM_PYTHON");
  return python != nullptr && *python != '\0' ? python : "/usr/bin/python3";
}

std::filesystem::path DriversDir() {
  if (const char* dir = std::getenv("MM_RUNTIMES_DIR"); dir != nullptr && *dir != '\0') return dir;
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto installed = exe.parent_path().parent_path() / "share/mm/runtimes/python";
    if (std::filesystem::exists(installed / "mm_runtime/__init__.py", ec)) return installed;
  }
  return MM_RUNTIMES_SOURCE_DIR;
}

std::optional<double> LastRuntimeSeconds(const MatMulPrimitive& primitive) {
  const auto* command = dynamic_cast<const CommandPrimitive*>(&primitive);
  return command != nullptr ? command->last_seconds() : std::nullopt;
}

Status RegisterCommandBackends(BackendRegistry& registry, std::span<const std::string> specs) {
  for (const std::string& spec : specs) {
    MM_ASSIGN_OR_RETURN(DriverCommand command, ParseBackendCmd(spec));
    const std::string where = "--backend-cmd " + command.name;
    if (registry.Contains(command.name) || !registry.UnavailableReason(command.name).empty()) {
      return InvalidArgumentError(where + ": the backend name '" + command.name +
                                  "' is already taken by " + registry.Description(command.name));
    }
    // What the probe's driver starts and leaves (a daemon) ends with it, whoever calls.
    const process::Subreaper subreaper;
    auto probe = StartCommandBackend(command);
    if (!probe.ok()) return InvalidArgumentError(where + ": " + probe.status().message());
    const std::string description = (*probe)->RunsOn() + " [runtime protocol]";
    probe->reset();  // Its driver ends here; each instance starts its own.
    MM_RETURN_IF_ERROR(registry.Register(command.name, description,
                                         [command]() -> StatusOr<std::unique_ptr<Backend>> {
                                           return StartCommandBackend(command);
                                         }));
  }
  return OkStatus();
}

namespace {

struct ShippedDriver {
  const char* name;     // The backend's name, and the Python module it needs.
  const char* script;   // In the drivers' folder.
  const char* package;  // The Debian package of the module.
  const char* what;
};

constexpr ShippedDriver kShippedDrivers[] = {
    {"numpy", "numpy_driver.py", "python3-numpy", "numpy.matmul into mm's Y buffer (out=)"},
    {"torch", "torch_driver.py", "python3-torch",
     "torch.matmul on the CPU into mm's Y buffer (out=), at mm's thread count"},
};

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

// Module -> version ("-": not installed) as `python` reports them, or why it could not say;
// asked once per process and python.
StatusOr<std::map<std::string, std::string>> ModuleVersions(const std::string& python) {
  static std::mutex mutex;
  static std::map<std::string, StatusOr<std::map<std::string, std::string>>> cache;
  std::lock_guard lock(mutex);
  if (auto it = cache.find(python); it != cache.end()) return it->second;
  std::vector<std::string> argv = {python, "-c", kProbe};
  for (const ShippedDriver& driver : kShippedDrivers) argv.push_back(driver.name);
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
    std::size_t at = 0;
    while (at < out.size()) {
      const std::size_t end = std::min(out.find('\n', at), out.size());
      const std::string line = out.substr(at, end - at);
      if (const std::size_t space = line.find(' '); space != std::string::npos) {
        (*versions)[line.substr(0, space)] = line.substr(space + 1);
      }
      at = end + 1;
    }
    if (versions->empty()) {
      versions = FailedPreconditionError(python + " did not run" + probe.StderrTail());
    }
  }
  return cache.emplace(python, versions).first->second;
}

// The Python drivers (backends/runtimes/python), each needing a Debian Python module.
Status RegisterPythonDrivers(BackendRegistry& registry) {
  const std::string python = PythonPath();
  const std::filesystem::path dir = DriversDir();
  std::error_code ec;
  const bool have_python = std::filesystem::exists(python, ec);
  StatusOr<std::map<std::string, std::string>> versions =
      have_python ? ModuleVersions(python) : NotFoundError(python + " not found (set MM_PYTHON)");
  for (const ShippedDriver& shipped : kShippedDrivers) {
    const std::filesystem::path script = dir / shipped.script;
    const std::string shown = io::ReportedPath(script, MM_SOURCE_DIR).string();
    std::string what = std::string(shipped.what) + " through the Python driver " + shown +
                       " (runtime protocol; run when named: --backend " + shipped.name + ")";
    std::string why;
    if (!versions.ok()) {
      why = versions.status().message();
    } else if (auto it = versions->find(shipped.name); it == versions->end() || it->second == "-") {
      why = std::string("the Python module ") + shipped.name + " is not installed for " + python +
            " (Debian package " + shipped.package + "; scripts/setup.sh installs it)";
    } else if (!std::filesystem::exists(script, ec)) {
      why = "the driver " + shown + " is not there (set MM_RUNTIMES_DIR)";
    } else {
      what = shipped.name + std::string(" ") + it->second + ": " + what;
    }
    if (!why.empty()) {
      MM_RETURN_IF_ERROR(registry.RegisterUnavailable(shipped.name, what, why));
      continue;
    }
    DriverCommand command{shipped.name,
                          python + " " + shown,
                          {python, script.string()},
                          /*shipped=*/true};
    MM_RETURN_IF_ERROR(registry.Register(
        shipped.name, what,
        [command]() -> StatusOr<std::unique_ptr<Backend>> { return StartCommandBackend(command); },
        BackendRegistry::Selection::kOnRequest));
  }
  return OkStatus();
}

// The Node.js drivers (backends/runtimes/js), each needing npm packages that scripts/setup.sh
// installs with `npm ci --ignore-scripts` from the committed package-lock.json.
struct NodeDriver {
  const char* name;
  const char* script;    // In the JavaScript drivers' folder.
  const char* argument;  // Given to the script ("" for none).
  const char* package;   // The npm package whose version the backend reports.
  const char* what;
};

constexpr NodeDriver kNodeDrivers[] = {
    {"onnxruntime", "onnxruntime_driver.js", "", "onnxruntime-node",
     "ONNX Runtime for Node.js, CPU execution provider, one session per dtype and ranks"},
    {"onnxruntime-web", "onnxruntime_web_driver.js", "", "onnxruntime-web",
     "ONNX Runtime Web's wasm backend under Node.js, one session per dtype and ranks"},
    {"tfjs", "tfjs_driver.js", "cpu", "@tensorflow/tfjs-backend-cpu",
     "TensorFlow.js tf.matMul on its cpu backend"},
    {"tfjs-wasm", "tfjs_driver.js", "wasm", "@tensorflow/tfjs-backend-wasm",
     "TensorFlow.js tf.matMul on its wasm backend (XNNPACK)"},
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

Status RegisterNodeDrivers(BackendRegistry& registry) {
  const std::string node = EnvOr("MM_NODE", "/usr/bin/node");
  const std::filesystem::path dir = EnvOr(
      "MM_JS_RUNTIMES_DIR", InstalledOr("js", "mm_runtime.js", MM_JS_RUNTIMES_SOURCE_DIR).string());
  const std::filesystem::path modules =
      EnvOr("MM_NPM_DIR", InstalledOr("js/node_modules", "", MM_NPM_SOURCE_DIR).string());
  std::error_code ec;
  for (const NodeDriver& shipped : kNodeDrivers) {
    const std::filesystem::path script = dir / shipped.script;
    const std::string shown = io::ReportedPath(script, MM_SOURCE_DIR).string();
    std::string what = std::string(shipped.what) + " through the Node.js driver " + shown +
                       " (runtime protocol; run when named: --backend " + shipped.name + ")";
    StatusOr<std::string> version = NpmVersion(modules, shipped.package);
    std::string why;
    if (!std::filesystem::exists(node, ec)) {
      why = node + " not found (Debian package nodejs; or set MM_NODE)";
    } else if (!version.ok()) {
      why = std::string("the npm package ") + shipped.package + " is not installed in " +
            io::ReportedPath(modules, MM_SOURCE_DIR).string() +
            " (scripts/setup.sh installs it; or set MM_NPM_DIR): " + version.status().message();
    } else if (!std::filesystem::exists(script, ec)) {
      why = "the driver " + shown + " is not there (set MM_JS_RUNTIMES_DIR)";
    } else {
      what = std::string(shipped.package) + " " + *version + ": " + what;
    }
    if (!why.empty()) {
      MM_RETURN_IF_ERROR(registry.RegisterUnavailable(shipped.name, what, why));
      continue;
    }
    // env sets NODE_PATH, so the driver finds the packages wherever they were installed.
    std::vector<std::string> argv = {"/usr/bin/env", "NODE_PATH=" + modules.string(), node,
                                     script.string()};
    if (*shipped.argument != '\0') argv.push_back(shipped.argument);
    std::string command = node + " " + shown;
    if (*shipped.argument != '\0') command += std::string(" ") + shipped.argument;
    DriverCommand driver{shipped.name, command, argv, /*shipped=*/true};
    MM_RETURN_IF_ERROR(registry.Register(
        shipped.name, what,
        [driver]() -> StatusOr<std::unique_ptr<Backend>> { return StartCommandBackend(driver); },
        BackendRegistry::Selection::kOnRequest));
  }
  return OkStatus();
}

}  // namespace

Status RegisterShippedDrivers(BackendRegistry& registry) {
  MM_RETURN_IF_ERROR(RegisterPythonDrivers(registry));
  return RegisterNodeDrivers(registry);
}

}  // namespace mm::runtime
