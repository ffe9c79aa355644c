// The auto backend: per problem (dtype, shape, thread count), the fastest backend that is
// conformant for that dtype on this machine, and the thread count to run it on, chosen once at
// Prepare from a calibration table (made by a quick calibration on first use, cached per machine
// and environment, or by `mm-bench --mm_calibrate=FILE`), else from built-in defaults.
#ifndef MM_BACKENDS_AUTO_AUTO_BACKEND_H_
#define MM_BACKENDS_AUTO_AUTO_BACKEND_H_

#include <array>
#include <csignal>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mm/engine/backend.h"
#include "mm/engine/registry.h"
#include "mm/family/backend.h"

namespace mm {

// What the built-in ranking knows of the machine: whether oneDNN and Eigen run AVX-512 kernels
// here. Debian bookworm's OpenBLAS (0.3.21) and BLIS (0.9.0) run their AVX2 or generic kernels on
// CPUs newer than they know, so where oneDNN and Eigen have AVX-512 they rank first.
struct AutoDefaultsBasis {
  // The CPU has avx512f, and ONEDNN_MAX_CPU_ISA, when set, allows an AVX-512 level.
  bool onednn_avx512 = false;
  // The CPU has avx512f, and the eigen backend runs its AVX-512 kernels (ChosenCpuIsa(): the CPU
  // has x86-64-v4 and MM_MAX_CPU_ISA, when set, allows avx512).
  bool eigen_avx512 = false;

  // This machine's, from /proc/cpuinfo and the environment.
  static AutoDefaultsBasis OfThisMachine();
  // "AVX-512 for onednn and eigen", "AVX-512 for onednn", "AVX-512 for eigen", "no AVX-512".
  std::string ToString() const;
};

// A backend declared deviating (an XFAIL or SKIP entry of an expectations file): auto never
// chooses a candidate it matches for the operators and element types it names.
struct AutoDeviation {
  std::string backend_pattern;  // A shell glob (fnmatch) over candidate names.
  // Empty: every element type. A MatMul problem matches by its dtype; a family problem when one
  // of its types (A's, B's, Y's but MatMulInteger's int32, QLinearMatMul's scales') is named.
  std::vector<DType> dtypes;
  std::string declared;  // Where and why, for RunsOn: "declared XFAIL in FILE (reason)".
  std::vector<family::Op> ops = {};  // Empty: every operator (MatMul and its family).

  // Whether the deviation concerns MatMul problems of `dtype`, and family problems of `desc`.
  bool Covers(DType dtype) const;
  bool Covers(const family::OpDesc& desc) const;
};

// While one lives, AutoOptions::FromEnvironment (hence every auto the built-in registry creates,
// in this process and in the processes it forks) adds `deviations`: how a tool passes the
// deviations of its --expectations file (or MM_EXPECTATIONS) to auto. Restores the previous ones
// when destroyed; not to be nested across threads.
class ScopedAutoDeviations {
 public:
  explicit ScopedAutoDeviations(std::vector<AutoDeviation> deviations);
  ~ScopedAutoDeviations();
  ScopedAutoDeviations(const ScopedAutoDeviations&) = delete;
  ScopedAutoDeviations& operator=(const ScopedAutoDeviations&) = delete;

 private:
  std::vector<AutoDeviation> previous_;
};

// While one lives, AutoOptions::FromEnvironment (hence every auto the built-in registry creates in
// this process) takes `stop` as its stop request: how a tool that handles SIGINT/SIGTERM
// (conformance::StopOnSignals) ends auto's first-use waits with it. Restores the previous one when
// destroyed; not to be nested across threads.
class ScopedAutoStop {
 public:
  explicit ScopedAutoStop(const volatile std::sig_atomic_t* stop);
  ~ScopedAutoStop();
  ScopedAutoStop(const ScopedAutoStop&) = delete;
  ScopedAutoStop& operator=(const ScopedAutoStop&) = delete;

 private:
  const volatile std::sig_atomic_t* previous_;
};

// How long a first use lets the calibrator run before killing it (and its process group) and
// using the built-in defaults: the quick calibration's budget is 30 s on 2 idle cores, and it took
// 144 s at load average 23 (docs/notes/2026-12-03-auto-first-use.md); 600 s is four times that.
inline constexpr double kAutoCalibratorSeconds = 600;
// How long a first use waits for the calibration table's lock held by another process before
// using the built-in defaults: the holder's calibrator may take all of kAutoCalibratorSeconds,
// and then writes the table; a holder stopped (Ctrl-Z) or hung costs a later first use this long.
inline constexpr double kAutoLockWaitSeconds = kAutoCalibratorSeconds + 60;

// The most cells a full calibration writes: 31 shapes in 6 dtypes (bench/bench_shapes.cc) and at
// most as many in each of the family's 4 calibrated descriptions, at 1 thread and at the
// environment's thread count (a quick one: 80 of MatMul and 56 of the family).
inline constexpr std::size_t kMaxFullCalibrationCells = 31 * (6 + 4) * 2;
// The most cells a table may hold (ParseAutoTable refuses more): over six times a full
// calibration's,
// room for more shapes and dtypes. Prepare searches the cells one by one and each costs memory: a
// table within its size cap used to hold a million (1.2 GB and 15 s per process).
inline constexpr std::size_t kMaxAutoTableCells = 4096;

// What auto reads from its environment; every field may also be set directly (tests, tools).
struct AutoOptions {
  // Backends never chosen: MM_AUTO_EXCLUDE, comma-separated names ("onednn,blis").
  std::vector<std::string> exclude;
  // The calibration table: MM_AUTO_TABLE, else DefaultTablePath(). A missing file means the
  // built-in defaults, unless `calibrate`.
  std::string table_path;
  // Whether a missing, refused or malformed table at `table_path` is made (a quick calibration by
  // `calibrator`, one process at a time) before auto chooses: MM_AUTO_CALIBRATE ("0"/"off": no,
  // "1"/"on": yes); unset: yes when the table is the default one (MM_AUTO_TABLE unset) and the
  // process is not a test run by ctest (CTEST_INTERACTIVE_DEBUG_MODE set), so that tests never
  // calibrate unless they ask to.
  bool calibrate = false;
  // The program that calibrates, run as `calibrator --mm_calibrate=TABLE --mm_set=quick`:
  // MM_AUTO_CALIBRATOR, else mm-bench beside this executable, else mm-bench in PATH.
  std::string calibrator;
  // The limits of a first use's waits (after which the built-in defaults are used, with a warning
  // on stderr naming the calibrator or the lock's holder): the calibrator's run, and the wait for
  // the table's lock held by another process.
  double calibrator_seconds = kAutoCalibratorSeconds;
  double lock_wait_seconds = kAutoLockWaitSeconds;
  // A stop request (a nonzero value: the signal a tool was asked to stop by): ends a first use's
  // waits within 0.1 s (the calibrator killed) and auto uses the built-in defaults. Null: none.
  // FromEnvironment takes the live ScopedAutoStop's.
  const volatile std::sig_atomic_t* stop = nullptr;
  // Backends never chosen for some dtypes: those a tool declared (ScopedAutoDeviations), which
  // mm's tools take from their expectations (--expectations FILE, else MM_EXPECTATIONS).
  std::vector<AutoDeviation> deviations;
  // What the built-in ranking assumes of the machine; unset: AutoDefaultsBasis::OfThisMachine().
  std::optional<AutoDefaultsBasis> defaults_basis;

  // A malformed setting (MM_AUTO_CALIBRATE not one of 0, 1, off, on), which AutoBackend::Create
  // reports as INVALID_ARGUMENT; empty when none.
  std::string setting_error;

  static AutoOptions FromEnvironment();
  // The default table location, one per machine and environment ($XDG_CACHE_HOME/mm/ or
  // $HOME/.cache/mm/ then "auto-" AutoTableKey() ".json"); empty when neither variable is set.
  static std::string DefaultTablePath();
};

// What names this machine and environment's cached table: a hash (16 hex digits) of the CPU model
// and features, logical CPUs, ONEDNN_MAX_CPU_ISA, mm's version, OMP_WAIT_POLICY and the thread
// count of the environment (OMP_NUM_THREADS, else every core). A library version that changes is
// found when the table is read (AutoIdentity::backends), and the table is made again.
std::string AutoTableKey();

// What a calibration table is valid for: a table is used only where all of it is equal.
struct AutoIdentity {
  std::string cpu_model;
  std::string cpu_features;
  int logical_cpus = 0;
  std::string onednn_max_cpu_isa;  // Changes oneDNN's kernels, hence the choice.
  std::string mm_version;
  // OMP_WAIT_POLICY ("unset" when unset): under "passive", as mm's tools set it, an OpenMP library
  // pays a thread wake-up per call, which changes the choice for small problems.
  std::string omp_wait_policy;
  // The thread count of the environment (OMP_NUM_THREADS, else every core): the most threads a
  // cell is calibrated at.
  int threads = 0;
  // Every candidate backend: name -> its registry description (library and version).
  std::map<std::string, std::string> backends;

  nlohmann::json ToJson() const;
  // The first difference from `other`, as "cpu_model: table has X, this machine Y"; empty if none.
  std::string DifferenceFrom(const AutoIdentity& other) const;
};

// This machine, this mm, and the backends of `candidates`.
AutoIdentity CurrentAutoIdentity(const BackendRegistry& candidates);

// One measured problem: the candidates ranked fastest first, with their median seconds per call.
// An entry "name@N" is backend `name` run on N threads, fewer than the cell's (faster for small
// problems, where waking threads costs more than they gain).
struct AutoCell {
  DType dtype = DType::kFloat;  // A MatMul cell's (unused in a family cell).
  int threads = 1;
  Dims a_dims;
  Dims b_dims;
  std::vector<std::string> ranking;  // Never empty.
  std::vector<double> seconds;       // Same length as ranking; empty when only one candidate.
  // A family cell's operator and types ("desc" in the table; absent: a MatMul cell). Its a_dims and
  // b_dims are the product's [M, K] and [K, N] (Gemm's after its transposes).
  std::optional<family::OpDesc> op = std::nullopt;
};

// How busy the machine was while one thread count's cells were measured: rankings made while
// other processes took cores (or the hypervisor did) are only as good as those moments allowed.
struct CalibrationLoad {
  int threads = 1;
  double seconds = 0;      // Wall time of the measurement.
  double other_cores = 0;  // CPU time other processes used meanwhile, in cores on average.
  double steal_cores = 0;  // CPU time the hypervisor took from this machine, in cores on average.
};

// Other processes using more than this many cores on average (or the hypervisor taking as many)
// make a calibration "under load".
inline constexpr double kCalibrationBusyCores = 0.25;

// A calibration: its identity, its cells, and the load it was measured under.
struct AutoTable {
  AutoIdentity identity;
  std::string created;  // UTC time of the calibration, ISO 8601.
  std::vector<AutoCell> cells;
  std::vector<CalibrationLoad> load;  // Per thread count; empty when it was not recorded.

  nlohmann::json ToJson() const;
  // "measured under load: other processes used 1.3 cores while the 2-thread cells were timed"
  // (each thread count over kCalibrationBusyCores, other processes and steal); empty when none.
  std::string LoadWarning() const;
};

// The format a table is written in ("mm-auto-table 2": cells of MatMul's family beside MatMul's);
// ParseAutoTable also reads "mm-auto-table 1" (MatMul cells only), whose family choices come from
// the defaults.
inline constexpr char kAutoTableFormat[] = "mm-auto-table 2";

// Parses a table's JSON. INVALID_ARGUMENT naming `source` and what is wrong for malformed text or
// fields, an unknown format, unknown dtypes or operators, a family cell in a format-1 table, a
// family cell that is not [M, K] x [K, N], empty rankings, more than kMaxAutoTableCells cells
// (naming the count); FAILED_PRECONDITION saying which identity field differs when the table was
// made for another machine, mm version or backend set than `expected`.
StatusOr<AutoTable> ParseAutoTable(std::string_view text, std::string_view source,
                                   const AutoIdentity& expected);

// The built-in ranking for a problem of `flops` (2*batch*M*N*K) in `dtype` at `threads` threads on
// a machine of `basis`, used when no valid table is loaded or it has no cell for the dtype (how it
// was chosen: docs/backends.md, auto backend).
std::vector<std::string> DefaultAutoRanking(DType dtype, int threads, double flops,
                                            const AutoDefaultsBasis& basis);

// The built-in ranking for a family problem of `desc` and `flops`: Gemm's is MatMul's for Y's type;
// the integer operators', oneDNN's int8 matmul then eigen.
std::vector<std::string> DefaultAutoFamilyRanking(const family::OpDesc& desc, int threads,
                                                  double flops, const AutoDefaultsBasis& basis);

// Dispatches every MatMul to one of the candidate backends, chosen at Prepare:
//  - candidates: every backend of the registry given (all of mm's built-in backends but auto),
//    minus those excluded (AutoOptions::exclude) and those declared deviating for the dtype
//    (AutoOptions::deviations); of those, the ones whose Supports accepts the problem;
//  - choice: the first candidate in the ranking of the nearest table cell (same dtype, the
//    nearest calibrated thread count, then the nearest shape by log distance of batch, M, K, N),
//    else in the built-in default ranking, else the first candidate in registry order; an entry
//    "name@N" runs `name` on N threads (omp_set_num_threads around its Prepare and each call);
//  - the chosen backend's primitive is held and run directly (no per-call lookup);
//    implementation() says "auto -> <backend>: <its implementation>", or "auto -> <backend>
//    (N of M threads): ..." when it runs on fewer threads than it was given.
// DeclaredArithmetic(dtype) is the loosest of the arithmetic the candidates for that dtype
// declare (fewest accumulation bits; flushes if any flushes), since any of them may be chosen.
//
// MatMul's family (family()): per problem, the same policy over the candidates whose SupportOf
// accepts its description and that are not declared deviating for its operator and types, at
// Compute: the table's cells of the same operator and types (any version), else the defaults
// (DefaultAutoFamilyRanking), else the first such candidate (the reference last). A description
// no candidate takes is refused with each candidate's reason.
class AutoBackend final : public Backend, private family::FamilyBackend {
 public:
  // Creates every backend of `candidates` and reads the table. A backend that cannot be created is
  // left out (RunsOn says so), and so is each one declared deviating, for its dtypes. A missing,
  // refused or malformed table is made first when options.calibrate (a warning on stderr says so
  // and why; a failed calibration means the defaults), else it means the defaults; RunsOn says
  // which and why.
  static StatusOr<std::unique_ptr<Backend>> Create(const BackendRegistry& candidates,
                                                   const AutoOptions& options);

  std::string_view name() const override { return "auto"; }
  Support Supports(const MatMulDesc& desc) const override;
  // "calibration table FILE (N cells, CREATED)" or "built-in defaults (why)", then the
  // candidates and those left out with the reason.
  std::string RunsOn() const override;
  Arithmetic DeclaredArithmetic(DType dtype) const override;

  // The backend chosen for `desc` at `threads` threads and where the choice came from ("table
  // cell float 2 threads 256x256 x 256x256", "defaults"); NOT_FOUND... UNIMPLEMENTED when no
  // candidate supports desc. The table's cell of desc's dtype nearest in threads, then in shape;
  // an integer dtype without cells takes int32's ("table cell int32 ... (for int64)"); the
  // defaults when neither is there.
  struct Choice {
    std::string backend;
    std::string source;
    int threads = 0;  // Fewer threads than given to run it on (a "name@N" entry); 0: all given.
  };
  StatusOr<Choice> Choose(const MatMulDesc& desc, int threads) const;

  // The backend chosen for the family problem `desc` of product extents (batch, M, K, N) at
  // `threads` threads, as Compute chooses; UNIMPLEMENTED naming every candidate's reason when none
  // computes it.
  StatusOr<Choice> ChooseOp(const family::OpDesc& desc, const std::array<double, 4>& extents,
                            int threads) const;

  // Whether a table was loaded and is in use.
  bool UsesTable() const { return table_.has_value(); }

  family::FamilyBackend* family() override { return this; }

 protected:
  StatusOr<std::unique_ptr<MatMulPrimitive>> PrepareProduct(const MatMulPlan& plan) override;

 private:
  struct Candidate {
    std::string name;
    std::shared_ptr<Backend> backend;
    std::vector<AutoDeviation> deviations;  // Those declared for it (AutoOptions::deviations).
  };
  AutoBackend() = default;
  const Candidate* Find(std::string_view name) const;
  bool Eligible(const Candidate& candidate, const MatMulDesc& desc) const;
  // Why `candidate` cannot be chosen for `desc` (declared deviating, or its SupportOf's reason);
  // empty when it can.
  std::string Ineligible(const Candidate& candidate, const family::OpDesc& desc) const;

  // The family (auto_family.cc): "auto -> X: ..." of the choice, per description.
  Support SupportsOp(const family::OpDesc& desc) const override;
  Arithmetic DeclaredArithmetic(const family::OpDesc& desc) const override;
  Status Compute(const family::Plan& plan, MutableTensorView y) override;
  std::string Implementation(const family::OpDesc& desc) const override;

  std::vector<Candidate> candidates_;
  std::vector<std::string> left_out_;  // "onednn: excluded by MM_AUTO_EXCLUDE", ...
  std::optional<AutoTable> table_;
  std::string table_note_;  // Where the choices come from, for RunsOn.
  AutoDefaultsBasis defaults_basis_;
};

}  // namespace mm

#endif  // MM_BACKENDS_AUTO_AUTO_BACKEND_H_
