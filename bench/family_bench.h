// mm-bench's benchmarks of MatMul's family (--op Gemm|MatMulInteger|QLinearMatMul): a backend's
// family computation timed through ComputeOp on planned problems, beside MatMul's benchmarks.
//
//   gemm/<backend>/float/<shape>                 Gemm-13 float, C [N] (a bias), alpha = beta = 1
//   matmulinteger/<backend>/uint8xint8/<shape>   MatMulInteger-10, per-tensor zero points
//   qlinearmatmul/<backend>/uint8xint8/<shape>   QLinearMatMul-10 -> uint8, float scales
//
// A backend that refuses a problem's description (SupportOf) is reported with its reason and never
// timed. The counter GFLOPS is 2 * M * N * K per second for every operator (for the integer ones,
// operations: GOP/s).
#ifndef MM_BENCH_FAMILY_BENCH_H_
#define MM_BENCH_FAMILY_BENCH_H_

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "mm/bench/bench_shapes.h"
#include "mm/engine/backend.h"
#include "mm/engine/registry.h"
#include "mm/engine/status.h"
#include "mm/engine/tensor.h"
#include "mm/family/backend.h"
#include "mm/family/op.h"
#include "mm/family/plan.h"
#include "mm/family/problem.h"

namespace mm::bench {

// The family's operators beyond MatMul, in ONNX's order of mm's docs.
inline const std::vector<family::Op> kFamilyOps = {family::Op::kGemm, family::Op::kMatMulInteger,
                                                   family::Op::kQLinearMatMul};

// One timed problem of the family: the operator with its element types, at one shape.
struct FamilyBenchProblem {
  family::Op op = family::Op::kGemm;
  DType a_dtype = DType::kFloat;
  DType b_dtype = DType::kFloat;
  std::string types;  // The benchmark name's third part: "float", "uint8xint8".
  std::string shape;  // "256x256x256", "tiny_3x4x3".
  std::int64_t m = 0;
  std::int64_t k = 0;
  std::int64_t n = 0;
  // 2 * M * N * K above 2 * 512^3: too slow for the reference backend's loops (as for MatMul).
  bool Large() const;
  // "<op lowercase>/<backend>/<types>/<shape>".
  std::string BenchmarkName(const std::string& backend) const;
};

// The problems of `op` (not MatMul) in `set`. Quick: 256^3 and tiny 3x4x3. Full: 64^3 to 1024^3
// squares and the tiny one, and for the integer operators uint8 x uint8 and int8 x int8 too.
std::vector<FamilyBenchProblem> FamilyBenchProblems(family::Op op, ShapeSet set);

// A problem's tensors (BenchInput's values; fixed scales and zero points) and its plan, which
// points into them.
struct FamilyBenchInputs {
  family::Problem problem;
  std::vector<Tensor> tensors;
  family::Plan plan;
};

// Builds and plans `problem`'s inputs (an error only for a problem mm-bench itself got wrong).
StatusOr<std::unique_ptr<FamilyBenchInputs>> MakeFamilyBenchInputs(
    const FamilyBenchProblem& problem);

// What mm-bench does with one problem on one backend: times it, or reports the refusal.
struct FamilyBenchChoice {
  std::string benchmark;  // Its benchmark name.
  std::string backend;
  FamilyBenchProblem problem;
  family::OpDesc desc;
  Support support;  // SupportOf's answer; kNo: reported with support.note, never timed.
};

// The choices for `backend` (named `name`) over the problems of `ops` in `set`; the reference
// backend skips the Large() ones, as for MatMul.
std::vector<FamilyBenchChoice> ChooseFamilyBenchmarks(Backend& backend, const std::string& name,
                                                      const std::vector<family::Op>& ops,
                                                      ShapeSet set);

// Registers a benchmark for every supported choice of every backend in `names` (created from
// `registry`, which must outlive the benchmarks) and prints each refusal on `err` ("mm-bench:
// eigen refuses MatMulInteger-10 uint8 x int8 -> int32 (not timed): why"). Returns the choices,
// refused ones included.
std::vector<FamilyBenchChoice> RegisterFamilyBenchmarks(const BackendRegistry& registry,
                                                        const std::vector<std::string>& names,
                                                        const std::vector<family::Op>& ops,
                                                        ShapeSet set, std::ostream& err);

// What --mm_describe lists per backend under "operators": for each description the full set times
// for `ops`, {"op", "types", "desc", "level", "note"; when supported "arithmetic" and
// "implementation"}.
nlohmann::json DescribeFamilySupport(Backend& backend, const std::vector<family::Op>& ops);

}  // namespace mm::bench

#endif  // MM_BENCH_FAMILY_BENCH_H_
