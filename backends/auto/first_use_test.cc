// auto's first use never waits without an end: a calibrator that never ends is killed with its
// process group after its limit, a lock another process holds is waited for up to its limit
// (saying for whom), a stop request ends either wait at once, and a lock file that is a symbolic
// link is not followed. Each ends in the built-in defaults with a warning saying why.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "mm/backends/auto/auto_backend.h"
#include "mm/backends/backend_list.h"
#include "mm/engine/testing/temp_dir.h"

namespace mm {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using testing::TempDir;
using Clock = std::chrono::steady_clock;

void Write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

std::string Read(const fs::path& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A calibrator that writes its pid and that of a child it starts (into `dir`/pids), counts its
// runs (`dir`/runs), and then waits for ever.
std::string HangingCalibrator(const TempDir& dir) {
  const fs::path script = dir.path() / "hang.sh";
  Write(script, "#!/bin/sh\necho run >> '" + (dir.path() / "runs").string() +
                    "'\nsleep 300 &\necho $$ $! > '" + (dir.path() / "pids.new").string() +
                    "'\nmv '" + (dir.path() / "pids.new").string() + "' '" +
                    (dir.path() / "pids").string() + "'\nwait\n");
  fs::permissions(script, fs::perms::owner_all);
  return script.string();
}

AutoOptions FirstUse(const TempDir& dir, const std::string& calibrator) {
  AutoOptions options;
  options.table_path = (dir.path() / "cache" / "auto.json").string();
  options.calibrate = true;
  options.calibrator = calibrator;
  return options;
}

struct Made {
  std::unique_ptr<AutoBackend> backend;
  std::string err;
  double seconds = 0;
};

Made Create(const AutoOptions& options) {
  ::testing::internal::CaptureStderr();
  const Clock::time_point start = Clock::now();
  auto created = AutoBackend::Create(AutoCandidateBackends(), options);
  Made made;
  made.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  made.err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(created.ok()) << created.status();
  if (created.ok()) made.backend.reset(static_cast<AutoBackend*>(created->release()));
  return made;
}

// Whether process `pid` is gone (not even a zombie of ours), waiting up to 5 s for init to reap
// an orphan.
bool Gone(pid_t pid) {
  for (int i = 0; i < 100; ++i) {
    if (kill(pid, 0) != 0 && errno == ESRCH) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// Both pids the hanging calibrator wrote: itself and its child.
std::vector<pid_t> CalibratorPids(const TempDir& dir) {
  std::istringstream pids(Read(dir.path() / "pids"));
  std::vector<pid_t> out;
  for (pid_t pid = 0; pids >> pid;) out.push_back(pid);
  return out;
}

TEST(AutoFirstUseTest, ACalibratorPastItsLimitIsKilledWithItsGroupAndTheDefaultsUsed) {
  TempDir dir;
  AutoOptions options = FirstUse(dir, HangingCalibrator(dir));
  options.calibrator_seconds = 1;
  const Made made = Create(options);
  EXPECT_LT(made.seconds, 10);
  ASSERT_NE(made.backend, nullptr);
  EXPECT_FALSE(made.backend->UsesTable());
  const std::vector<pid_t> pids = CalibratorPids(dir);
  ASSERT_EQ(pids.size(), 2u);
  EXPECT_THAT(made.err,
              HasSubstr("warning: calibration failed, using the built-in defaults: the "
                        "calibrator (pid " +
                        std::to_string(pids[0]) + ": " + options.calibrator + " --mm_calibrate="));
  EXPECT_THAT(made.err, HasSubstr("ran over 1 s and was killed"));
  EXPECT_THAT(made.backend->RunsOn(), HasSubstr("built-in defaults (first-use calibration failed"));
  for (pid_t pid : pids) EXPECT_TRUE(Gone(pid)) << pid;
}

// SIGINT/SIGTERM as a tool records them: the calibrator is killed at once, not at its limit.
TEST(AutoFirstUseTest, AStopRequestEndsTheCalibratorsRunAtOnce) {
  TempDir dir;
  volatile std::sig_atomic_t stop = 0;
  AutoOptions options = FirstUse(dir, HangingCalibrator(dir));
  options.stop = &stop;
  std::thread signal([&] {
    while (!fs::exists(dir.path() / "pids"))
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    stop = SIGTERM;
  });
  const Made made = Create(options);
  signal.join();
  EXPECT_LT(made.seconds, 10);
  EXPECT_THAT(made.err, HasSubstr("using the built-in defaults: stopped the calibrator (pid "));
  for (pid_t pid : CalibratorPids(dir)) EXPECT_TRUE(Gone(pid)) << pid;
}

// Another process holding the table's lock, stopped as by Ctrl-Z: a first use says it waits and
// for whom, and after its limit uses the defaults without calibrating.
class HeldLock {
 public:
  explicit HeldLock(const std::string& path) {
    int ready[2];
    EXPECT_EQ(pipe(ready), 0);
    pid_ = fork();
    if (pid_ == 0) {
      const int fd = open(path.c_str(), O_CREAT | O_RDWR, 0644);
      if (fd < 0 || flock(fd, LOCK_EX) != 0) _exit(1);
      [[maybe_unused]] const ssize_t n = write(ready[1], "x", 1);
      for (;;) pause();
    }
    close(ready[1]);
    char byte = 0;
    EXPECT_EQ(read(ready[0], &byte, 1), 1);
    close(ready[0]);
  }
  ~HeldLock() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

TEST(AutoFirstUseTest, ALockHeldByAStoppedProcessIsWaitedForUpToItsLimitNamingTheHolder) {
  TempDir dir;
  AutoOptions options = FirstUse(dir, HangingCalibrator(dir));
  options.lock_wait_seconds = 1;
  fs::create_directories(dir.path() / "cache");
  const HeldLock holder(options.table_path + ".lock");
  ASSERT_EQ(kill(holder.pid(), SIGSTOP), 0);
  const Made made = Create(options);
  EXPECT_LT(made.seconds, 10);
  const std::string named = "held by pid " + std::to_string(holder.pid());
  EXPECT_THAT(made.err, HasSubstr("waiting for the calibration table's lock " + options.table_path +
                                  ".lock, " + named));
  EXPECT_THAT(made.err, HasSubstr(named + " (mm_auto_first_use_test, stopped) (at most 1 s, then "
                                          "the built-in defaults)"));
  EXPECT_THAT(made.err, HasSubstr("warning: no calibration table, using the built-in defaults: "
                                  "the calibration table's lock " +
                                  options.table_path + ".lock was still " + named));
  EXPECT_FALSE(made.backend->UsesTable());
  EXPECT_FALSE(fs::exists(dir.path() / "runs")) << "calibrated without the lock";
}

TEST(AutoFirstUseTest, AStopRequestEndsTheWaitForTheLockAtOnce) {
  TempDir dir;
  volatile std::sig_atomic_t stop = 0;
  AutoOptions options = FirstUse(dir, HangingCalibrator(dir));
  options.stop = &stop;
  fs::create_directories(dir.path() / "cache");
  const HeldLock holder(options.table_path + ".lock");
  std::thread signal([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop = SIGINT;
  });
  const Made made = Create(options);
  signal.join();
  EXPECT_LT(made.seconds, 10);
  EXPECT_THAT(made.err, HasSubstr("stopped while waiting for the calibration table's lock"));
  EXPECT_FALSE(fs::exists(dir.path() / "runs"));
}

// A link where the lock file goes (planted by another user of a shared cache folder) is not
// followed: its target is neither created nor locked, and nothing is calibrated.
TEST(AutoFirstUseTest, ALockFileThatIsASymbolicLinkIsNotFollowed) {
  TempDir dir;
  AutoOptions options = FirstUse(dir, HangingCalibrator(dir));
  options.calibrator_seconds = 1;
  fs::create_directories(dir.path() / "cache");
  fs::create_symlink(dir.path() / "target", options.table_path + ".lock");
  const Made made = Create(options);
  EXPECT_FALSE(fs::exists(dir.path() / "target"));
  EXPECT_THAT(made.err, HasSubstr("the calibration table's lock file " + options.table_path +
                                  ".lock is a symbolic link; not followed"));
  EXPECT_FALSE(made.backend->UsesTable());
  EXPECT_FALSE(fs::exists(dir.path() / "runs"));
}

// The lock's holder writes its pid into the lock file, for waiters /proc/locks does not tell.
TEST(AutoFirstUseTest, TheHolderOfTheLockWritesItsPidIntoIt) {
  TempDir dir;
  const fs::path script = dir.path() / "show.sh";
  Write(script, "#!/bin/sh\ncat \"${1#--mm_calibrate=}.lock\" > '" +
                    (dir.path() / "seen").string() + "'\nexit 1\n");
  fs::permissions(script, fs::perms::owner_all);
  const Made made = Create(FirstUse(dir, script.string()));
  EXPECT_EQ(Read(dir.path() / "seen"), std::to_string(getpid()) + "\n");
}

}  // namespace
}  // namespace mm
