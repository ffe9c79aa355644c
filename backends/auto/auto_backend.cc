#include "mm/backends/auto/auto_backend.h"

#include <fnmatch.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <utility>

#include "first_use.h"
#include "mm/backends/onednn/onednn_settings.h"
#include "mm/engine/io/input_file.h"
#include "mm/engine/io/json.h"
#include "mm/engine/io/names.h"
#include "mm/engine/io/paths.h"
#include "mm/engine/machine.h"
#include "mm/version.h"

namespace mm {
namespace {

std::string EnvOr(const char* name, std::string fallback = {}) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string(value) : fallback;
}

std::vector<std::string> SplitNames(std::string_view text) {
  std::vector<std::string> out;
  std::string current;
  for (char c : std::string(text) + ",") {
    if (c == ',' || std::isspace(static_cast<unsigned char>(c))) {
      if (!current.empty()) out.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  return out;
}

// Mantissa bits of a float accumulation type: fewer is looser.
int Precision(DType dtype) {
  switch (dtype) {
    case DType::kBFloat16:
      return 8;
    case DType::kFloat16:
      return 11;
    case DType::kFloat:
      return 24;
    default:
      return 53;
  }
}

std::string DimsText(const Dims& dims) {
  std::string text;
  for (std::size_t i = 0; i < dims.size(); ++i) text += (i ? "x" : "") + std::to_string(dims[i]);
  return text;
}

// batch, M, K, N of a plan-able pair of shapes (1-D operands count as 1 row or column).
std::array<double, 4> Extents(DType dtype, const Dims& a, const Dims& b) {
  auto plan = PlanMatMul({dtype, a, b});
  if (!plan.ok()) return {1, 1, 1, 1};
  return {static_cast<double>(plan->batch), static_cast<double>(plan->m),
          static_cast<double>(plan->k), static_cast<double>(plan->n)};
}

double LogDistance(const std::array<double, 4>& x, const std::array<double, 4>& y) {
  double d = 0;
  for (int i = 0; i < 4; ++i) d += std::abs(std::log2(std::max(x[i], 1.0) / std::max(y[i], 1.0)));
  return d;
}

// A ranking entry: "openblas" (on the threads given) or "openblas@1" (on 1 thread).
struct Entry {
  std::string name;
  int threads = 0;  // 0: the threads given.
};

std::optional<Entry> ParseEntry(std::string_view text) {
  const std::size_t at = text.find('@');
  if (at == std::string_view::npos) return Entry{std::string(text), 0};
  int threads = 0;
  for (char c : text.substr(at + 1)) {
    if (!std::isdigit(static_cast<unsigned char>(c)) || threads > 1 << 20) return std::nullopt;
    threads = threads * 10 + (c - '0');
  }
  if (threads < 1) return std::nullopt;
  return Entry{std::string(text.substr(0, at)), threads};
}

// Every backend follows the calling thread's OpenMP thread count (the BLAS backends pass it to
// their library per call), so running one on fewer threads is setting it around the call.
class ScopedOmpThreads {
 public:
  explicit ScopedOmpThreads(int threads) : previous_(omp_get_max_threads()) {
    if (threads > 0) omp_set_num_threads(threads);
  }
  ~ScopedOmpThreads() { omp_set_num_threads(previous_); }
  ScopedOmpThreads(const ScopedOmpThreads&) = delete;
  ScopedOmpThreads& operator=(const ScopedOmpThreads&) = delete;

 private:
  int previous_;
};

// Runs the chosen backend's primitive: directly when it runs on the threads given (Execute has
// checked the views against a plan equal to the inner one's, so the inner Run is called without a
// second check); on `threads` threads otherwise.
class AutoPrimitive final : public MatMulPrimitive {
 public:
  AutoPrimitive(const MatMulPlan& plan, std::shared_ptr<Backend> owner,
                std::unique_ptr<MatMulPrimitive> inner, int threads, int given)
      : MatMulPrimitive(plan),
        owner_(std::move(owner)),
        inner_(std::move(inner)),
        threads_(threads),
        given_(given) {
    // Dispatch costs nothing per call: Execute runs the chosen backend's primitive directly.
    if (threads_ == 0) RunWith(*inner_);
  }

  std::string implementation() const override {
    const std::string inner = inner_->implementation();
    const std::string threads = threads_ == 0 ? ""
                                              : " (" + std::to_string(threads_) + " of " +
                                                    std::to_string(given_) + " threads)";
    return "auto -> " + std::string(owner_->name()) + threads + (inner.empty() ? "" : ": " + inner);
  }

 protected:
  // Called only when it runs on fewer threads (otherwise Execute runs inner_'s Run).
  Status Run(TensorView a, TensorView b, MutableTensorView y) override {
    if (threads_ == 0) return InternalError("auto: the dispatching primitive itself was run");
    const ScopedOmpThreads scoped(threads_);
    return inner_->Execute(a, b, y);
  }

 private:
  std::shared_ptr<Backend> owner_;  // Outlives inner_, which may refer to it.
  std::unique_ptr<MatMulPrimitive> inner_;
  int threads_;  // 0: the threads given.
  int given_;
};

// The deviations of the live ScopedAutoDeviations.
std::vector<AutoDeviation>& DeclaredDeviations() {
  static std::vector<AutoDeviation> deviations;
  return deviations;
}

}  // namespace

ScopedAutoDeviations::ScopedAutoDeviations(std::vector<AutoDeviation> deviations)
    : previous_(std::exchange(DeclaredDeviations(), std::move(deviations))) {}

ScopedAutoDeviations::~ScopedAutoDeviations() { DeclaredDeviations() = std::move(previous_); }

namespace {

// The stop request of the live ScopedAutoStop.
const volatile std::sig_atomic_t*& StopRequest() {
  static const volatile std::sig_atomic_t* stop = nullptr;
  return stop;
}

}  // namespace

ScopedAutoStop::ScopedAutoStop(const volatile std::sig_atomic_t* stop)
    : previous_(std::exchange(StopRequest(), stop)) {}

ScopedAutoStop::~ScopedAutoStop() { StopRequest() = previous_; }

namespace {

// The thread count this process was started with: OMP_NUM_THREADS (its first level), else every
// core. Not omp_get_max_threads(): a process that lowers its count for a while (mm-fuzz reruns a
// case on 1 thread) keeps the table of its environment, whose cells cover 1 thread too.
int EnvironmentThreads() {
  const int threads = std::atoi(EnvOr("OMP_NUM_THREADS").c_str());
  return threads > 0 ? threads : omp_get_num_procs();
}

}  // namespace

std::string AutoTableKey() {
  const MachineInfo machine = DescribeMachine({kOneDnnMaxCpuIsaVariable});
  const std::string text = machine.cpu_model + "\n" + machine.cpu_features + "\n" +
                           std::to_string(machine.logical_cpus) + "\n" +
                           machine.KernelVariable(kOneDnnMaxCpuIsaVariable) + "\n" + MM_VERSION +
                           "\n" + EnvOr("OMP_WAIT_POLICY", "unset") + "\n" +
                           std::to_string(EnvironmentThreads());
  // FNV-1a: the same name on every run and build, unlike std::hash.
  std::uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

std::string AutoOptions::DefaultTablePath() {
  const std::string name = "/auto-" + AutoTableKey() + ".json";
  const std::string xdg = EnvOr("XDG_CACHE_HOME");
  if (!xdg.empty()) return xdg + "/mm" + name;
  const std::string home = EnvOr("HOME");
  if (!home.empty()) return home + "/.cache/mm" + name;
  return {};
}

namespace {

// mm-bench beside this executable (the build's bin folder, or an installed bin), else in PATH.
std::string DefaultCalibrator() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    const std::filesystem::path beside = self.parent_path() / "mm-bench";
    if (access(beside.c_str(), X_OK) == 0) return beside.string();
  }
  return "mm-bench";
}

}  // namespace

AutoOptions AutoOptions::FromEnvironment() {
  AutoOptions options;
  options.exclude = SplitNames(EnvOr("MM_AUTO_EXCLUDE"));
  const bool table_given = std::getenv("MM_AUTO_TABLE") != nullptr;
  options.table_path = EnvOr("MM_AUTO_TABLE", DefaultTablePath());
  options.deviations = DeclaredDeviations();
  const std::string calibrate = EnvOr("MM_AUTO_CALIBRATE");
  if (calibrate == "1" || calibrate == "on") {
    options.calibrate = true;
  } else if (calibrate.empty()) {
    options.calibrate = !table_given && std::getenv("CTEST_INTERACTIVE_DEBUG_MODE") == nullptr;
  } else if (calibrate != "0" && calibrate != "off") {
    options.setting_error =
        "MM_AUTO_CALIBRATE is \"" + io::Printable(calibrate) + "\"; expected 0, 1, off or on";
  }
  options.calibrator = EnvOr("MM_AUTO_CALIBRATOR", DefaultCalibrator());
  options.stop = StopRequest();
  return options;
}

nlohmann::json AutoIdentity::ToJson() const {
  return {{"cpu_model", cpu_model},       {"cpu_features", cpu_features},
          {"logical_cpus", logical_cpus}, {"onednn_max_cpu_isa", onednn_max_cpu_isa},
          {"mm_version", mm_version},     {"omp_wait_policy", omp_wait_policy},
          {"threads", threads},           {"backends", backends}};
}

std::string AutoIdentity::DifferenceFrom(const AutoIdentity& other) const {
  auto differ = [](const char* field, const std::string& table, const std::string& here) {
    return std::string(field) + ": the table has \"" + table + "\", this run \"" + here + "\"";
  };
  if (cpu_model != other.cpu_model) return differ("cpu_model", cpu_model, other.cpu_model);
  if (cpu_features != other.cpu_features) {
    return differ("cpu_features", cpu_features, other.cpu_features);
  }
  if (logical_cpus != other.logical_cpus) {
    return differ("logical_cpus", std::to_string(logical_cpus), std::to_string(other.logical_cpus));
  }
  if (onednn_max_cpu_isa != other.onednn_max_cpu_isa) {
    return differ("onednn_max_cpu_isa (ONEDNN_MAX_CPU_ISA)", onednn_max_cpu_isa,
                  other.onednn_max_cpu_isa);
  }
  if (mm_version != other.mm_version) return differ("mm_version", mm_version, other.mm_version);
  if (omp_wait_policy != other.omp_wait_policy) {
    return differ("omp_wait_policy (OMP_WAIT_POLICY)", omp_wait_policy, other.omp_wait_policy);
  }
  if (threads != other.threads) {
    return differ("threads", std::to_string(threads), std::to_string(other.threads));
  }
  if (backends != other.backends) {
    for (const auto& [name, description] : other.backends) {
      auto it = backends.find(name);
      if (it == backends.end()) return "backends: the table has no backend " + name;
      if (it->second != description)
        return differ(("backends." + name).c_str(), it->second, description);
    }
    for (const auto& [name, description] : backends) {
      if (!other.backends.count(name)) return "backends: the table has " + name + ", this run not";
    }
  }
  return {};
}

AutoIdentity CurrentAutoIdentity(const BackendRegistry& candidates) {
  const MachineInfo machine = DescribeMachine({kOneDnnMaxCpuIsaVariable});
  AutoIdentity id;
  id.cpu_model = machine.cpu_model;
  id.cpu_features = machine.cpu_features;
  id.logical_cpus = machine.logical_cpus;
  id.onednn_max_cpu_isa = machine.KernelVariable(kOneDnnMaxCpuIsaVariable);
  id.mm_version = MM_VERSION;
  id.omp_wait_policy = EnvOr("OMP_WAIT_POLICY", "unset");
  id.threads = EnvironmentThreads();
  for (const std::string& name : candidates.Names()) {
    id.backends[name] = candidates.Description(name);
  }
  return id;
}

nlohmann::json AutoTable::ToJson() const {
  nlohmann::json cells_json = nlohmann::json::array();
  for (const AutoCell& cell : cells) {
    nlohmann::json c = {{"dtype", DTypeName(cell.dtype)},
                        {"threads", cell.threads},
                        {"a", cell.a_dims},
                        {"b", cell.b_dims},
                        {"ranking", cell.ranking}};
    if (!cell.seconds.empty()) c["seconds"] = cell.seconds;
    cells_json.push_back(c);
  }
  nlohmann::json out = {{"format", "mm-auto-table 1"},
                        {"created", created},
                        {"machine", identity.ToJson()},
                        {"cells", cells_json}};
  if (!load.empty()) {
    nlohmann::json load_json = nlohmann::json::array();
    for (const CalibrationLoad& part : load) {
      load_json.push_back({{"threads", part.threads},
                           {"seconds", part.seconds},
                           {"other_cores", part.other_cores},
                           {"steal_cores", part.steal_cores}});
    }
    out["load"] = std::move(load_json);
  }
  return out;
}

std::string AutoTable::LoadWarning() const {
  std::string out;
  auto cores = [](double value) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.2f", value);
    return std::string(text);
  };
  for (const CalibrationLoad& part : load) {
    std::string busy;
    if (part.other_cores > kCalibrationBusyCores) {
      busy = "other processes used " + cores(part.other_cores) + " cores";
    }
    if (part.steal_cores > kCalibrationBusyCores) {
      busy += (busy.empty() ? "" : " and ") + std::string("the hypervisor took ") +
              cores(part.steal_cores) + " cores";
    }
    if (busy.empty()) continue;
    out += (out.empty() ? "measured under load: " : "; ") + busy + " while the " +
           std::to_string(part.threads) + "-thread cells were timed";
  }
  return out;
}

namespace {

using TableField = io::JsonField<nlohmann::json>;

StatusOr<Dims> DimsOf(const TableField& field) {
  MM_ASSIGN_OR_RETURN(std::vector<TableField> elements, field.Elements());
  Dims dims;
  for (const TableField& e : elements) {
    MM_ASSIGN_OR_RETURN(std::int64_t dim, e.Int(0));
    dims.push_back(dim);
  }
  return dims;
}

StatusOr<AutoIdentity> IdentityOf(const TableField& m) {
  AutoIdentity id;
  MM_ASSIGN_OR_RETURN(id.cpu_model, m.StringAt("cpu_model"));
  MM_ASSIGN_OR_RETURN(id.cpu_features, m.StringAt("cpu_features"));
  MM_ASSIGN_OR_RETURN(const std::int64_t cpus,
                      m.IntAt("logical_cpus", 0, std::numeric_limits<int>::max()));
  id.logical_cpus = static_cast<int>(cpus);
  MM_ASSIGN_OR_RETURN(id.onednn_max_cpu_isa, m.StringAt("onednn_max_cpu_isa"));
  MM_ASSIGN_OR_RETURN(id.mm_version, m.StringAt("mm_version"));
  MM_ASSIGN_OR_RETURN(id.omp_wait_policy, m.StringAt("omp_wait_policy"));
  MM_ASSIGN_OR_RETURN(const std::int64_t threads,
                      m.IntAt("threads", 1, std::numeric_limits<int>::max()));
  id.threads = static_cast<int>(threads);
  MM_ASSIGN_OR_RETURN(const TableField backends, m.Member("backends"));
  MM_ASSIGN_OR_RETURN(const auto members, backends.Members());
  for (const auto& [name, description] : members) {
    MM_ASSIGN_OR_RETURN(id.backends[name], description.String());
  }
  return id;
}

StatusOr<AutoCell> CellOf(const TableField& c) {
  AutoCell cell;
  MM_ASSIGN_OR_RETURN(const std::string dtype_name, c.StringAt("dtype"));
  auto dtype = DTypeFromName(dtype_name);
  if (!dtype.ok()) return c.Error(dtype.status().message());
  cell.dtype = *dtype;
  MM_ASSIGN_OR_RETURN(const std::int64_t threads,
                      c.IntAt("threads", 1, std::numeric_limits<int>::max()));
  cell.threads = static_cast<int>(threads);
  MM_ASSIGN_OR_RETURN(const TableField a, c.Member("a"));
  MM_ASSIGN_OR_RETURN(cell.a_dims, DimsOf(a));
  MM_ASSIGN_OR_RETURN(const TableField b, c.Member("b"));
  MM_ASSIGN_OR_RETURN(cell.b_dims, DimsOf(b));
  MM_ASSIGN_OR_RETURN(const TableField ranking, c.Member("ranking"));
  MM_ASSIGN_OR_RETURN(cell.ranking, ranking.Strings());
  MM_ASSIGN_OR_RETURN(const std::optional<TableField> seconds, c.OptionalMember("seconds"));
  if (seconds) {
    MM_ASSIGN_OR_RETURN(const std::vector<TableField> times, seconds->Elements());
    for (const TableField& t : times) {
      MM_ASSIGN_OR_RETURN(const double v, t.Number());
      cell.seconds.push_back(v);
    }
  }
  return cell;
}

StatusOr<CalibrationLoad> LoadOf(const TableField& part) {
  CalibrationLoad load;
  MM_ASSIGN_OR_RETURN(const std::int64_t threads,
                      part.IntAt("threads", 1, std::numeric_limits<int>::max()));
  load.threads = static_cast<int>(threads);
  for (auto [key, value] :
       {std::pair{"seconds", &load.seconds}, std::pair{"other_cores", &load.other_cores},
        std::pair{"steal_cores", &load.steal_cores}}) {
    MM_ASSIGN_OR_RETURN(const TableField field, part.Member(key));
    MM_ASSIGN_OR_RETURN(*value, field.Number());
    if (!(*value >= 0) || std::isinf(*value)) {
      return field.Error("a finite number of at least 0 expected");
    }
  }
  return load;
}

}  // namespace

StatusOr<AutoTable> ParseAutoTable(std::string_view text, std::string_view source,
                                   const AutoIdentity& expected) {
  const std::string where(source);
  MM_ASSIGN_OR_RETURN(const nlohmann::json j, io::ParseJson(text, where));
  auto bad = [&](const std::string& what) { return InvalidArgumentError(where + ": " + what); };
  const TableField root(j, where);
  if (!j.is_object() || !j.contains("format") || j["format"] != "mm-auto-table 1") {
    return bad("not an auto calibration table (\"format\": \"mm-auto-table 1\" missing)");
  }
  AutoTable table;
  MM_ASSIGN_OR_RETURN(const TableField machine, root.Member("machine"));
  MM_ASSIGN_OR_RETURN(table.identity, IdentityOf(machine));
  MM_ASSIGN_OR_RETURN(const std::optional<TableField> created, root.OptionalMember("created"));
  if (created) {
    MM_ASSIGN_OR_RETURN(table.created, created->String());
  }
  MM_ASSIGN_OR_RETURN(const std::optional<TableField> load, root.OptionalMember("load"));
  if (load) {
    MM_ASSIGN_OR_RETURN(const std::vector<TableField> parts, load->Elements());
    for (const TableField& part : parts) {
      MM_ASSIGN_OR_RETURN(CalibrationLoad l, LoadOf(part));
      table.load.push_back(l);
    }
  }
  MM_ASSIGN_OR_RETURN(const TableField cells_field, root.Member("cells"));
  MM_ASSIGN_OR_RETURN(const std::vector<TableField> cells, cells_field.Elements());
  // Each cell costs every Prepare a look (the nearest is searched cell by cell): a table of far
  // more cells than any calibration writes is refused before its cells are read.
  if (cells.size() > kMaxAutoTableCells) {
    return bad("holds " + std::to_string(cells.size()) + " cells, over the cap of " +
               std::to_string(kMaxAutoTableCells) + " (a full calibration writes at most " +
               std::to_string(kMaxFullCalibrationCells) + ")");
  }
  const std::string difference = table.identity.DifferenceFrom(expected);
  if (!difference.empty()) {
    return FailedPreconditionError(where + " was calibrated elsewhere: " + difference);
  }
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const std::string cell_where = "cell " + std::to_string(i);
    MM_ASSIGN_OR_RETURN(AutoCell cell, CellOf(cells[i]));
    if (!PlanMatMul({cell.dtype, cell.a_dims, cell.b_dims}).ok()) {
      return bad(cell_where + ": " + DimsText(cell.a_dims) + " x " + DimsText(cell.b_dims) +
                 " is not a MatMul");
    }
    if (cell.ranking.empty()) return bad(cell_where + ": empty ranking");
    for (const std::string& text : cell.ranking) {
      const std::optional<Entry> entry = ParseEntry(text);
      if (!entry || !expected.backends.count(entry->name)) {
        return bad(cell_where + ": ranks " + io::Printable(text) +
                   ", which is not a candidate backend (or NAME@THREADS of one)");
      }
      if (entry->threads >= cell.threads) {
        return bad(cell_where + ": ranks " + io::Printable(text) + " in a cell of " +
                   std::to_string(cell.threads) + " threads (fewer expected)");
      }
    }
    if (!cell.seconds.empty() && cell.seconds.size() != cell.ranking.size()) {
      return bad(cell_where + ": " + std::to_string(cell.seconds.size()) + " times for " +
                 std::to_string(cell.ranking.size()) + " ranked backends");
    }
    table.cells.push_back(std::move(cell));
  }
  return table;
}

AutoDefaultsBasis AutoDefaultsBasis::OfThisMachine() {
  const MachineInfo machine = DescribeMachine({kOneDnnMaxCpuIsaVariable});
  std::istringstream features(machine.cpu_features);
  const bool avx512f =
      std::find(std::istream_iterator<std::string>(features), std::istream_iterator<std::string>(),
                "avx512f") != std::istream_iterator<std::string>();
  std::string cap = machine.KernelVariable(kOneDnnMaxCpuIsaVariable);
  std::transform(cap.begin(), cap.end(), cap.begin(),
                 [](unsigned char c) { return std::toupper(c); });
  // oneDNN's levels from AVX512_CORE up, and ALL, allow AVX-512; SSE41, AVX, AVX2, AVX2_VNNI not.
  const bool onednn_allowed =
      cap == "UNSET" || cap.empty() || cap == "ALL" || cap.starts_with("AVX512");
  AutoDefaultsBasis basis;
  basis.onednn_avx512 = avx512f && onednn_allowed;
  // The eigen backend runs its AVX-512 kernels where the CPU has them and MM_MAX_CPU_ISA allows.
  const StatusOr<CpuIsa> isa = ChosenCpuIsa();
  basis.eigen_avx512 = avx512f && isa.ok() && *isa == CpuIsa::kAvx512;
  return basis;
}

std::string AutoDefaultsBasis::ToString() const {
  if (onednn_avx512 && eigen_avx512) return "onednn and eigen with AVX-512";
  if (onednn_avx512) return "onednn with AVX-512, eigen without";
  if (eigen_avx512) return "eigen with AVX-512, onednn without";
  return "neither onednn nor eigen with AVX-512";
}

std::vector<std::string> DefaultAutoRanking(DType dtype, int threads, double flops,
                                            const AutoDefaultsBasis& basis) {
  // Tiny problems (under 32^3 multiply-adds): the lowest per-call cost, eigen's. Otherwise the
  // backends that won the most cells of a full calibration (docs/backends.md, "auto"): with
  // AVX-512, oneDNN then eigen for float and eigen for double (Debian's OpenBLAS runs its Haswell
  // kernels there); without, OpenBLAS then oneDNN for float and OpenBLAS then eigen for double.
  // The figures: docs/notes/2026-12-03-measurements-behind-the-code.md. oneDNN (native
  // bfloat16 where the CPU has it; float16 through float32) then eigen for the 16-bit floats,
  // eigen for the integers.
  const bool tiny = flops < 2.0 * 32 * 32 * 32;
  (void)threads;
  switch (dtype) {
    case DType::kFloat:
      if (tiny) return {"eigen", "onednn", "openblas", "blis"};
      if (basis.onednn_avx512 && basis.eigen_avx512) {
        return {"onednn", "eigen", "openblas", "blis", "atlas", "netlib"};
      }
      if (basis.onednn_avx512) return {"onednn", "openblas", "blis", "eigen", "atlas", "netlib"};
      return {"openblas", "onednn", "blis", "eigen", "atlas", "netlib"};
    case DType::kDouble:
      if (tiny) return {"eigen", "openblas", "blis"};
      if (basis.eigen_avx512) return {"eigen", "openblas", "blis", "atlas", "netlib"};
      return {"openblas", "eigen", "blis", "atlas", "netlib"};
    case DType::kBFloat16:
      if (tiny) return {"eigen", "onednn"};
      return {"onednn", "eigen"};
    case DType::kFloat16:
      if (tiny) return {"eigen", "onednn"};
      return {"onednn", "eigen"};
    default:
      return {"eigen"};
  }
}

namespace {

StatusOr<AutoTable> ReadTable(const std::string& path, const AutoIdentity& identity) {
  MM_ASSIGN_OR_RETURN(const std::string text, io::ReadInputFile(path, io::kCalibrationTableFile));
  return ParseAutoTable(text, path, identity);
}

struct LoadedTable {
  std::optional<AutoTable> table;
  std::string note;  // Where the choices come from, for RunsOn.
};

// `path` as reports show it: under $HOME from "~" (auto's own tables live in ~/.cache/mm), so no
// report carries the machine's home directory; else as io::ReportedPath names it.
std::string ShownTablePath(const std::string& path) {
  const std::filesystem::path home = EnvOr("HOME");
  const std::filesystem::path normal = std::filesystem::path(path).lexically_normal();
  if (home.is_absolute() && normal.is_absolute()) {
    const std::filesystem::path rest = normal.lexically_relative(home.lexically_normal());
    if (!rest.empty() && *rest.begin() != ".." && rest != ".") return "~/" + rest.string();
  }
  return io::ReportedPath(path).string();
}

LoadedTable Used(AutoTable table, const std::string& path, const std::string& how) {
  const std::string load = table.LoadWarning();
  const std::string note = "calibration table " + ShownTablePath(path) + " (" +
                           std::to_string(table.cells.size()) + " cells, created " + table.created +
                           how + (load.empty() ? "" : "; " + load) + ")";
  return {std::move(table), note};
}

// The built-in defaults after a first use that could not make the table, saying why on stderr.
LoadedTable FirstUseFailed(const std::string& what, const Status& why) {
  std::cerr << "mm: auto: warning: " << what << ", using the built-in defaults: " << why.message()
            << "\n";
  return {std::nullopt, "built-in defaults (first-use calibration failed: " + why.message() + ")"};
}

// Makes the table at `path` (a quick calibration, one process at a time) after `why` it could not
// be used; the defaults when the calibration fails, or the lock or the calibrator's run pass their
// limits or are stopped, saying why on stderr.
LoadedTable CalibrateOnFirstUse(const AutoOptions& options, const AutoIdentity& identity,
                                const std::string& why) {
  const std::string& path = options.table_path;
  std::error_code ignored;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ignored);
  auto lock = auto_first_use::TableLock::Take(path, {options.lock_wait_seconds, options.stop});
  if (!lock.ok()) return FirstUseFailed("no calibration table", lock.status());
  // Another process may have made it while this one waited for the lock.
  if (auto table = ReadTable(path, identity); table.ok()) {
    return Used(std::move(table).value(), path, "");
  }
  std::cerr << "mm: auto: " << why << "; calibrating for this machine (quick set, under 30 s on 2 "
            << "cores, stopped after " << options.calibrator_seconds
            << " s; MM_AUTO_CALIBRATE=0 turns this off) into " << path << "\n";
  Status made = auto_first_use::RunCalibrator(options.calibrator, path,
                                              {options.calibrator_seconds, options.stop});
  auto table = made.ok() ? ReadTable(path, identity) : StatusOr<AutoTable>(made);
  if (table.ok()) return Used(std::move(table).value(), path, ", on first use");
  return FirstUseFailed("calibration failed", table.status());
}

// The table auto chooses from (see AutoBackend::Create), and where the choices come from.
StatusOr<LoadedTable> LoadTable(const AutoOptions& options, const AutoIdentity& identity) {
  const std::string& path = options.table_path;
  if (path.empty()) {
    return LoadedTable{std::nullopt,
                       "built-in defaults (no table location: MM_AUTO_TABLE, XDG_CACHE_HOME "
                       "and HOME are unset)"};
  }
  auto table = ReadTable(path, identity);
  if (table.ok()) return Used(std::move(table).value(), path, "");
  const bool missing = table.status().code() == StatusCode::kNotFound;
  if (options.calibrate) {
    return CalibrateOnFirstUse(
        options, identity,
        missing ? "no calibration table yet"
                : "warning: calibration table refused (" + table.status().message() + ")");
  }
  if (missing) {
    return LoadedTable{std::nullopt, "built-in defaults (no calibration table at " + path +
                                         "; make one with mm-bench --mm_calibrate=" + path + ")"};
  }
  return LoadedTable{std::nullopt, "built-in defaults (calibration table refused: " +
                                       table.status().message() + ")"};
}

}  // namespace

StatusOr<std::unique_ptr<Backend>> AutoBackend::Create(const BackendRegistry& candidates,
                                                       const AutoOptions& options) {
  if (!options.setting_error.empty()) return InvalidArgumentError("auto: " + options.setting_error);
  auto backend = std::unique_ptr<AutoBackend>(new AutoBackend());
  backend->defaults_basis_ = options.defaults_basis.value_or(AutoDefaultsBasis::OfThisMachine());
  for (const std::string& name : options.exclude) {
    // A known backend unavailable here may be named (the same setting serves every machine).
    if (!candidates.Contains(name) && candidates.Description(name).empty()) {
      return InvalidArgumentError("auto: MM_AUTO_EXCLUDE names " + name +
                                  ", which is not a backend auto chooses from");
    }
  }
  for (const std::string& name : candidates.Names()) {
    if (std::find(options.exclude.begin(), options.exclude.end(), name) != options.exclude.end()) {
      backend->left_out_.push_back(name + ": excluded (MM_AUTO_EXCLUDE)");
      continue;
    }
    auto created = candidates.Create(name);
    if (!created.ok()) {
      backend->left_out_.push_back(name + ": unavailable (" + created.status().ToString() + ")");
      continue;
    }
    Candidate candidate{name, std::shared_ptr<Backend>(std::move(created).value()), {}};
    for (const AutoDeviation& d : options.deviations) {
      if (fnmatch(d.backend_pattern.c_str(), name.c_str(), 0) != 0) continue;
      const std::vector<DType> dtypes =
          d.dtypes.empty() ? std::vector<DType>(kAllDTypes.begin(), kAllDTypes.end()) : d.dtypes;
      for (DType dtype : dtypes) {
        if (std::find(candidate.excluded_dtypes.begin(), candidate.excluded_dtypes.end(), dtype) ==
            candidate.excluded_dtypes.end()) {
          candidate.excluded_dtypes.push_back(dtype);
        }
      }
      std::string which;
      for (DType dtype : d.dtypes) {
        which += (which.empty() ? "" : ", ") + std::string(DTypeName(dtype));
      }
      backend->left_out_.push_back(name + " for " + (which.empty() ? "every dtype" : which) + ": " +
                                   d.declared);
    }
    backend->candidates_.push_back(std::move(candidate));
  }
  MM_ASSIGN_OR_RETURN(LoadedTable loaded, LoadTable(options, CurrentAutoIdentity(candidates)));
  backend->table_ = std::move(loaded.table);
  backend->table_note_ = std::move(loaded.note);
  return std::unique_ptr<Backend>(std::move(backend));
}

const AutoBackend::Candidate* AutoBackend::Find(std::string_view name) const {
  for (const Candidate& c : candidates_) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

bool AutoBackend::Eligible(const Candidate& candidate, const MatMulDesc& desc) const {
  if (std::find(candidate.excluded_dtypes.begin(), candidate.excluded_dtypes.end(), desc.dtype) !=
      candidate.excluded_dtypes.end()) {
    return false;
  }
  return candidate.backend->Supports(desc).supported();
}

Support AutoBackend::Supports(const MatMulDesc& desc) const {
  // As Prepare would choose now: the chosen backend's own support, named.
  auto choice = Choose(desc, omp_get_max_threads());
  if (!choice.ok()) {
    return Support::No("no candidate backend computes " + desc.ToString() +
                       " and is conformant for " + std::string(DTypeName(desc.dtype)));
  }
  const Support inner = Find(choice->backend)->backend->Supports(desc);
  if (inner.level == Support::Level::kNative) return inner;
  return Support::ByConversion(choice->backend + ": " + inner.note);
}

std::string AutoBackend::RunsOn() const {
  std::string text = "choices from " + table_note_ +
                     "; last resort, built-in defaults (not measured here) ranked for " +
                     defaults_basis_.ToString() + "; candidates:";
  for (const Candidate& c : candidates_) text += " " + c.name;
  for (const std::string& note : left_out_) text += "; left out: " + note;
  return text;
}

Arithmetic AutoBackend::DeclaredArithmetic(DType dtype) const {
  std::optional<Arithmetic> loosest;
  // Support for a dtype is asked on a plain 2-D problem, as mm-bench --mm_describe does.
  const MatMulDesc probe{dtype, {2, 2}, {2, 2}};
  for (const Candidate& c : candidates_) {
    if (!Eligible(c, probe)) continue;
    const Arithmetic a = c.backend->DeclaredArithmetic(dtype);
    if (!loosest) {
      loosest = a;
      continue;
    }
    if (IsFloat(dtype) && Precision(a.accumulation) < Precision(loosest->accumulation)) {
      loosest->accumulation = a.accumulation;
    }
    loosest->flushes_subnormals = loosest->flushes_subnormals || a.flushes_subnormals;
  }
  return loosest.value_or(Arithmetic::OwnType(dtype));
}

namespace {

// The table's cell of `dtype` nearest to a problem of `extents` at `threads` threads: the nearest
// calibrated thread count, then the nearest shape. Null when the table has no cell of `dtype`.
const AutoCell* NearestCell(const AutoTable& table, DType dtype,
                            const std::array<double, 4>& extents, int threads) {
  const AutoCell* best = nullptr;
  double best_threads = std::numeric_limits<double>::infinity();
  double best_shape = std::numeric_limits<double>::infinity();
  for (const AutoCell& cell : table.cells) {
    if (cell.dtype != dtype) continue;
    const double t = std::abs(std::log2(static_cast<double>(cell.threads) / std::max(threads, 1)));
    const double d = LogDistance(extents, Extents(cell.dtype, cell.a_dims, cell.b_dims));
    if (t < best_threads || (t == best_threads && d < best_shape)) {
      best = &cell;
      best_threads = t;
      best_shape = d;
    }
  }
  return best;
}

}  // namespace

StatusOr<AutoBackend::Choice> AutoBackend::Choose(const MatMulDesc& desc, int threads) const {
  auto eligible = [&](std::string_view name) {
    const Candidate* c = Find(name);
    return c != nullptr && Eligible(*c, desc);
  };
  const std::array<double, 4> extents = Extents(desc.dtype, desc.a_dims, desc.b_dims);
  if (table_) {
    const AutoCell* best = NearestCell(*table_, desc.dtype, extents, threads);
    // The other integer types run as int32 does in every built-in backend (one 64-bit product
    // each: eigen widens 32-bit integers to 64 bits, so does the reference): int32's cells
    // stand for them where the table has none of their own.
    const bool stand_in = best == nullptr && !IsFloat(desc.dtype) && desc.dtype != DType::kInt32;
    if (stand_in) best = NearestCell(*table_, DType::kInt32, extents, threads);
    if (best != nullptr) {
      for (const std::string& text : best->ranking) {
        const std::optional<Entry> entry = ParseEntry(text);
        if (!entry || !eligible(entry->name)) continue;
        // A thread count from a cell of more threads than given is no fewer here.
        const int fewer = entry->threads > 0 && entry->threads < threads ? entry->threads : 0;
        return Choice{entry->name,
                      "table cell " + std::string(DTypeName(best->dtype)) + " " +
                          std::to_string(best->threads) + " threads " + DimsText(best->a_dims) +
                          " x " + DimsText(best->b_dims) +
                          (stand_in ? " (for " + std::string(DTypeName(desc.dtype)) + ")" : ""),
                      fewer};
      }
    }
  }
  const double flops = 2 * extents[0] * extents[1] * extents[2] * extents[3];
  for (const std::string& name : DefaultAutoRanking(desc.dtype, threads, flops, defaults_basis_)) {
    if (eligible(name)) return Choice{name, "built-in defaults"};
  }
  // Registry order, reference first: the oracle is always correct.
  for (const Candidate& c : candidates_) {
    if (c.name != "reference" && Eligible(c, desc)) return Choice{c.name, "first candidate"};
  }
  for (const Candidate& c : candidates_) {
    if (Eligible(c, desc)) return Choice{c.name, "first candidate"};
  }
  return UnimplementedError("auto: no candidate backend computes " + desc.ToString() +
                            " and is conformant for " + std::string(DTypeName(desc.dtype)));
}

StatusOr<std::unique_ptr<MatMulPrimitive>> AutoBackend::PrepareProduct(const MatMulPlan& plan) {
  const int given = omp_get_max_threads();
  MM_ASSIGN_OR_RETURN(Choice choice, Choose(plan.desc, given));
  const Candidate* c = Find(choice.backend);
  // Prepared on the threads it runs on: oneDNN sizes its kernels' partition then.
  std::unique_ptr<MatMulPrimitive> inner;
  {
    const ScopedOmpThreads scoped(choice.threads);
    MM_ASSIGN_OR_RETURN(inner, c->backend->Prepare(plan));
  }
  return std::unique_ptr<MatMulPrimitive>(
      std::make_unique<AutoPrimitive>(plan, c->backend, std::move(inner), choice.threads, given));
}

}  // namespace mm
