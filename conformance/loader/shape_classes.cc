#include "mm/conformance/loader/shape_classes.h"

#include <span>

#include "mm/engine/matmul_plan.h"
#include "mm/oracle/error_bound.h"

namespace mm::conformance {
namespace {

ShapeClass Class(std::string name, std::string description, std::vector<ShapePair> problems) {
  return {std::move(name), std::move(description), std::move(problems)};
}

// M = 2, K = 3, N = 2 unless the class is about one of them; batch dims of 1, 2 and 3 so that a
// batch read at the wrong offset reads other values.
std::vector<ShapeClass> MakeClasses() {
  return {
      Class("1d_1d", "1-D x 1-D: a dot product, rank-0 Y", {{{3}, {3}}}),
      Class("1d_2d", "1-D x 2-D: A promoted to [1,K]", {{{3}, {3, 2}}}),
      Class("1d_nd", "1-D x N-D: A promoted, B batched", {{{3}, {2, 3, 2}}}),
      Class("2d_1d", "2-D x 1-D: B promoted to [K,1]", {{{2, 3}, {3}}}),
      Class("nd_1d", "N-D x 1-D: A batched, B promoted", {{{2, 2, 3}, {3}}}),
      Class("2d", "2-D x 2-D, M != N", {{{2, 3}, {3, 4}}}),
      Class("k1", "K = 1: an outer product", {{{2, 1}, {1, 3}}}),
      Class("batch_equal", "batched, equal batch dims", {{{2, 2, 3}, {2, 3, 2}}}),
      Class("batch_broadcast_a", "batch dim 1 of A broadcast", {{{1, 2, 3}, {2, 3, 2}}}),
      Class("batch_broadcast_b", "batch dim 1 of B broadcast", {{{2, 2, 3}, {1, 3, 2}}}),
      Class("batch_broadcast_both", "batch dims broadcast from both sides",
            {{{2, 1, 2, 3}, {1, 3, 3, 2}}}),
      Class("nd_2d", "N-D x 2-D: B shared by every batch", {{{2, 2, 3}, {3, 2}}}),
      Class("2d_nd", "2-D x N-D: A shared by every batch", {{{2, 3}, {2, 3, 2}}}),
      Class("rank_mismatch_a", "A of higher rank: missing batch dims of B",
            {{{2, 3, 2, 3}, {3, 3, 2}}}),
      Class("rank_mismatch_b", "B of higher rank: missing batch dims of A",
            {{{3, 2, 3}, {2, 3, 3, 2}}}),
      Class("rank13", "rank 13 x rank 12, broadcast both ways",
            {{{2, 1, 1, 2, 1, 1, 1, 1, 1, 1, 2, 2, 3}, {2, 1, 1, 1, 1, 1, 1, 1, 2, 1, 3, 2}}}),
      Class("k0_1d_1d", "K = 0, 1-D x 1-D: Y = 0", {{{0}, {0}}}),
      Class("k0_1d_2d", "K = 0, 1-D x 2-D: Y zeros", {{{0}, {0, 2}}}),
      Class("k0_2d_1d", "K = 0, 2-D x 1-D: Y zeros", {{{2, 0}, {0}}}),
      Class("k0_2d", "K = 0, 2-D: Y zeros", {{{2, 0}, {0, 3}}}),
      Class("k0_batch", "K = 0, batched, broadcast both ways", {{{2, 1, 2, 0}, {3, 0, 2}}}),
      Class("m0_2d", "M = 0, 2-D: empty Y", {{{0, 3}, {3, 2}}}),
      Class("m0_2d_1d", "M = 0, 2-D x 1-D: empty Y", {{{0, 3}, {3}}}),
      Class("m0_batch", "M = 0, batched", {{{2, 0, 3}, {2, 3, 2}}}),
      Class("m0_k0", "M = 0 and K = 0", {{{0, 0}, {0, 2}}}),
      Class("n0_2d", "N = 0, 2-D: empty Y", {{{2, 3}, {3, 0}}}),
      Class("n0_1d_2d", "N = 0, 1-D x 2-D: empty Y", {{{3}, {3, 0}}}),
      Class("n0_batch", "N = 0, batched", {{{2, 2, 3}, {2, 3, 0}}}),
      Class("batch0_vs_1", "batch dim 0 of A against 1", {{{0, 2, 3}, {1, 3, 2}}}),
      Class("batch1_vs_0", "batch dim 1 of A against 0", {{{1, 2, 3}, {0, 3, 2}}}),
      Class("batch0_vs_0", "batch dim 0 against 0", {{{0, 2, 3}, {0, 3, 2}}}),
      Class("batch0_vs_none", "batch dim 0 of A, B 2-D", {{{0, 2, 3}, {3, 2}}}),
      Class("batch0_1d", "1-D A, batch dim 0 of B", {{{3}, {0, 3, 2}}}),
      Class("batch0_k0", "batch dim 0 and K = 0", {{{0, 2, 0}, {1, 0, 2}}}),
      Class("seq_empty_after_nonempty", "symbolic dims: M = 0, then N = 0, after a non-empty Y",
            {{{2, 3}, {3, 2}}, {{0, 3}, {3, 2}}, {{2, 3}, {3, 0}}}),
      Class("seq_k0_after_nonempty", "symbolic dims: K = 0 after K = 3",
            {{{2, 3}, {3, 2}}, {{2, 0}, {0, 2}}}),
      Class("seq_k0_1d_after_nonempty", "symbolic dims, 1-D A: K = 0 after K = 3",
            {{{3}, {3, 2}}, {{0}, {0, 2}}}),
      Class("seq_batch0_after_nonempty", "symbolic dims: batch dim 0 against 1 after 2 against 1",
            {{{2, 2, 3}, {1, 3, 2}}, {{0, 2, 3}, {1, 3, 2}}}),
  };
}

DeclaredTensor Declare(const char* name, DType dtype, const Dims& dims, bool symbolic) {
  DeclaredTensor d{name, dtype, true, {}};
  for (std::int64_t dim : dims) {
    d.dims.push_back(symbolic ? std::nullopt : std::optional<std::int64_t>(dim));
  }
  return d;
}

// Element `i` of A or B: small integers of both signs (0 to 10 for the unsigned dtypes), where
// neighbours and batch entries differ (strides 7 and 5, coprime to the period 11); A's odd
// elements are off by one half in the float dtypes. With K <= 3 every product and sum is exact in
// bfloat16 (at most 8 significant bits), so Y is exact in every dtype.
template <class T>
std::vector<T> Values(std::int64_t count, bool is_a) {
  std::vector<T> out(static_cast<std::size_t>(count));
  const int shift = DTypeOf<T>() == DType::kUInt32 || DTypeOf<T>() == DType::kUInt64 ? 0 : -5;
  for (std::int64_t i = 0; i < count; ++i) {
    double v = static_cast<double>((is_a ? 7 * i + 3 : 5 * i + 8) % 11 + shift);
    if (IsFloat(DTypeOf<T>()) && is_a && i % 2 == 1) v += 0.5;
    out[static_cast<std::size_t>(i)] = RoundFromDouble<T>(v);
  }
  return out;
}

template <class T>
StatusOr<DataSet> MakeDataSet(const ShapePair& problem, std::size_t index) {
  const DType dtype = DTypeOf<T>();
  MM_ASSIGN_OR_RETURN(const MatMulPlan plan, PlanMatMul({dtype, problem.a, problem.b}));
  const std::vector<T> a_values = Values<T>(plan.a_elements, true);
  const std::vector<T> b_values = Values<T>(plan.b_elements, false);
  MM_ASSIGN_OR_RETURN(Tensor a, Tensor::FromValues<T>(problem.a, std::span<const T>(a_values)));
  MM_ASSIGN_OR_RETURN(Tensor b, Tensor::FromValues<T>(problem.b, std::span<const T>(b_values)));
  MM_ASSIGN_OR_RETURN(OracleResult oracle, ExactMatMul(plan, a.view(), b.view()));
  return DataSet{ShapeDataSetName(index), std::move(a), std::move(b), std::move(oracle.y)};
}

}  // namespace

const std::vector<ShapeClass>& ShapeClasses() {
  static const std::vector<ShapeClass> classes = MakeClasses();
  return classes;
}

std::string ShapeCaseName(const ShapeClass& shape_class, DType dtype) {
  return std::string(kShapeCasePrefix) + shape_class.name + "_" + std::string(DTypeName(dtype));
}

std::vector<ShapeCase> ShapeCases() {
  std::vector<ShapeCase> cases;
  for (const ShapeClass& shape_class : ShapeClasses()) {
    for (DType dtype : kAllDTypes) {
      cases.push_back({ShapeCaseName(shape_class, dtype), &shape_class, dtype});
    }
  }
  return cases;
}

std::optional<ShapeCase> FindShapeCase(std::string_view name) {
  if (!name.starts_with(kShapeCasePrefix)) return std::nullopt;
  for (const ShapeClass& shape_class : ShapeClasses()) {
    for (DType dtype : kAllDTypes) {
      if (name == ShapeCaseName(shape_class, dtype)) {
        return ShapeCase{std::string(name), &shape_class, dtype};
      }
    }
  }
  return std::nullopt;
}

MatMulModel ShapeCaseModel(const ShapeCase& shape_case) {
  const ShapeClass& c = *shape_case.shape_class;
  const ShapePair& first = c.problems.front();
  const Dims y_dims = PlanMatMul({shape_case.dtype, first.a, first.b}).value().y_dims;
  MatMulModel model;
  model.opset = 13;
  model.matmul_version = 13;
  model.allowed_dtypes = {shape_case.dtype};
  model.a = Declare("a", shape_case.dtype, first.a, c.sequence());
  model.b = Declare("b", shape_case.dtype, first.b, c.sequence());
  model.y = Declare("y", shape_case.dtype, y_dims, c.sequence());
  return model;
}

std::string ShapeDataSetName(std::size_t index) { return "test_data_set_" + std::to_string(index); }

StatusOr<DataSet> ShapeCaseDataSet(const ShapeCase& shape_case, std::size_t index) {
  const std::vector<ShapePair>& problems = shape_case.shape_class->problems;
  if (index >= problems.size()) {
    return OutOfRangeError(shape_case.name + ": no data set " + std::to_string(index));
  }
  return VisitDType(shape_case.dtype, [&](auto tag) {
    return MakeDataSet<CppType<decltype(tag)::value>>(problems[index], index);
  });
}

}  // namespace mm::conformance
