// Backends that misbehave on purpose, for testing verdicts and exit codes.
#ifndef MM_CONFORMANCE_TESTS_FAKE_BACKENDS_H_
#define MM_CONFORMANCE_TESTS_FAKE_BACKENDS_H_

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

#include "mm/backends/reference/reference_backend.h"
#include "mm/backends/testing/reference_kernel.h"
#include "mm/conformance/isolation/worker_protocol.h"
#include "mm/conformance/running/runner.h"
#include "mm/engine/process/process.h"
#include "mm/engine/registry.h"
#include "mm/engine/testing/fake_backend.h"
#include "mm/engine/testing/sanitizers.h"

namespace mm::conformance::testing {

// What a fake backend does wrong. kSegfault to kExit, and kForgesAnswer, misbehave only on
// kTriggerADims (one case) and compute correctly otherwise; the first five bring down or hang the
// process they run in.
enum class Fault {
  kNone,
  kNudgeFirstElement,
  kUnsupported,
  kByConversion,
  kPrepareFails,
  kThrows,
  kSegfault,            // Writes through a null pointer: SIGSEGV.
  kDivideByZero,        // Integer division by zero: SIGFPE (as oneDNN 2.6 does on zero extents).
  kAbort,               // std::abort(): SIGABRT.
  kEndlessLoop,         // Never returns.
  kExit,                // std::exit(3) from inside Execute.
  kReportsProcess,      // UNSUPPORTED, naming the process it runs in ("runs in process 123").
  kReportsResident,     // UNSUPPORTED, naming its process's resident memory ("resident 1234 KiB").
  kSlowReportsProcess,  // As kReportsProcess, after 30 ms (a long case).
  kForgesAnswer,        // Writes an answer for another task on its worker's socket, then computes.
};

// Under AddressSanitizer a SIGSEGV or SIGFPE is caught by the sanitizer, reported, and the
// process ends with an abort (abort_on_error=1, as the asan preset sets) or exit status 1 (UBSan
// stops at the null store first): the worker still dies, but not of that signal.
#if MM_UNDER_ASAN
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif

// What a worker's death of `signal_text` ("SIGSEGV (signal 11)") reads as in this build.
inline std::string CrashedBy(const std::string& signal_text) {
  return kSanitizedBuild ? "crashed: " : "crashed: " + signal_text;
}

// The A shape on which the crashing faults strike.
inline const Dims kTriggerADims = {3, 7};

// The crashes, kept out of the sanitizers' reach: the point is what the process dies of.
__attribute__((noinline, no_sanitize("undefined"))) inline int DivideBy(int divisor) {
  volatile int dividend = 1, volatile_divisor = divisor;
  return dividend / volatile_divisor;
}

// Writes a well-formed PASS result, tagged for a task nobody sent, on every stream socket of this
// process (in a worker: the one to the parent of the run).
inline void ForgeAnswer() {
  Result forged;
  forged.case_name = "test_trigger";
  forged.backend = "forges_answer";
  forged.verdict = Verdict::kPass;
  std::string payload, frame;
  WireWriter out(payload);
  EncodeResult(forged, out);
  AppendAnswer(frame, kResult, {~std::uint64_t{0}, 0}, payload);
  for (int fd = 3; fd < 1024; ++fd) {
    struct stat info {};
    int type = 0;
    socklen_t size = sizeof(type);
    if (fstat(fd, &info) != 0 || !S_ISSOCK(info.st_mode) ||
        getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &size) != 0 || type != SOCK_STREAM) {
      continue;
    }
    WriteAll(fd, frame);
  }
}

// The kernel of a backend with `fault`: the reference's answer, after the fault's misdeed on
// kTriggerADims (kThrows on every product, kNudgeFirstElement after computing).
inline ::mm::testing::FakeKernel FaultyKernel(Fault fault) {
  return [fault, reference = ::mm::testing::ReferenceKernel()](
             const MatMulPlan& plan, TensorView a, TensorView b, MutableTensorView y) -> Status {
    if (fault == Fault::kThrows) throw std::runtime_error("kaboom");
    if (plan.desc.a_dims == kTriggerADims) {
      switch (fault) {
        case Fault::kSegfault:
          ::mm::testing::WriteThroughNull();
          break;
        case Fault::kDivideByZero:
          y.Data<float>()[0] = static_cast<float>(DivideBy(0));
          return OkStatus();
        case Fault::kAbort:
          std::abort();
        case Fault::kEndlessLoop:
          ::mm::testing::BlockForever();
          break;
        case Fault::kExit:
          std::exit(3);
        case Fault::kForgesAnswer:
          ForgeAnswer();
          break;
        default:
          break;
      }
    }
    MM_RETURN_IF_ERROR(reference(plan, a, b, y));
    if (fault == Fault::kNudgeFirstElement && y.NumElements() > 0) {
      y.Data<float>()[0] *= 1.01f;  // One percent off: outside rtol 1e-3.
    }
    return OkStatus();
  };
}

// What a backend with `fault` says it supports.
inline Support FaultySupport(Fault fault) {
  if (fault == Fault::kUnsupported) return Support::No("fake has no such kernel");
  if (fault == Fault::kSlowReportsProcess) usleep(30'000);
  if (fault == Fault::kReportsProcess || fault == Fault::kSlowReportsProcess) {
    return Support::No("runs in process " + std::to_string(getpid()));
  }
  if (fault == Fault::kReportsResident) {
    return Support::No("resident " + std::to_string(process::ResidentBytes() / 1024) + " KiB");
  }
  if (fault == Fault::kByConversion) return Support::ByConversion("f32 via f64");
  return Support::Native();
}

// The backend "fake" that does what `fault` says.
inline ::mm::testing::FakeBackend FaultyBackend(Fault fault) {
  ::mm::testing::FakeBackend backend("fake");
  backend.SupportsBy([fault](const MatMulDesc&) { return FaultySupport(fault); })
      .Computing(FaultyKernel(fault));
  if (fault == Fault::kPrepareFails) backend.FailingToPrepare(InternalError("out of primitives"));
  return backend;
}

// "reference" plus one backend per Fault: "good", "nudge", "unsupported", "converting",
// "prepare_fails", "throws", "segfault", "divide_by_zero", "abort", "endless_loop", "exit",
// "process", "resident", "slow_process", "forges_answer", and "cannot_start" whose factory fails.
inline BackendRegistry FakeRegistry() {
  BackendRegistry registry;
  auto add = [&](const char* name, auto factory) {
    EXPECT_TRUE(registry.Register(name, "test", factory).ok());
  };
  add("reference", []() -> StatusOr<std::unique_ptr<Backend>> {
    return std::unique_ptr<Backend>(std::make_unique<ReferenceBackend>());
  });
  for (auto [name, fault] : {std::pair{"good", Fault::kNone},
                             {"nudge", Fault::kNudgeFirstElement},
                             {"unsupported", Fault::kUnsupported},
                             {"converting", Fault::kByConversion},
                             {"prepare_fails", Fault::kPrepareFails},
                             {"throws", Fault::kThrows},
                             {"segfault", Fault::kSegfault},
                             {"divide_by_zero", Fault::kDivideByZero},
                             {"abort", Fault::kAbort},
                             {"endless_loop", Fault::kEndlessLoop},
                             {"exit", Fault::kExit},
                             {"process", Fault::kReportsProcess},
                             {"resident", Fault::kReportsResident},
                             {"slow_process", Fault::kSlowReportsProcess},
                             {"forges_answer", Fault::kForgesAnswer}}) {
    add(name, FaultyBackend(fault).Factory());
  }
  add("cannot_start",
      []() -> StatusOr<std::unique_ptr<Backend>> { return InternalError("no device"); });
  return registry;
}

// Default run options on `backends`.
inline RunOptions OnBackends(std::vector<std::string> backends) {
  RunOptions options;
  options.backends = std::move(backends);
  return options;
}

}  // namespace mm::conformance::testing

#endif  // MM_CONFORMANCE_TESTS_FAKE_BACKENDS_H_
