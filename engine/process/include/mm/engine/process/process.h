// Child processes as mm starts them: forked, each in its own process group (so that whatever it
// forks in turn is killed with it), ended when mm ends (PR_SET_PDEATHSIG), and described by one
// vocabulary when they end ("crashed: SIGSEGV (signal 11)", "exited with status 7"). A child runs
// a function of mm's (Child) or another program with pipes to it (Program).
#ifndef MM_ENGINE_PROCESS_PROCESS_H_
#define MM_ENGINE_PROCESS_PROCESS_H_

#include <sys/types.h>

#include <csignal>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mm/engine/status.h"

namespace mm::process {

// "SIGSEGV" for 11; "signal 99" for a number without a name. The one place mm spells signals.
std::string SignalName(int signal_number);

// "SIGSEGV (signal 11)".
std::string SignalText(int signal_number);

// What a wait status says: "crashed: SIGSEGV (signal 11)", "exited with status 7". A core dump
// changes nothing (its SIGSEGV is the same crash).
std::string DescribeWaitStatus(int wait_status);

// The same, saying where the process was: "crashed while loading: SIGSEGV (signal 11)", "exited
// with status 7 while loading" for `where` "while loading"; DescribeWaitStatus for an empty one.
std::string DescribeWaitStatus(int wait_status, std::string_view where);

// The resident memory of process `pid` now (its /proc statm), in bytes; of this process for 0.
// 0 for a negative `pid` and when it cannot be read (the process is gone).
std::int64_t ResidentBytes(pid_t pid = 0);

// This process's peak resident memory so far (getrusage), in bytes.
std::int64_t PeakResidentBytes();

// The private writable memory this process has mapped now (statm's data field: what RLIMIT_DATA
// counts), in bytes; 0 when it cannot be read.
std::int64_t MappedDataBytes();

// Has this process killed (SIGKILL) when its parent ends. `parent` is the process id the caller
// had before it forked: false when that parent already ended before the request took effect (the
// caller then leaves: nothing would kill it later).
bool DieWithParent(pid_t parent);

// How Fork() sets up the child.
struct ForkOptions {
  // The child leads a process group of its own: KillGroup() reaches everything it forks.
  bool own_group = true;
  // The child is killed when this process ends (DieWithParent).
  bool die_with_parent = true;
  // Closed in the child first (descriptors of other children, say).
  std::vector<int> close_in_child;
};

// fork() with `options` applied in the child (and the process group set from both sides, so that
// KillGroup() works as soon as this returns). Like fork(): 0 in the child, the child's id in the
// parent, -1 with errno set on failure. Output buffered in stdio is flushed first, so a child
// that calls exit() does not write it a second time.
pid_t Fork(const ForkOptions& options = {});

// How a reaped child ended.
struct Ended {
  int wait_status = 0;
  std::int64_t peak_rss_bytes = 0;  // The child's peak resident memory.
  double cpu_seconds = 0;  // The child's user and system CPU time (with its reaped children's).
  // Killed because its time was up: by Child::Finish, or by a wait (EndGroup, Wait) that gave it
  // its time to end by itself (wait_status then says SIGKILL).
  bool timed_out = false;
};

// How long a wait for a child gives it to end by itself when the caller says nothing else: after
// that (or at once, on a stop request) the child and its group are killed.
inline constexpr double kWaitSeconds = 60;

// How long a child that was told to end (its pipe or socket closed) has to do so before it is
// killed: a driver that closed its stdout and lives on, say.
inline constexpr double kExitGraceSeconds = 2;

// Makes `flag` (set by a signal handler: StopOnSignals) a request to stop waiting: every wait of
// this module for a child to end by itself gives up within 100 ms once it is nonzero, and kills
// the child. Null forgets it; a forked child (Fork) starts without one.
void SetStopRequest(const volatile std::sig_atomic_t* flag);

// Whether the flag of SetStopRequest is set.
bool StopRequested();

// Waits up to `timeout_seconds` for child `pid` to end, without reaping it (its id keeps naming
// its group): true once it has ended, false when the time is up or a stop was requested first.
bool WaitForExit(pid_t pid, double timeout_seconds);

// Waits for child `pid` to end and reaps it (EINTR retried). NOT_FOUND when `pid` is not a child
// of this process.
StatusOr<Ended> Reap(pid_t pid);

// SIGKILL to the process group `pid` leads and to `pid` itself (which may not have made its group
// yet). Call it before reaping `pid`: a reaped leader's id may name another process later.
void KillGroup(pid_t pid);

// Ends child `pid` and every process left in its group, and reaps it: with `kill_leader`, kills
// them all at once; without, waits up to `timeout_seconds` for `pid` to end by itself first
// (WaitForExit) and then kills what is left of its group (the result says timed_out when `pid`
// itself had to be killed). NOT_FOUND as Reap.
StatusOr<Ended> EndGroup(pid_t pid, bool kill_leader, double timeout_seconds = kWaitSeconds);

// This process as the subreaper of its descendants while the object lives
// (PR_SET_CHILD_SUBREAPER): a process that loses its parent (the daemon a driver started, the
// setsid'ed child of a plugin, the helper of a driver that was killed) becomes a child of this
// one instead of init's, so that EndStrays() finds it. At the end, EndStrays(), and the previous
// setting. One made while another lives only adds its EndStrays() at its end.
class Subreaper {
 public:
  Subreaper();
  ~Subreaper();
  Subreaper(const Subreaper&) = delete;
  Subreaper& operator=(const Subreaper&) = delete;
};

// Kills (SIGKILL, with the process groups they lead or were left in) and reaps every stray child
// of this process: one it adopted as a Subreaper, neither started by Fork (and not yet reaped) nor
// there when the Subreaper was made; again for the processes that adopts in turn, until none is
// left or `timeout_seconds` pass. The groups of the children this process started are spared.
// Nothing without a Subreaper. Returns how many strays were ended.
int EndStrays(double timeout_seconds = kExitGraceSeconds);

// A function run in a forked child (Fork() with default options: own group, dies with this
// process) that talks back through a pipe. The child runs `body` with the pipe's write end and
// leaves with _exit(0) when it returns. Destroying a Child that was not waited for kills its group
// and reaps it.
class Child {
 public:
  // Starts `body` in a child; INTERNAL when pipe() or fork() fails.
  static StatusOr<Child> Start(const std::function<void(int write_fd)>& body,
                               const ForkOptions& options = {});
  Child(Child&& other) noexcept;
  Child& operator=(Child&&) = delete;
  ~Child();

  pid_t pid() const { return pid_; }

  // Reads what the child writes, appending to `out`, until it closes the pipe (usually by ending),
  // or `complete` (when given) says `out` holds all that is expected: true; false when
  // `timeout_seconds` pass first. (A process the child forked may hold the pipe open: `complete`
  // does not wait for it.) Reads nothing once the pipe was closed.
  bool ReadUntilEnd(double timeout_seconds, std::string& out,
                    const std::function<bool(const std::string&)>& complete = nullptr);

  // ReadUntilEnd, then Wait (with kExitGraceSeconds): when `timeout_seconds` pass first, the
  // child and its group are killed and the result says timed_out. Only once, as Wait.
  StatusOr<Ended> Finish(double timeout_seconds, std::string& out,
                         const std::function<bool(const std::string&)>& complete = nullptr);

  // Kills the child's group (KillGroup); Wait() then reaps it.
  void Kill();

  // Waits up to `timeout_seconds` for the child to end (EndGroup) and reaps it; what remains of
  // its group is killed. Only once: a second call is FAILED_PRECONDITION.
  StatusOr<Ended> Wait(double timeout_seconds = kWaitSeconds);

 private:
  Child(pid_t pid, int read_fd) : pid_(pid), read_fd_(read_fd) {}

  pid_t pid_ = -1;  // -1 once reaped.
  int read_fd_ = -1;
};

// How Program::Start sets up the program.
struct ProgramOptions {
  // Own group, death with this process; close_in_child is ignored (every descriptor but the
  // program's three standard ones is closed before it starts).
  ForkOptions fork;
  // RLIMIT_DATA of the program (its private writable memory), in bytes; 0 keeps this process's.
  std::int64_t data_limit_bytes = 0;
  // Changes to this process's environment for the program: each variable named set to its value,
  // or removed where the value is nullopt; every other variable as this process has it. A name
  // must be non-empty without '=' or NUL, a value without NUL (Start: INVALID_ARGUMENT).
  std::map<std::string, std::optional<std::string>> environment;
  // Every signal's default action and none blocked in the program. False leaves them as an exec
  // does: what this process ignores (SIGHUP under nohup) or blocks stays so in the program.
  bool default_signals = true;
};

// Whether this process has a child that is not a running Program (one a backend forked during a
// call, say); such children that ended are reaped on the way, Programs are never waited for here.
bool HasChildrenBesidesPrograms();

// A program started with execvp(): its stdin and stdout are one end of a Unix stream socket (so
// a write to a program that has gone is an error, EPIPE, never a SIGPIPE to this process), its
// stderr a pipe; this side holds the other ends, non-blocking. It starts with every signal's
// default action and none blocked, whatever this process ignores or blocks (unless
// ProgramOptions::default_signals is false), in the environment ProgramOptions::environment makes.
// Destroying a Program that was not waited for kills its group and reaps it.
class Program {
 public:
  // Starts `argv` (argv[0] looked up in this process's PATH). INVALID_ARGUMENT for an empty argv
  // or a malformed environment change; INTERNAL when socketpair, pipe or fork fails. A program that
  // cannot be executed exits with status 127 after saying why on its stderr ("mm: cannot execute
  // 'x': No such file or directory").
  static StatusOr<Program> Start(const std::vector<std::string>& argv,
                                 const ProgramOptions& options = {});
  Program(Program&& other) noexcept;
  Program& operator=(Program&&) = delete;
  ~Program();

  pid_t pid() const { return pid_; }
  // This side of the program's stdin and stdout (write to one, read the other); -1 once waited.
  int io_fd() const { return io_fd_; }
  // The read end of the program's stderr; -1 once waited.
  int stderr_fd() const { return stderr_fd_; }

  // Kills the program's group (KillGroup); Wait() then reaps it.
  void Kill();
  // Closes this side's descriptors (the program reads the end of its stdin), waits up to
  // `timeout_seconds` for the program to end (EndGroup) and reaps it; what remains of its group is
  // killed. Only once: a second call is FAILED_PRECONDITION.
  StatusOr<Ended> Wait(double timeout_seconds = kWaitSeconds);

 private:
  Program(pid_t pid, int io_fd, int stderr_fd) : pid_(pid), io_fd_(io_fd), stderr_fd_(stderr_fd) {}
  void CloseFds();

  pid_t pid_ = -1;  // -1 once reaped.
  int io_fd_ = -1;
  int stderr_fd_ = -1;
};

}  // namespace mm::process

#endif  // MM_ENGINE_PROCESS_PROCESS_H_
