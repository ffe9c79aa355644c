// The auto backend's policy for MatMul's family (Gemm, MatMulInteger, QLinearMatMul): the
// candidates a description may go to, the choice per problem (the table's nearest cell of the same
// operator and types, else the built-in defaults) and the computation by the chosen candidate.
#include <omp.h>

#include <algorithm>
#include <optional>
#include <set>

#include "auto_table.h"
#include "mm/backends/auto/auto_backend.h"

namespace mm {
namespace {

using auto_table::DimsText;
using auto_table::Entry;
using auto_table::NearestCell;
using auto_table::ParseEntry;
using auto_table::ScopedOmpThreads;

// The product's extents (batch, M, K, N) of a plan.
std::array<double, 4> ExtentsOf(const family::Plan& plan) {
  const MatMulPlan& p = plan.product;
  return {static_cast<double>(p.batch), static_cast<double>(p.m), static_cast<double>(p.k),
          static_cast<double>(p.n)};
}

}  // namespace

std::vector<std::string> DefaultAutoFamilyRanking(const family::OpDesc& desc, int threads,
                                                  double flops, const AutoDefaultsBasis& basis) {
  // Gemm is MatMul with a scaling and a bias: the backends that win MatMul's cells of Y's type.
  // The integer operators: oneDNN's int8 matmul (VNNI where the CPU has it), then eigen's exact
  // int32 loops.
  if (desc.op == family::Op::kGemm) return DefaultAutoRanking(desc.y_dtype, threads, flops, basis);
  return {"onednn", "eigen"};
}

std::string AutoBackend::Ineligible(const Candidate& candidate, const family::OpDesc& desc) const {
  for (const AutoDeviation& d : candidate.deviations) {
    if (d.Covers(desc)) return d.declared;
  }
  const Support support = family::SupportOf(*candidate.backend, desc);
  return support.supported() ? std::string() : support.note;
}

StatusOr<AutoBackend::Choice> AutoBackend::ChooseOp(const family::OpDesc& desc,
                                                    const std::array<double, 4>& extents,
                                                    int threads) const {
  auto eligible = [&](std::string_view name) {
    const Candidate* c = Find(name);
    return c != nullptr && Ineligible(*c, desc).empty();
  };
  if (table_) {
    if (const AutoCell* cell = NearestCell(*table_, desc, extents, threads)) {
      for (const std::string& text : cell->ranking) {
        const std::optional<Entry> entry = ParseEntry(text);
        if (!entry || !eligible(entry->name)) continue;
        const int fewer = entry->threads > 0 && entry->threads < threads ? entry->threads : 0;
        return Choice{entry->name,
                      "table cell " + cell->op->ToString() + " " + std::to_string(cell->threads) +
                          " threads " + DimsText(cell->a_dims) + " x " + DimsText(cell->b_dims),
                      fewer};
      }
    }
  }
  const double flops = 2 * extents[0] * extents[1] * extents[2] * extents[3];
  for (const std::string& name : DefaultAutoFamilyRanking(desc, threads, flops, defaults_basis_)) {
    if (eligible(name)) return Choice{name, "built-in defaults"};
  }
  // Registry order, the reference last: it is there for correctness, not speed.
  for (bool reference : {false, true}) {
    for (const Candidate& c : candidates_) {
      if ((c.name == "reference") == reference && eligible(c.name)) {
        return Choice{c.name, "first candidate"};
      }
    }
  }
  std::string reasons;
  for (const Candidate& c : candidates_) {
    reasons += (reasons.empty() ? "" : "; ") + c.name + ": " + Ineligible(c, desc);
  }
  return UnimplementedError("auto: no candidate computes " + desc.ToString() + " (" +
                            (reasons.empty() ? "no candidates" : reasons) + ")");
}

Support AutoBackend::SupportsOp(const family::OpDesc& desc) const {
  if (desc.op == family::Op::kMatMul) return Support::No("MatMul is auto's own Supports");
  // Any eligible candidate may be chosen for some shape: native only when each of them is.
  std::string conversions;
  bool any = false;
  for (const Candidate& c : candidates_) {
    if (!Ineligible(c, desc).empty()) continue;
    any = true;
    const Support support = family::SupportOf(*c.backend, desc);
    if (support.level != Support::Level::kNative) {
      conversions += (conversions.empty() ? "" : "; ") + c.name + ": " + support.note;
    }
  }
  if (!any) {
    const StatusOr<Choice> none = ChooseOp(desc, {1, 1, 1, 1}, omp_get_max_threads());
    return Support::No(std::string(none.status().message()));
  }
  return conversions.empty() ? Support::Native() : Support::ByConversion(conversions);
}

Arithmetic AutoBackend::DeclaredArithmetic(const family::OpDesc& desc) const {
  // The loosest of the eligible candidates' (as for MatMul): any of them may be chosen.
  std::optional<Arithmetic> loosest;
  for (const Candidate& c : candidates_) {
    if (!Ineligible(c, desc).empty()) continue;
    const Arithmetic a = c.backend->family()->DeclaredArithmetic(desc);
    loosest = loosest ? auto_table::Loosest(*loosest, a) : a;
  }
  return loosest.value_or(Arithmetic::OwnType(desc.y_dtype));
}

Status AutoBackend::Compute(const family::Plan& plan, MutableTensorView y) {
  const family::OpDesc desc = family::DescOf(plan);
  MM_ASSIGN_OR_RETURN(const Choice choice, ChooseOp(desc, ExtentsOf(plan), omp_get_max_threads()));
  const Candidate* c = Find(choice.backend);
  const ScopedOmpThreads scoped(choice.threads);
  const Status status = c->backend->family()->Compute(plan, y);
  if (status.ok()) return status;
  return Status(status.code(), "auto -> " + c->name + ": " + std::string(status.message()));
}

std::string AutoBackend::Implementation(const family::OpDesc& desc) const {
  // The choice may differ by shape: every backend the table's cells of desc (at this thread
  // count's nearest) choose, else the defaults' for a problem of any size.
  const int threads = omp_get_max_threads();
  std::vector<std::array<double, 4>> shapes;
  if (table_) {
    for (const AutoCell& cell : table_->cells) {
      if (cell.op && cell.op->op == desc.op) {
        shapes.push_back(auto_table::Extents(DType::kFloat, cell.a_dims, cell.b_dims));
      }
    }
  }
  if (shapes.empty()) shapes.push_back({1, 256, 256, 256});
  std::vector<std::string> chosen;
  std::set<std::string> sources;
  for (const auto& extents : shapes) {
    const StatusOr<Choice> choice = ChooseOp(desc, extents, threads);
    if (!choice.ok()) return std::string(choice.status().message());
    if (std::find(chosen.begin(), chosen.end(), choice->backend) == chosen.end()) {
      chosen.push_back(choice->backend);
    }
    sources.insert(choice->source.starts_with("table") ? "calibration table" : choice->source);
  }
  std::string text = "auto -> ";
  for (std::size_t i = 0; i < chosen.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == chosen.size() ? " or " : ", ") + chosen[i];
  }
  if (chosen.size() > 1) text += " by shape";
  std::string from;
  for (const std::string& s : sources) from += (from.empty() ? "" : ", ") + s;
  text += " (" + from + ")";
  for (const std::string& name : chosen) {
    const std::string inner = Find(name)->backend->family()->Implementation(desc);
    if (!inner.empty()) text += (chosen.size() > 1 ? "; " + name + ": " : ": ") + inner;
  }
  return text;
}

}  // namespace mm
