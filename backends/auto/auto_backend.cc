// The auto backend's policy: the candidates, the choice per problem (the table's nearest cell,
// else the built-in defaults) and the primitive that runs the chosen backend.
#include "mm/backends/auto/auto_backend.h"

#include <fnmatch.h>
#include <omp.h>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <optional>
#include <sstream>
#include <utility>

#include "auto_table.h"
#include "first_use.h"
#include "mm/backends/onednn/onednn_settings.h"
#include "mm/engine/machine.h"

namespace mm {
namespace {

using auto_table::DimsText;
using auto_table::Entry;
using auto_table::Extents;
using auto_table::NearestCell;
using auto_table::ParseEntry;
using auto_table::ScopedOmpThreads;

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

// "float16", "every dtype", "Gemm, MatMulInteger, every dtype": what a deviation covers, for
// RunsOn (one naming no operator covers every operator).
std::string DeviationScope(const AutoDeviation& d) {
  std::string ops, dtypes;
  for (family::Op op : d.ops) ops += (ops.empty() ? "" : ", ") + std::string(family::OpName(op));
  for (DType dtype : d.dtypes) {
    dtypes += (dtypes.empty() ? "" : ", ") + std::string(DTypeName(dtype));
  }
  return (ops.empty() ? "" : ops + ", ") + (dtypes.empty() ? "every dtype" : dtypes);
}

}  // namespace

bool AutoDeviation::Covers(DType dtype) const {
  const bool op =
      ops.empty() || std::find(ops.begin(), ops.end(), family::Op::kMatMul) != ops.end();
  return op && (dtypes.empty() || std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end());
}

bool AutoDeviation::Covers(const family::OpDesc& desc) const {
  if (!ops.empty() && std::find(ops.begin(), ops.end(), desc.op) == ops.end()) return false;
  if (dtypes.empty()) return true;
  std::vector<DType> types = {desc.a_dtype, desc.b_dtype};
  // MatMulInteger's Y is always int32, which no case name of it says.
  if (desc.op != family::Op::kMatMulInteger) types.push_back(desc.y_dtype);
  if (desc.op == family::Op::kQLinearMatMul) types.push_back(desc.scale_dtype);
  for (DType dtype : types) {
    if (std::find(dtypes.begin(), dtypes.end(), dtype) != dtypes.end()) return true;
  }
  return false;
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
      candidate.deviations.push_back(d);
      backend->left_out_.push_back(name + " for " + DeviationScope(d) + ": " + d.declared);
    }
    backend->candidates_.push_back(std::move(candidate));
  }
  MM_ASSIGN_OR_RETURN(auto_first_use::LoadedTable loaded,
                      auto_first_use::LoadTable(options, CurrentAutoIdentity(candidates)));
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
  for (const AutoDeviation& d : candidate.deviations) {
    if (d.Covers(desc.dtype)) return false;
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
    loosest = loosest ? auto_table::Loosest(*loosest, a) : a;
  }
  return loosest.value_or(Arithmetic::OwnType(dtype));
}

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
