// Child processes: what their ends say, their process groups, their death with the parent.
#include "mm/engine/process/process.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace mm::process {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// Running, stopped or sleeping: not gone, and not a zombie (a process killed after its parent
// ended waits as a zombie until init reaps it).
bool Alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const std::size_t end_of_name = line.rfind(')');
  return end_of_name != std::string::npos && end_of_name + 2 < line.size() &&
         line[end_of_name + 2] != 'Z';
}

// Waits up to 5 s for `pid` (not a child of this process) to be gone.
bool GoneSoon(pid_t pid) {
  for (int i = 0; i < 500; ++i) {
    if (!Alive(pid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

void WriteText(int fd, const std::string& text) {
  [[maybe_unused]] const ssize_t n = write(fd, text.data(), text.size());
}

TEST(WaitStatusTest, NamesTheSignalOrTheExitStatus) {
  EXPECT_EQ(DescribeWaitStatus(SIGSEGV), "crashed: SIGSEGV (signal 11)");
  EXPECT_EQ(DescribeWaitStatus(SIGKILL), "crashed: SIGKILL (signal 9)");
  EXPECT_EQ(DescribeWaitStatus(7 << 8), "exited with status 7");
  EXPECT_EQ(DescribeWaitStatus(0), "exited with status 0");
  EXPECT_EQ(SignalName(SIGABRT), "SIGABRT");
  EXPECT_EQ(SignalText(SIGTERM), "SIGTERM (signal 15)");
}

TEST(WaitStatusTest, ACoreDumpIsTheSameCrash) {
  constexpr int kCoreDumped = 0x80;  // WCOREDUMP's bit.
  ASSERT_TRUE(WCOREDUMP(SIGSEGV | kCoreDumped));
  EXPECT_EQ(DescribeWaitStatus(SIGSEGV | kCoreDumped), "crashed: SIGSEGV (signal 11)");
  EXPECT_EQ(DescribeWaitStatus(SIGABRT | kCoreDumped, "while loading"),
            "crashed while loading: SIGABRT (signal 6)");
}

TEST(WaitStatusTest, SaysWhereTheProcessWas) {
  EXPECT_EQ(DescribeWaitStatus(SIGSEGV, "during the load probe"),
            "crashed during the load probe: SIGSEGV (signal 11)");
  EXPECT_EQ(DescribeWaitStatus(3 << 8, "while loading"), "exited with status 3 while loading");
  EXPECT_EQ(DescribeWaitStatus(SIGBUS, ""), DescribeWaitStatus(SIGBUS));
  EXPECT_EQ(SignalName(99), "signal 99");
}

TEST(ChildTest, AnswersThroughThePipeAndExitsCleanly) {
  auto child = Child::Start([](int fd) { WriteText(fd, "hello"); });
  ASSERT_TRUE(child.ok()) << child.status();
  std::string answer;
  EXPECT_TRUE(child->ReadUntilEnd(10, answer));
  EXPECT_EQ(answer, "hello");
  auto ended = child->Wait();
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_EQ(DescribeWaitStatus(ended->wait_status), "exited with status 0");
  EXPECT_FALSE(child->Wait().ok()) << "a child is reaped once";
}

TEST(ChildTest, ACrashIsReportedWithItsSignal) {
  // The default action, not a sanitizer's handler (which reports and then aborts).
  auto child = Child::Start([](int) {
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
  });
  ASSERT_TRUE(child.ok());
  std::string answer;
  EXPECT_TRUE(child->ReadUntilEnd(10, answer));
  EXPECT_EQ(DescribeWaitStatus(child->Wait()->wait_status), "crashed: SIGSEGV (signal 11)");
}

TEST(ChildTest, ExitInTheChildIsAnExitStatus) {
  auto child = Child::Start([](int) { std::exit(7); });
  ASSERT_TRUE(child.ok());
  std::string answer;
  EXPECT_TRUE(child->ReadUntilEnd(10, answer));
  EXPECT_EQ(DescribeWaitStatus(child->Wait()->wait_status), "exited with status 7");
}

TEST(ChildTest, AHangIsATimeoutAndKillEndsIt) {
  auto child = Child::Start([](int fd) {
    WriteText(fd, "started");
    while (true) pause();
  });
  ASSERT_TRUE(child.ok());
  std::string answer;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(child->ReadUntilEnd(0.2, answer));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(answer, "started");
  child->Kill();
  EXPECT_EQ(DescribeWaitStatus(child->Wait()->wait_status), "crashed: SIGKILL (signal 9)");
}

TEST(ChildTest, RunsInItsOwnProcessGroup) {
  auto child = Child::Start([](int fd) { WriteText(fd, std::to_string(getpgrp())); });
  ASSERT_TRUE(child.ok());
  std::string answer;
  EXPECT_TRUE(child->ReadUntilEnd(10, answer));
  EXPECT_EQ(answer, std::to_string(child->pid()));
  EXPECT_NE(getpgrp(), child->pid());
  ASSERT_TRUE(child->Wait().ok());
}

// The grandchild's id, written by a child that forks it and then ends.
pid_t StartOrphanedGrandchild(Child& child) {
  std::string answer;
  EXPECT_TRUE(child.ReadUntilEnd(10, answer));
  return static_cast<pid_t>(std::atol(answer.c_str()));
}

TEST(ChildTest, WaitKillsWhatTheChildForkedAndLeftBehind) {
  auto child = Child::Start([](int fd) {
    const pid_t grandchild = fork();
    if (grandchild == 0) {
      close(fd);
      while (true) pause();
    }
    WriteText(fd, std::to_string(grandchild));
  });
  ASSERT_TRUE(child.ok());
  const pid_t grandchild = StartOrphanedGrandchild(*child);
  ASSERT_GT(grandchild, 0);
  ASSERT_TRUE(child->Wait().ok());
  EXPECT_TRUE(GoneSoon(grandchild)) << "process " << grandchild << " outlived its group";
}

TEST(ChildTest, ReadingStopsWhenTheAnswerIsCompleteThoughAGrandchildHoldsThePipe) {
  auto child = Child::Start([](int fd) {
    if (fork() == 0) {
      while (true) pause();  // Holds the pipe's write end.
    }
    WriteText(fd, "done.");
  });
  ASSERT_TRUE(child.ok());
  std::string answer;
  EXPECT_TRUE(child->ReadUntilEnd(
      30, answer, [](const std::string& text) { return text.find('.') != std::string::npos; }));
  EXPECT_EQ(answer, "done.");
  auto ended = child->Wait();
  ASSERT_TRUE(ended.ok());
  EXPECT_EQ(DescribeWaitStatus(ended->wait_status), "exited with status 0");
}

TEST(ChildTest, FinishKillsAChildAndItsGroupWhenTheTimeIsUp) {
  auto child = Child::Start([](int fd) {
    const pid_t grandchild = fork();
    if (grandchild == 0) {
      close(fd);
      while (true) pause();
    }
    WriteText(fd, std::to_string(grandchild));
    while (true) pause();  // Keeps the pipe open: no end comes.
  });
  ASSERT_TRUE(child.ok());
  std::string answer;
  const auto start = std::chrono::steady_clock::now();
  auto ended = child->Finish(0.3, answer);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_TRUE(ended->timed_out);
  EXPECT_EQ(DescribeWaitStatus(ended->wait_status), "crashed: SIGKILL (signal 9)");
  EXPECT_GE(took, 0.3);
  EXPECT_LT(took, 10);
  const pid_t grandchild = static_cast<pid_t>(std::atol(answer.c_str()));
  ASSERT_GT(grandchild, 0) << answer;
  EXPECT_TRUE(GoneSoon(grandchild)) << "process " << grandchild << " outlived the timeout";
  EXPECT_EQ(child->Finish(1, answer).status().code(), StatusCode::kFailedPrecondition);
}

TEST(ChildTest, FinishWithinTheTimeIsNoTimeout) {
  auto child = Child::Start([](int fd) {
    WriteText(fd, "answer");
    _exit(4);
  });
  ASSERT_TRUE(child.ok());
  std::string answer;
  auto ended = child->Finish(30, answer);
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_FALSE(ended->timed_out);
  EXPECT_EQ(answer, "answer");
  EXPECT_EQ(DescribeWaitStatus(ended->wait_status), "exited with status 4");
}

TEST(ChildTest, DestroyingAChildThatWasNotWaitedForKillsIt) {
  pid_t pid = -1;
  {
    auto child = Child::Start([](int) {
      while (true) pause();
    });
    ASSERT_TRUE(child.ok());
    pid = child->pid();
  }
  // Reaped by the destructor: not a zombie, gone.
  EXPECT_FALSE(Alive(pid));
}

TEST(EndGroupTest, WithoutKillingWaitsForTheLeaderThenEndsItsGroup) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t pid = Fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const pid_t grandchild = fork();
    if (grandchild == 0) {
      while (true) pause();
    }
    WriteText(fds[1], std::to_string(grandchild) + "\n");
    _exit(3);
  }
  close(fds[1]);
  char buffer[32] = {};
  ASSERT_GT(read(fds[0], buffer, sizeof(buffer) - 1), 0);
  close(fds[0]);
  const pid_t grandchild = static_cast<pid_t>(std::atol(buffer));
  auto ended = EndGroup(pid, /*kill_leader=*/false);
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_EQ(DescribeWaitStatus(ended->wait_status), "exited with status 3");
  EXPECT_TRUE(GoneSoon(grandchild));
  EXPECT_FALSE(EndGroup(pid, true).ok()) << "reaped already";
}

// A child that sleeps until it is killed.
pid_t ForkSleeper() {
  const pid_t pid = Fork();
  if (pid == 0) {
    while (true) pause();
  }
  return pid;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(EndGroupTest, KillsALeaderThatDoesNotEndWithinItsTime) {
  const pid_t pid = ForkSleeper();
  ASSERT_GE(pid, 0);
  const auto start = std::chrono::steady_clock::now();
  auto ended = EndGroup(pid, /*kill_leader=*/false, /*timeout_seconds=*/0.3);
  const double took = SecondsSince(start);
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_TRUE(ended->timed_out) << DescribeWaitStatus(ended->wait_status);
  EXPECT_GE(took, 0.3);
  EXPECT_LT(took, 5.0);
}

TEST(WaitForExitTest, SaysWhenTheChildEndedWithoutReapingIt) {
  const pid_t pid = Fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(4);
  EXPECT_TRUE(WaitForExit(pid, 30));
  auto ended = Reap(pid);  // Still there to be reaped.
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_EQ(DescribeWaitStatus(ended->wait_status), "exited with status 4");
}

TEST(WaitForExitTest, AStopRequestEndsTheWaitAtOnce) {
  const pid_t pid = ForkSleeper();
  ASSERT_GE(pid, 0);
  volatile std::sig_atomic_t stop = 0;
  SetStopRequest(&stop);
  std::thread requester([&stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop = SIGTERM;
  });
  const auto start = std::chrono::steady_clock::now();
  auto ended = EndGroup(pid, /*kill_leader=*/false, /*timeout_seconds=*/60);
  const double took = SecondsSince(start);
  requester.join();
  SetStopRequest(nullptr);
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_TRUE(ended->timed_out);
  EXPECT_LT(took, 2.0);
  EXPECT_FALSE(StopRequested());
}

// A process that leaves its parent's group and session, its parent then gone: adopted by the
// subreaper, and ended by EndStrays; a child this process started is spared.
TEST(SubreaperTest, EndsTheOrphansItAdoptedAndSparesItsOwnChildren) {
  auto kept = Program::Start({"sleep", "100"});
  ASSERT_TRUE(kept.ok()) << kept.status();
  pid_t daemon = -1;
  {
    Subreaper subreaper;
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t parent = Fork();
    ASSERT_GE(parent, 0);
    if (parent == 0) {
      if (fork() == 0) {
        setsid();
        WriteText(fds[1], std::to_string(getpid()) + "\n");
        while (true) pause();
      }
      _exit(0);  // The daemon's parent leaves it.
    }
    close(fds[1]);
    char buffer[32] = {};
    ASSERT_GT(read(fds[0], buffer, sizeof(buffer) - 1), 0);
    close(fds[0]);
    daemon = static_cast<pid_t>(std::atol(buffer));
    ASSERT_TRUE(Reap(parent).ok());
    EXPECT_EQ(getpgid(daemon), daemon) << "a group and a session of its own";
    EXPECT_TRUE(Alive(daemon));
    EXPECT_EQ(EndStrays(), 1);
    EXPECT_FALSE(Alive(daemon));
    EXPECT_EQ(kill(daemon, 0), -1) << "reaped";
    EXPECT_TRUE(Alive(kept->pid()));
  }
  EXPECT_EQ(EndStrays(), 0) << "no subreaper: nothing is a stray";
  kept->Kill();
  EXPECT_TRUE(kept->Wait().ok());
}

TEST(ReapTest, GivesThePeakResidentMemory) {
  const pid_t pid = Fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::vector<char> memory(64 << 20, 1);
    _exit(memory[12345] == 1 ? 0 : 1);
  }
  auto ended = Reap(pid);
  ASSERT_TRUE(ended.ok());
  EXPECT_EQ(DescribeWaitStatus(ended->wait_status), "exited with status 0");
  EXPECT_GE(ended->peak_rss_bytes, std::int64_t{64} << 20);
  EXPECT_EQ(Reap(pid).status().code(), StatusCode::kNotFound);
}

TEST(ReapTest, GivesTheCpuTimeTheChildSpent) {
  const pid_t pid = Fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    timespec t{};
    volatile double sink = 0;
    do {
      sink = sink + 1;
      clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    } while (t.tv_sec == 0 && t.tv_nsec < 200'000'000);
    _exit(0);
  }
  auto ended = Reap(pid);
  ASSERT_TRUE(ended.ok());
  EXPECT_GE(ended->cpu_seconds, 0.19);
  EXPECT_LT(ended->cpu_seconds, 30) << "seconds, not microseconds";
}

TEST(ResidentBytesTest, ReadsAChildsResidentMemoryWhileItRuns) {
  auto child = Child::Start([](int fd) {
    std::vector<char> memory(64 << 20, 1);
    WriteText(fd, memory[12345] == 1 ? "ready" : "wrong");
    while (true) pause();
  });
  ASSERT_TRUE(child.ok());
  std::string answer;
  child->ReadUntilEnd(30, answer, [](const std::string& text) { return text.size() >= 5; });
  ASSERT_EQ(answer, "ready");
  EXPECT_GE(ResidentBytes(child->pid()), std::int64_t{64} << 20);
  EXPECT_LT(ResidentBytes(child->pid()), std::int64_t{1} << 40) << "pages taken for bytes twice";
  child->Kill();
  ASSERT_TRUE(child->Wait().ok());
  EXPECT_EQ(ResidentBytes(-1), 0) << "the id of a reaped child is -1: no process";
}

TEST(ResidentBytesTest, ThisProcesssMemoryAndItsPeakGrowWithWhatItTouches) {
  const std::int64_t mapped_before = MappedDataBytes();
  ASSERT_GT(mapped_before, 0);
  std::vector<char> memory(std::size_t{64} << 20, 1);
  EXPECT_GE(ResidentBytes(), std::int64_t{64} << 20);
  EXPECT_GE(PeakResidentBytes(), ResidentBytes() - (std::int64_t{1} << 20));
  EXPECT_GE(MappedDataBytes(), mapped_before + (std::int64_t{64} << 20));
  EXPECT_EQ(memory[4096], 1);
}

TEST(DieWithParentTest, AChildEndsWithTheProcessThatForkedIt) {
  // A middle process forks a child with DieWithParent, reports its id, and is killed: the child
  // must follow.
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const pid_t middle = fork();
  ASSERT_GE(middle, 0);
  if (middle == 0) {
    ForkOptions options;
    options.own_group = false;
    const pid_t child = Fork(options);
    if (child == 0) {
      while (true) pause();
    }
    WriteText(fds[1], std::to_string(child) + "\n");
    while (true) pause();
  }
  close(fds[1]);
  char buffer[32] = {};
  ASSERT_GT(read(fds[0], buffer, sizeof(buffer) - 1), 0);
  close(fds[0]);
  const pid_t child = static_cast<pid_t>(std::atol(buffer));
  ASSERT_TRUE(Alive(child));
  kill(middle, SIGKILL);
  int status = 0;
  waitpid(middle, &status, 0);
  EXPECT_TRUE(GoneSoon(child)) << "process " << child << " outlived its parent";
}

TEST(DieWithParentTest, AParentThatIsNotTheOneExpectedIsOneAlreadyGone) {
  // What a child sees when its parent ended before DieWithParent: another parent id.
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) _exit(DieWithParent(getppid() + 1) ? 1 : 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_EQ(DescribeWaitStatus(status), "exited with status 0");
}

// Reads `fd` (non-blocking) until `count` bytes, a line (with `line`) or its end arrive, for up
// to 10 s.
std::string ReadSome(int fd, std::size_t count, bool line = false) {
  std::string out;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (out.size() < count && !(line && out.ends_with('\n')) &&
         std::chrono::steady_clock::now() < deadline) {
    char chunk[256];
    const ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n == 0) break;
    if (n > 0) {
      out.append(chunk, static_cast<std::size_t>(n));
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  return out;
}

TEST(ProgramTest, ItsStdinAndStdoutAreOneSocketAndItsStderrAPipe) {
  auto program = Program::Start({"sh", "-c", "read line; echo \"got $line\"; echo oops >&2"});
  ASSERT_TRUE(program.ok()) << program.status();
  WriteText(program->io_fd(), "hi\n");
  EXPECT_EQ(ReadSome(program->io_fd(), 7), "got hi\n");
  EXPECT_EQ(ReadSome(program->stderr_fd(), 5), "oops\n");
  auto ended = program->Wait();
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_EQ(DescribeWaitStatus(ended->wait_status), "exited with status 0");
  EXPECT_EQ(program->Wait().status().code(), StatusCode::kFailedPrecondition);
}

TEST(ProgramTest, AProgramThatCannotBeExecutedSaysWhyAndExits127) {
  auto program = Program::Start({"/nonexistent/mm-driver"});
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_THAT(ReadSome(program->stderr_fd(), 1000),
              HasSubstr("mm: cannot execute '/nonexistent/mm-driver': No such file or directory"));
  auto ended = program->Wait();
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_EQ(DescribeWaitStatus(ended->wait_status), "exited with status 127");
  EXPECT_EQ(Program::Start({}).status().code(), StatusCode::kInvalidArgument);
}

TEST(ProgramTest, WritingToAProgramThatEndedIsAnErrorNotASignal) {
  auto program = Program::Start({"true"});
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(ReadSome(program->io_fd(), 1), "");  // Its end.
  ssize_t n = 0;
  for (int i = 0; i < 100 && n >= 0; ++i) n = send(program->io_fd(), "x", 1, MSG_NOSIGNAL);
  EXPECT_LT(n, 0);
  EXPECT_EQ(errno, EPIPE);
}

TEST(ProgramTest, GetsTheDataLimitAndNoneOfThisProcesssDescriptors) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);  // Not close-on-exec: only the closing before exec keeps it out.
  ProgramOptions options;
  options.data_limit_bytes = std::int64_t{64} << 20;
  auto program = Program::Start({"sh", "-c", "ulimit -d; ls /proc/self/fd | wc -l"}, options);
  close(fds[0]);
  close(fds[1]);
  ASSERT_TRUE(program.ok()) << program.status();
  // 65536 KiB; and 0, 1, 2 plus the descriptor ls reads the directory through.
  EXPECT_EQ(ReadSome(program->io_fd(), 1000), "65536\n4\n");
}

// Program::Start(argv, options) while this process ignores SIGTERM and blocks SIGINT.
StatusOr<Program> StartIgnoringSigtermBlockingSigint(const std::vector<std::string>& argv,
                                                     const ProgramOptions& options) {
  struct sigaction ignore {
  }, previous{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGTERM, &ignore, &previous);
  sigset_t block, before;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigprocmask(SIG_BLOCK, &block, &before);
  auto program = Program::Start(argv, options);
  sigprocmask(SIG_SETMASK, &before, nullptr);
  sigaction(SIGTERM, &previous, nullptr);
  return program;
}

// A worker ignores SIGTERM and a program must not inherit that: only SIGKILL would end it.
TEST(ProgramTest, StartsWithEverySignalsDefaultActionAndNoneBlocked) {
  auto program = StartIgnoringSigtermBlockingSigint(
      {"sh", "-c", "grep -E '^Sig(Blk|Ign)' /proc/self/status"}, {});
  ASSERT_TRUE(program.ok()) << program.status();
  const std::string masks = ReadSome(program->io_fd(), 200);
  // sh itself ignores nothing unless told; SIGTERM (bit 15) and SIGINT (bit 2) must be clear.
  EXPECT_THAT(masks, HasSubstr("SigBlk:\t0000000000000000"));
  EXPECT_THAT(masks, HasSubstr("SigIgn:\t0000000000000000"));
  EXPECT_TRUE(program->Wait().ok());
}

// A signal's bit in a mask of /proc/PID/status ("SigIgn:\t0000000000004000") in `status`.
bool MaskHas(const std::string& status, const std::string& mask, int signal_number) {
  const std::size_t at = status.find(mask + ":\t");
  if (at == std::string::npos) return false;
  const unsigned long long bits = std::stoull(status.substr(at + mask.size() + 2, 16), nullptr, 16);
  return (bits >> (signal_number - 1)) & 1;
}

// The calibration's parts: a command started under nohup must not have them end on SIGHUP.
TEST(ProgramTest, KeepsWhatThisProcessIgnoresAndBlocksWhenAskedTo) {
  ProgramOptions options;
  options.default_signals = false;
  auto program = StartIgnoringSigtermBlockingSigint(
      {"grep", "-E", "^Sig(Blk|Ign)", "/proc/self/status"}, options);
  ASSERT_TRUE(program.ok()) << program.status();
  const std::string masks = ReadSome(program->io_fd(), 200);
  EXPECT_TRUE(MaskHas(masks, "SigIgn", SIGTERM)) << masks;
  EXPECT_TRUE(MaskHas(masks, "SigBlk", SIGINT)) << masks;
  EXPECT_TRUE(program->Wait().ok());
}

// `env` prints the environment it was given: the variables set (a value may hold '='), none of
// those removed, every other one as this process has it, each once.
TEST(ProgramTest, RunsInThisProcesssEnvironmentWithTheChangesAsked) {
  setenv("MM_PROCESS_TEST_KEPT", "kept", 1);
  setenv("MM_PROCESS_TEST_REMOVED", "here", 1);
  setenv("MM_PROCESS_TEST_REPLACED", "old", 1);
  ProgramOptions options;
  options.environment = {{"MM_PROCESS_TEST_REMOVED", std::nullopt},
                         {"MM_PROCESS_TEST_REPLACED", "new"},
                         {"MM_PROCESS_TEST_ADDED", "a=b"},
                         {"MM_PROCESS_TEST_NEVER_SET", std::nullopt}};
  auto program = Program::Start({"env"}, options);
  for (const char* name :
       {"MM_PROCESS_TEST_KEPT", "MM_PROCESS_TEST_REMOVED", "MM_PROCESS_TEST_REPLACED"}) {
    unsetenv(name);
  }
  ASSERT_TRUE(program.ok()) << program.status();
  const std::string printed = "\n" + ReadSome(program->io_fd(), 1 << 20);
  EXPECT_THAT(printed, HasSubstr("\nMM_PROCESS_TEST_KEPT=kept\n"));
  EXPECT_THAT(printed, HasSubstr("\nMM_PROCESS_TEST_REPLACED=new\n"));
  EXPECT_THAT(printed, HasSubstr("\nMM_PROCESS_TEST_ADDED=a=b\n"));
  EXPECT_THAT(printed, Not(HasSubstr("MM_PROCESS_TEST_REMOVED")));
  EXPECT_THAT(printed, Not(HasSubstr("MM_PROCESS_TEST_NEVER_SET")));
  EXPECT_EQ(printed.find("MM_PROCESS_TEST_REPLACED="), printed.rfind("MM_PROCESS_TEST_REPLACED="));
  auto ended = program->Wait();
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_EQ(DescribeWaitStatus(ended->wait_status), "exited with status 0");
}

TEST(ProgramTest, AMalformedEnvironmentChangeIsRefusedBeforeAnythingStarts) {
  for (const std::string& name : {std::string(), std::string("A=B"), std::string("A\0B", 3)}) {
    ProgramOptions options;
    options.environment = {{name, "x"}};
    const auto program = Program::Start({"true"}, options);
    EXPECT_EQ(program.status().code(), StatusCode::kInvalidArgument) << name;
    EXPECT_THAT(program.status().message(), HasSubstr("no '=' or NUL"));
  }
  ProgramOptions options;
  options.environment = {{"MM_PROCESS_TEST_VALUE", std::string("x\0y", 3)}};
  const auto program = Program::Start({"true"}, options);
  EXPECT_EQ(program.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(program.status().message(), HasSubstr("MM_PROCESS_TEST_VALUE has a NUL"));
  EXPECT_FALSE(HasChildrenBesidesPrograms());
}

TEST(ProgramTest, AProgramThatClosesItsStdoutAndLivesOnIsKilledAfterItsTime) {
  auto program = Program::Start({"sh", "-c", "exec sleep 100 >&- <&-"});
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_EQ(ReadSome(program->io_fd(), 1), "");  // Its end.
  auto ended = program->Wait(/*timeout_seconds=*/0.5);
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_TRUE(ended->timed_out);
  EXPECT_EQ(DescribeWaitStatus(ended->wait_status), "crashed: SIGKILL (signal 9)");
}

TEST(ProgramTest, KillEndsAHangingProgramAndItsGroup) {
  auto program = Program::Start({"sh", "-c", "sleep 100 & echo $!; sleep 100"});
  ASSERT_TRUE(program.ok()) << program.status();
  const pid_t grandchild = std::atoi(ReadSome(program->io_fd(), 100, /*line=*/true).c_str());
  ASSERT_GT(grandchild, 0);
  program->Kill();
  auto ended = program->Wait();
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_EQ(DescribeWaitStatus(ended->wait_status), "crashed: SIGKILL (signal 9)");
  EXPECT_TRUE(GoneSoon(grandchild));
}

TEST(ProgramTest, IsNotAChildForkedBehindTheToolsBack) {
  EXPECT_FALSE(HasChildrenBesidesPrograms());
  auto program = Program::Start({"sleep", "100"});
  ASSERT_TRUE(program.ok()) << program.status();
  EXPECT_FALSE(HasChildrenBesidesPrograms());
  const pid_t forked = Fork();
  if (forked == 0) _exit(0);
  siginfo_t info{};
  waitid(P_PID, static_cast<id_t>(forked), &info, WEXITED | WNOWAIT);  // Ended, not reaped.
  EXPECT_TRUE(HasChildrenBesidesPrograms());                           // And reaped on the way.
  EXPECT_FALSE(HasChildrenBesidesPrograms());
  program->Kill();
  EXPECT_TRUE(program->Wait().ok());  // Never reaped by the check.
}

}  // namespace
}  // namespace mm::process
