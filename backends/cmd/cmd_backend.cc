#include "mm/backends/cmd/cmd_backend.h"

#include <omp.h>

#include <mutex>
#include <optional>

#include "driver_process.h"
#include "mm/backends/cmd/family_protocol.h"
#include "mm/engine/process/process.h"
#include "mm/family/backend.h"

namespace mm::runtime {
namespace {

std::mutex g_limits_mutex;
DriverLimits g_limits;

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
    MM_RETURN_IF_ERROR(Ready());
    MM_ASSIGN_OR_RETURN(const MatMulRequest request, MakeMatMulRequest(++last_id_, plan));
    const std::size_t size = DTypeSize(plan.desc.dtype);
    const auto bytes = [size](const void* data, std::int64_t elements) {
      return std::span(static_cast<const std::byte*>(data),
                       static_cast<std::size_t>(elements) * size);
    };
    process_->StartClock();
    MM_ASSIGN_OR_RETURN(
        const Reply reply,
        Checked(ExchangeMatMul(*process_, request, bytes(a.data, plan.a_elements),
                               bytes(b.data, plan.b_elements),
                               std::span(static_cast<std::byte*>(y.data),
                                         static_cast<std::size_t>(plan.y_elements) * size))));
    return Answered(reply, plan.desc.ToString(), ", a dtype its hello declares supported");
  }

  // One operator request for the family problem `plan`: Y into `y`, or the call's error.
  Status CallOperator(const family::Plan& plan, MutableTensorView y) {
    std::lock_guard lock(mutex_);
    MM_RETURN_IF_ERROR(Ready());
    MM_ASSIGN_OR_RETURN(const OperatorRequest request, MakeOperatorRequest(++last_id_, plan));
    const std::size_t y_bytes =
        static_cast<std::size_t>(plan.product.y_elements) * DTypeSize(plan.y_dtype);
    process_->StartClock();
    MM_ASSIGN_OR_RETURN(
        const Reply reply,
        Checked(ExchangeOperator(*process_, request, plan,
                                 std::span(static_cast<std::byte*>(y.data), y_bytes))));
    return Answered(reply, plan.ToString(),
                    "; its hello declares that operator, version and element types supported");
  }

 private:
  Status StartLocked() {
    process_.reset();
    // Stopped: a driver started now would be killed at its hello.
    if (process::StopRequested()) {
      return CancelledError(Who() + ": not started: the run was stopped");
    }
    process::ProgramOptions options;
    // A safety net under the sampling, as the workers have: allocations too fast for it.
    if (limits_.memory_limit_bytes > 0) options.data_limit_bytes = 2 * limits_.memory_limit_bytes;
    MM_ASSIGN_OR_RETURN(process::Program program, process::Program::Start(command_.argv, options));
    auto started = std::make_unique<DriverProcess>(std::move(program), limits_);
    started->StartClock();
    StatusOr<Hello> hello = ExchangeHellos(*started, threads_);
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

  // Before a request: a driver running (started anew after a failure) that has written nothing
  // unrequested since its last answer.
  Status Ready() {
    last_seconds_.reset();
    if (!process_) MM_RETURN_IF_ERROR(StartLocked().WithContext("restarting it"));
    if (const std::size_t extra = process_->Unrequested(); extra > 0) {
      return Fail(InternalError("the driver wrote " + std::to_string(extra) +
                                "+ bytes to stdout after its last answer, unrequested"));
    }
    return OkStatus();
  }

  // After an exchange: its reply, or the failure that ends the driver (the exchange's, or output
  // after the answer nobody asked for).
  StatusOr<Reply> Checked(StatusOr<Reply> reply) {
    if (!reply.ok()) return Fail(reply.status());
    last_seconds_ = reply->seconds;
    if (const std::size_t extra = process_->Unrequested(); extra > 0) {
      return Fail(InternalError("the driver wrote " + std::to_string(extra) +
                                "+ bytes to stdout after its answer, unrequested"));
    }
    return reply;
  }

  // A failure after which the driver's state is unknown: it is ended, and started anew next call.
  Status Fail(const Status& status) {
    const std::string tail = process_->StderrTail();
    process_->KillAndDescribe();
    process_.reset();
    return WithTail(status, tail).WithContext(Who() + " (started anew for the next call)");
  }

  // The status of a reply to the request of `problem`; `declared` says what of the hello a refusal
  // goes against.
  Status Answered(const Reply& reply, const std::string& problem, std::string_view declared) const {
    switch (reply.kind) {
      case Reply::Kind::kY:
        return OkStatus();
      case Reply::Kind::kError:
        return InternalError(Who() + " failed on " + problem + ": " + reply.text);
      case Reply::Kind::kRefused:
        break;
    }
    // Only what the hello declares supported is asked: a refusal now is of a problem the runtime
    // claims it computes.
    return ConformanceGapError(Who() + " refused the " + reply.what + " of " + problem +
                               std::string(declared) + ": " + reply.text);
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

// The family's operators as the driver's hello declares them (protocol 2); a driver of protocol
// 1, or one whose hello declares none, refuses each with the reason (OperatorSupport).
class CommandFamily final : public family::FamilyBackend {
 public:
  explicit CommandFamily(std::shared_ptr<DriverState> state) : state_(std::move(state)) {}

  Support SupportsOp(const family::OpDesc& desc) const override {
    Support support = OperatorSupport(state_->hello(), desc);
    if (!support.supported()) support.note = Runtime() + ": " + support.note;
    return support;
  }

  Arithmetic DeclaredArithmetic(const family::OpDesc& desc) const override {
    return OperatorArithmetic(state_->hello(), desc);
  }

  Status Compute(const family::Plan& plan, MutableTensorView y) override {
    const family::OpDesc desc = family::DescOf(plan);
    const Support support = SupportsOp(desc);
    if (!support.supported()) {
      return UnimplementedError(state_->Who() + " does not compute " + desc.ToString() + ": " +
                                support.note);
    }
    return state_->CallOperator(plan, y);
  }

  std::string Implementation(const family::OpDesc& /*desc*/) const override {
    return Runtime() + " through " + state_->Who();
  }

 private:
  std::string Runtime() const { return state_->hello().runtime + " " + state_->hello().version; }

  std::shared_ptr<DriverState> state_;
};

class CommandBackend final : public Backend {
 public:
  explicit CommandBackend(std::shared_ptr<DriverState> state)
      : state_(std::move(state)), family_(state_) {}

  // Always there: what the driver does not compute, it refuses with its hello's reason.
  family::FamilyBackend* family() override { return &family_; }

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
  CommandFamily family_;
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

std::optional<double> LastRuntimeSeconds(const MatMulPrimitive& primitive) {
  const auto* command = dynamic_cast<const CommandPrimitive*>(&primitive);
  return command != nullptr ? command->last_seconds() : std::nullopt;
}

}  // namespace mm::runtime
