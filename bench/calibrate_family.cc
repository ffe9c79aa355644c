// The family's part of a calibration: the problems of MatMul's family auto chooses for (Gemm,
// MatMulInteger, QLinearMatMul in the forms models use most), each candidate that takes one timed
// through ComputeOp as auto runs it, and ranked as MatMul's cells are.
#include <cstdint>
#include <memory>
#include <utility>

#include "calibrate_cell.h"
#include "mm/bench/calibrate.h"
#include "mm/family/backend.h"
#include "mm/family/plan.h"

namespace mm::bench::internal {
namespace {

using family::Op;
using family::OpDesc;

// A tensor of `dtype` and `dims` of values a kernel cannot skip (no zeros pattern, no constant):
// a splitmix64 mix of `seed` and the index, reduced to the type's range (floats: small integers,
// exact in every type).
Tensor Filled(DType dtype, const Dims& dims, std::uint64_t seed) {
  Tensor t = Tensor::Create(dtype, dims).value();
  VisitElementType(dtype, [&](auto tag) {
    using T = CppType<decltype(tag)::value>;
    T* data = t.template Data<T>();
    for (std::int64_t i = 0; i < t.NumElements(); ++i) {
      std::uint64_t z = seed * 0x9e3779b97f4a7c15ull + static_cast<std::uint64_t>(i);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      z ^= z >> 31;
      const int v = dtype == DType::kUInt8  ? static_cast<int>(z % 256)
                    : dtype == DType::kInt8 ? static_cast<int>(z % 256) - 128
                                            : static_cast<int>(z % 7) - 3;
      data[i] = RoundFromDouble<T>(v);
    }
  });
  return t;
}

Tensor FloatScalar(float value) {
  Tensor t = Tensor::Create(DType::kFloat, {}).value();
  t.Data<float>()[0] = value;
  return t;
}

// A problem of `desc` with the product [m, k] x [k, n], its tensors owned with it.
struct FamilyBenchProblem {
  std::vector<Tensor> tensors;
  family::Problem problem;

  void Add(std::string name, Tensor t) {
    tensors.push_back(std::move(t));
    problem.inputs.push_back({std::move(name), tensors.back().view()});
  }
};

std::shared_ptr<FamilyBenchProblem> MakeProblem(const OpDesc& desc, const BenchShape& shape) {
  auto p = std::make_shared<FamilyBenchProblem>();
  p->tensors.reserve(8);  // Views point into the tensors: no reallocation.
  p->problem.op = desc.op;
  p->problem.version = desc.version;
  const Dims& a = shape.a_dims;
  const Dims& b = shape.b_dims;
  switch (desc.op) {
    case Op::kGemm:
      // A fully connected layer: Y = A B + C with a bias per column.
      p->Add("A", Filled(desc.a_dtype, a, 1));
      p->Add("B", Filled(desc.b_dtype, b, 2));
      p->Add("C", Filled(desc.y_dtype, {b.back()}, 3));
      break;
    case Op::kMatMulInteger:
      // Zero points per tensor, as a quantized model's activations and weights have them.
      p->Add("A", Filled(desc.a_dtype, a, 1));
      p->Add("B", Filled(desc.b_dtype, b, 2));
      p->Add("a_zero_point", Filled(desc.a_dtype, {}, 3));
      p->Add("b_zero_point", Filled(desc.b_dtype, {}, 4));
      break;
    default:
      p->Add("a", Filled(desc.a_dtype, a, 1));
      p->Add("a_scale", FloatScalar(0.0625f));
      p->Add("a_zero_point", Filled(desc.a_dtype, {}, 3));
      p->Add("b", Filled(desc.b_dtype, b, 2));
      p->Add("b_scale", FloatScalar(0.125f));
      p->Add("b_zero_point", Filled(desc.b_dtype, {}, 4));
      p->Add("y_scale", FloatScalar(16.0f));
      p->Add("y_zero_point", Filled(desc.y_dtype, {}, 5));
      break;
  }
  return p;
}

}  // namespace

}  // namespace mm::bench::internal

namespace mm::bench {

std::vector<family::OpDesc> CalibratedFamilyDescs() {
  using family::Op;
  return {{Op::kGemm, 13, DType::kFloat, DType::kFloat, DType::kFloat},
          {Op::kMatMulInteger, 10, DType::kUInt8, DType::kInt8, DType::kInt32},
          {Op::kMatMulInteger, 10, DType::kUInt8, DType::kUInt8, DType::kInt32},
          {Op::kQLinearMatMul, 10, DType::kUInt8, DType::kInt8, DType::kUInt8}};
}

}  // namespace mm::bench

namespace mm::bench::internal {

AutoCell MeasureFamilyCell(const Candidates& candidates, const OpDesc& desc,
                           const BenchShape& shape, int threads) {
  AutoCell cell;
  cell.op = desc;
  cell.threads = threads;
  cell.a_dims = shape.a_dims;
  cell.b_dims = shape.b_dims;
  const std::shared_ptr<FamilyBenchProblem> problem = MakeProblem(desc, shape);
  StatusOr<family::Plan> planned = family::PlanProblem(problem->problem);
  if (!planned.ok()) return cell;  // Not a problem of the family: no cell.
  auto plan = std::make_shared<const family::Plan>(std::move(planned).value());
  std::vector<TimedCandidate> timed;
  for (const auto& [name, backend] : candidates) {
    if (name == "reference" && shape.Large()) continue;
    if (!family::SupportOf(*backend, desc).supported()) continue;
    Backend* runs = backend.get();
    timed.push_back({name, [runs, plan, problem] { (void)family::ComputeOp(*runs, *plan); }, 0});
  }
  const double flops = 2.0 * static_cast<double>(plan->product.m) *
                       static_cast<double>(plan->product.k) * static_cast<double>(plan->product.n);
  return RankCandidates(
      std::move(cell), std::move(timed),
      DefaultAutoFamilyRanking(desc, threads, flops, AutoDefaultsBasis::OfThisMachine()));
}

}  // namespace mm::bench::internal
