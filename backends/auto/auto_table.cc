// The auto backend's table: its identity, its JSON (written and parsed, every field checked),
// the nearest cell of a problem.
#include "auto_table.h"

#include <omp.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

#include "mm/backends/auto/auto_backend.h"
#include "mm/backends/onednn/onednn_settings.h"
#include "mm/engine/io/input_file.h"
#include "mm/engine/io/json.h"
#include "mm/engine/io/names.h"
#include "mm/engine/machine.h"
#include "mm/version.h"

namespace mm {
namespace auto_table {

std::string EnvOr(const char* name, std::string fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string(value) : fallback;
}

// Not omp_get_max_threads(): a process that lowers its count for a while (mm-fuzz reruns a case
// on 1 thread) keeps the table of its environment, whose cells cover 1 thread too.
int EnvironmentThreads() {
  const int threads = std::atoi(EnvOr("OMP_NUM_THREADS").c_str());
  return threads > 0 ? threads : omp_get_num_procs();
}

std::string DimsText(const Dims& dims) {
  std::string text;
  for (std::size_t i = 0; i < dims.size(); ++i) text += (i ? "x" : "") + std::to_string(dims[i]);
  return text;
}

std::array<double, 4> Extents(DType dtype, const Dims& a, const Dims& b) {
  auto plan = PlanMatMul({dtype, a, b});
  if (!plan.ok()) return {1, 1, 1, 1};
  return {static_cast<double>(plan->batch), static_cast<double>(plan->m),
          static_cast<double>(plan->k), static_cast<double>(plan->n)};
}

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

namespace {

double LogDistance(const std::array<double, 4>& x, const std::array<double, 4>& y) {
  double d = 0;
  for (int i = 0; i < 4; ++i) d += std::abs(std::log2(std::max(x[i], 1.0) / std::max(y[i], 1.0)));
  return d;
}

// The cell nearest in threads, then in shape, of those `matches` takes.
template <class Matches>
const AutoCell* Nearest(const AutoTable& table, const std::array<double, 4>& extents, int threads,
                        Matches matches) {
  const AutoCell* best = nullptr;
  double best_threads = std::numeric_limits<double>::infinity();
  double best_shape = std::numeric_limits<double>::infinity();
  for (const AutoCell& cell : table.cells) {
    if (!matches(cell)) continue;
    const double t = std::abs(std::log2(static_cast<double>(cell.threads) / std::max(threads, 1)));
    // A family cell's shapes are its product's, planned as float's.
    const double d = LogDistance(
        extents, Extents(cell.op ? DType::kFloat : cell.dtype, cell.a_dims, cell.b_dims));
    if (t < best_threads || (t == best_threads && d < best_shape)) {
      best = &cell;
      best_threads = t;
      best_shape = d;
    }
  }
  return best;
}

}  // namespace

const AutoCell* NearestCell(const AutoTable& table, DType dtype,
                            const std::array<double, 4>& extents, int threads) {
  return Nearest(table, extents, threads,
                 [&](const AutoCell& cell) { return !cell.op && cell.dtype == dtype; });
}

const AutoCell* NearestCell(const AutoTable& table, const family::OpDesc& desc,
                            const std::array<double, 4>& extents, int threads) {
  return Nearest(table, extents, threads, [&](const AutoCell& cell) {
    if (!cell.op) return false;
    family::OpDesc any_version = *cell.op;
    any_version.version = desc.version;
    return any_version == desc;
  });
}

Arithmetic Loosest(const Arithmetic& x, const Arithmetic& y) {
  auto precision = [](DType dtype) {
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
  };
  Arithmetic out = x;
  if (precision(y.accumulation) < precision(x.accumulation)) out.accumulation = y.accumulation;
  out.flushes_subnormals = x.flushes_subnormals || y.flushes_subnormals;
  return out;
}

ScopedOmpThreads::ScopedOmpThreads(int threads) : previous_(omp_get_max_threads()) {
  if (threads > 0) omp_set_num_threads(threads);
}

ScopedOmpThreads::~ScopedOmpThreads() { omp_set_num_threads(previous_); }

StatusOr<AutoTable> ReadTable(const std::string& path, const AutoIdentity& identity) {
  MM_ASSIGN_OR_RETURN(const std::string text, io::ReadInputFile(path, io::kCalibrationTableFile));
  return ParseAutoTable(text, path, identity);
}

}  // namespace auto_table

using auto_table::DimsText;
using auto_table::EnvironmentThreads;
using auto_table::EnvOr;
using auto_table::ParseEntry;

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
    nlohmann::json c = {{"threads", cell.threads},
                        {"a", cell.a_dims},
                        {"b", cell.b_dims},
                        {"ranking", cell.ranking}};
    if (cell.op) {
      c["desc"] = {{"op", family::OpName(cell.op->op)},
                   {"version", cell.op->version},
                   {"a_dtype", DTypeName(cell.op->a_dtype)},
                   {"b_dtype", DTypeName(cell.op->b_dtype)},
                   {"y_dtype", DTypeName(cell.op->y_dtype)},
                   {"scale_dtype", DTypeName(cell.op->scale_dtype)}};
    } else {
      c["dtype"] = DTypeName(cell.dtype);
    }
    if (!cell.seconds.empty()) c["seconds"] = cell.seconds;
    cells_json.push_back(c);
  }
  nlohmann::json out = {{"format", kAutoTableFormat},
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

// An element type named at `key` of `field` (int8 and uint8 included).
StatusOr<DType> ElementTypeAt(const TableField& field, const char* key) {
  MM_ASSIGN_OR_RETURN(const TableField value, field.Member(key));
  MM_ASSIGN_OR_RETURN(const std::string name, value.String());
  auto dtype = ElementTypeFromName(name);
  if (!dtype.ok()) return value.Error(dtype.status().message());
  return *dtype;
}

// A family cell's "desc": its operator, version and element types, as the plan would give them.
StatusOr<family::OpDesc> DescOf(const TableField& d) {
  family::OpDesc desc;
  MM_ASSIGN_OR_RETURN(const TableField op, d.Member("op"));
  MM_ASSIGN_OR_RETURN(const std::string op_name, op.String());
  auto parsed = family::OpFromName(op_name);
  if (!parsed.ok()) return op.Error(parsed.status().message());
  if (*parsed == family::Op::kMatMul)
    return op.Error("MatMul's cells name a \"dtype\", not a desc");
  desc.op = *parsed;
  MM_ASSIGN_OR_RETURN(const std::int64_t version, d.IntAt("version", 1, 1000));
  if (Status known = family::CheckOpVersion(desc.op, static_cast<int>(version)); !known.ok()) {
    return d.Error(known.message());
  }
  desc.version = static_cast<int>(version);
  MM_ASSIGN_OR_RETURN(desc.a_dtype, ElementTypeAt(d, "a_dtype"));
  MM_ASSIGN_OR_RETURN(desc.b_dtype, ElementTypeAt(d, "b_dtype"));
  MM_ASSIGN_OR_RETURN(desc.y_dtype, ElementTypeAt(d, "y_dtype"));
  MM_ASSIGN_OR_RETURN(desc.scale_dtype, ElementTypeAt(d, "scale_dtype"));
  return desc;
}

// A cell of a table of `format` (1: MatMul cells only; 2: a family cell has "desc" instead of
// "dtype").
StatusOr<AutoCell> CellOf(const TableField& c, int format) {
  AutoCell cell;
  MM_ASSIGN_OR_RETURN(const std::optional<TableField> desc, c.OptionalMember("desc"));
  if (desc && format < 2) {
    return desc->Error("a family cell in a table of format \"mm-auto-table 1\" (MatMul only)");
  }
  if (desc) {
    MM_ASSIGN_OR_RETURN(cell.op, DescOf(*desc));
  } else {
    MM_ASSIGN_OR_RETURN(const std::string dtype_name, c.StringAt("dtype"));
    auto dtype = DTypeFromName(dtype_name);
    if (!dtype.ok()) return c.Error(dtype.status().message());
    cell.dtype = *dtype;
  }
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

// Why `cell` (cell number `index`) cannot be auto's: not a MatMul, an empty ranking, an entry that
// is not a candidate of `expected` or runs on as many threads as the cell, or times that do not
// match the ranking; OK when none.
Status CheckCell(const AutoCell& cell, std::size_t index, const AutoIdentity& expected) {
  const std::string where = "cell " + std::to_string(index) + ": ";
  if (cell.op && (cell.a_dims.size() != 2 || cell.b_dims.size() != 2 ||
                  !PlanMatMul({DType::kFloat, cell.a_dims, cell.b_dims}).ok())) {
    return InvalidArgumentError(where + cell.op->ToString() + " " + DimsText(cell.a_dims) + " x " +
                                DimsText(cell.b_dims) + " is not a product [M,K] x [K,N]");
  }
  if (!cell.op && !PlanMatMul({cell.dtype, cell.a_dims, cell.b_dims}).ok()) {
    return InvalidArgumentError(where + DimsText(cell.a_dims) + " x " + DimsText(cell.b_dims) +
                                " is not a MatMul");
  }
  if (cell.ranking.empty()) return InvalidArgumentError(where + "empty ranking");
  for (const std::string& text : cell.ranking) {
    const std::optional<auto_table::Entry> entry = ParseEntry(text);
    if (!entry || !expected.backends.count(entry->name)) {
      return InvalidArgumentError(where + "ranks " + io::Printable(text) +
                                  ", which is not a candidate backend (or NAME@THREADS of one)");
    }
    if (entry->threads >= cell.threads) {
      return InvalidArgumentError(where + "ranks " + io::Printable(text) + " in a cell of " +
                                  std::to_string(cell.threads) + " threads (fewer expected)");
    }
  }
  if (!cell.seconds.empty() && cell.seconds.size() != cell.ranking.size()) {
    return InvalidArgumentError(where + std::to_string(cell.seconds.size()) + " times for " +
                                std::to_string(cell.ranking.size()) + " ranked backends");
  }
  return OkStatus();
}

}  // namespace

StatusOr<AutoTable> ParseAutoTable(std::string_view text, std::string_view source,
                                   const AutoIdentity& expected) {
  const std::string where(source);
  MM_ASSIGN_OR_RETURN(const nlohmann::json j, io::ParseJson(text, where));
  auto bad = [&](const std::string& what) { return InvalidArgumentError(where + ": " + what); };
  const TableField root(j, where);
  if (!j.is_object() || !j.contains("format") || !j["format"].is_string()) {
    return bad(std::string("not an auto calibration table (\"format\": \"") + kAutoTableFormat +
               "\" missing)");
  }
  const std::string format_name = j["format"].get<std::string>();
  // Format 1 (MatMul cells only) is read as it is: its family choices come from the defaults.
  const int format = format_name == "mm-auto-table 1" ? 1 : format_name == kAutoTableFormat ? 2 : 0;
  if (format == 0) {
    return bad("format \"" + io::Printable(format_name) + "\" is not one this mm reads (\"" +
               kAutoTableFormat + "\" or \"mm-auto-table 1\")");
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
    MM_ASSIGN_OR_RETURN(AutoCell cell, CellOf(cells[i], format));
    if (Status checked = CheckCell(cell, i, expected); !checked.ok()) {
      return bad(checked.message());
    }
    table.cells.push_back(std::move(cell));
  }
  return table;
}

}  // namespace mm
