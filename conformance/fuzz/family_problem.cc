#include "mm/conformance/fuzz/family_problem.h"

#include <algorithm>
#include <cstring>

#include "family_values.h"
#include "mm/conformance/fuzz/shrink.h"
#include "problem_values.h"

namespace mm::fuzz {

using family::Attribute;
using family::Op;

family::Problem FamilyProblem::View() const {
  family::Problem p;
  p.op = op;
  p.version = version;
  for (const auto& [name, tensor] : inputs) p.inputs.push_back({name, tensor.view()});
  p.attributes = attributes;
  return p;
}

const Tensor* FamilyProblem::Find(std::string_view name) const {
  for (const auto& [input, tensor] : inputs) {
    if (input == name) return &tensor;
  }
  return nullptr;
}

Tensor* FamilyProblem::Find(std::string_view name) {
  return const_cast<Tensor*>(static_cast<const FamilyProblem&>(*this).Find(name));
}

DType FamilyProblem::dtype() const {
  const Tensor* a = Find(op == Op::kQLinearMatMul ? "a" : "A");
  return a != nullptr ? a->dtype() : DType::kFloat;
}

std::string FamilyProblem::Types() const {
  std::vector<const char*> names = {"A"};
  if (op == Op::kMatMulInteger) names = {"A", "B"};
  if (op == Op::kQLinearMatMul) names = {"a", "b", "y_zero_point", "a_scale"};
  std::string types;
  for (const char* name : names) {
    const Tensor* t = Find(name);
    types += (types.empty() ? "" : "/") + std::string(t != nullptr ? DTypeName(t->dtype()) : "?");
  }
  return types;
}

std::string FamilyProblem::Signature() const {
  return std::string(family::OpName(op)) + "-" + std::to_string(version) + " " + Types();
}

std::vector<std::string> FamilySignatures(Op op, const std::vector<DType>& dtypes) {
  std::vector<std::string> out;
  const std::string name(family::OpName(op));
  if (op == Op::kGemm) {
    const std::vector<DType> all(kAllDTypes.begin(), kAllDTypes.end());
    for (DType dtype : dtypes.empty() ? all : dtypes) {
      for (int version : GemmVersionsFor(dtype)) {
        out.push_back(name + "-" + std::to_string(version) + " " + std::string(DTypeName(dtype)));
      }
    }
    return out;
  }
  const std::vector<std::string> int8 = {"uint8", "int8"};
  for (const std::string& a : int8) {
    for (const std::string& b : int8) {
      if (op == Op::kMatMulInteger) out.push_back(name + "-10 " + a + "/" + b);
      if (op != Op::kQLinearMatMul) continue;
      for (const std::string& y : int8) {
        out.push_back(name + "-10 " + a + "/" + b + "/" + y + "/float");
        for (const char* scale : {"float", "float16", "bfloat16"}) {
          out.push_back(name + "-21 " + a + "/" + b + "/" + y + "/" + scale);
        }
      }
    }
  }
  return out;
}

FamilyProblem FamilyProblem::Clone() const {
  FamilyProblem copy;
  copy.seed = seed;
  copy.index = index;
  copy.op = op;
  copy.version = version;
  copy.form = form;
  copy.values = values;
  for (const auto& [name, tensor] : inputs) copy.inputs.emplace_back(name, fuzz::Clone(tensor));
  copy.attributes = attributes;
  return copy;
}

bool IsFamilyOp(Op op) { return op != Op::kMatMul; }

// m, n and k halved (the largest first) until A, B and Y fit max_elements and the products
// max_products, with `batch` matrices.
void FitSizes(std::int64_t batch, const GeneratorOptions& o, std::int64_t& m, std::int64_t& n,
              std::int64_t& k) {
  auto fits = [&] {
    const std::int64_t b = std::max<std::int64_t>(batch, 1);
    return b * m * k <= o.max_elements && b * k * n <= o.max_elements &&
           b * m * n <= o.max_elements && b * m * n * k <= o.max_products;
  };
  while (!fits()) {
    std::int64_t& largest = m >= n && m >= k ? m : n >= k ? n : k;
    largest /= 2;
  }
}

namespace {

// The numpy.matmul shapes of the integer operators.
struct IntegerShape {
  std::string form;
  Dims a, b;
  std::int64_t m = 1, n = 1, k = 1;
};

IntegerShape DrawIntegerShape(Rng& rng, const GeneratorOptions& options) {
  static const std::vector<std::string> kForms = {"2-D",         "batched",   "broadcast A",
                                                  "broadcast B", "1-D x 2-D", "2-D x 1-D",
                                                  "1-D x 1-D",   "N-D x 1-D", "large K"};
  IntegerShape s;
  s.form = rng.Pick(kForms);
  if (s.form == "large K") {  // Past 2^15, and the first K whose exact sum leaves int32.
    static const std::vector<std::int64_t> kLargeK = {32767, 32768, 32769, 33025,
                                                      33026, 65793, 65794, 65795};
    s.k = rng.Pick(kLargeK);
    s.m = rng.Between(1, 2);
    s.n = rng.Between(1, 2);
    s.a = {s.m, s.k};
    s.b = {s.k, s.n};
    return s;
  }
  Dims batch = {rng.Between(1, 3)};
  if (rng.Chance(0.3)) batch.push_back(rng.Between(1, 3));
  s.m = Size(rng);
  s.n = Size(rng);
  s.k = Size(rng);
  FitSizes(Product(batch), options, s.m, s.n, s.k);
  auto with = [](Dims dims, std::int64_t x, std::int64_t y) {
    dims.push_back(x);
    dims.push_back(y);
    return dims;
  };
  const Dims a2 = {s.m, s.k}, b2 = {s.k, s.n}, vector = {s.k};
  Dims b_batch = batch;
  if (s.form == "batched" && rng.Chance(0.3)) b_batch.back() = 1;  // Broadcast inside the batch.
  if (s.form == "2-D") s.a = a2, s.b = b2;
  if (s.form == "batched") s.a = with(batch, s.m, s.k), s.b = with(b_batch, s.k, s.n);
  if (s.form == "broadcast A") s.a = a2, s.b = with(batch, s.k, s.n);
  if (s.form == "broadcast B") s.a = with(batch, s.m, s.k), s.b = b2;
  if (s.form == "1-D x 2-D") s.a = vector, s.b = b2, s.m = 1;
  if (s.form == "2-D x 1-D") s.a = a2, s.b = vector, s.n = 1;
  if (s.form == "1-D x 1-D") s.a = vector, s.b = vector, s.m = 1, s.n = 1;
  if (s.form == "N-D x 1-D") s.a = with(batch, s.m, s.k), s.b = vector, s.n = 1;
  return s;
}

DType Int8Or(Rng& rng) { return rng.Chance(0.5) ? DType::kUInt8 : DType::kInt8; }

// The dims of A's zero point or scale (per row when `per_operand`) or B's (per column): per
// tensor [] or [1]; per row [M] or [M, 1] (2-D A), [D..., M, 1] (N-D A); per column [N] or [1, N]
// (2-D B), [D..., 1, N] (N-D B).
Dims QuantDims(Rng& rng, const Dims& operand, bool is_a, bool per_operand) {
  if (!per_operand || operand.size() < 2) return rng.Chance(0.5) ? Dims{} : Dims{1};
  const std::int64_t extent = is_a ? operand[operand.size() - 2] : operand.back();
  if (operand.size() == 2 && rng.Chance(0.5)) return {extent};
  Dims dims(operand.begin(), operand.end() - 2);
  dims.push_back(is_a ? extent : 1);
  dims.push_back(is_a ? 1 : extent);
  return dims;
}

Tensor NewTensor(DType dtype, Dims dims) { return Tensor::Create(dtype, std::move(dims)).value(); }

// The operand value family of an integer problem, and its types (uint8 x int8 mostly, where the
// vpmaddubsw pair lives, for the families aimed at it).
std::string OperandFamily(Rng& rng, const IntegerShape& s, DType& at, DType& bt) {
  static const std::vector<std::string> kFamilies = {"uniform", "small-int", "extremes",
                                                     "saturating pairs"};
  static const std::vector<std::string> kLargeK = {"outside int32", "saturating pairs", "uniform"};
  std::string family = rng.Pick(s.form == "large K" ? kLargeK : kFamilies);
  at = Int8Or(rng);
  bt = Int8Or(rng);
  if (family == "outside int32" || (family == "saturating pairs" && rng.Chance(0.75))) {
    at = DType::kUInt8;
    bt = DType::kInt8;
  }
  return family;
}

void DrawMatMulInteger(Rng& rng, const GeneratorOptions& options, FamilyProblem& p) {
  const IntegerShape s = DrawIntegerShape(rng, options);
  p.version = 10;
  p.form = s.form;
  DType at, bt;
  const std::string family = OperandFamily(rng, s, at, bt);
  Tensor a = NewTensor(at, s.a), b = NewTensor(bt, s.b);
  FillIntegerOperands(rng, family, s.k, s.b.size() == 1 ? 1 : s.n, a, b);
  p.inputs.emplace_back("A", std::move(a));
  p.inputs.emplace_back("B", std::move(b));
  static const std::vector<std::string> kZeroPoints = {"0", "mid", "ends", "random"};
  const std::string zp_family = family == "outside int32" ? family : rng.Pick(kZeroPoints);
  p.values = family + ", zero points " + zp_family;
  for (const bool is_a : {true, false}) {
    const double form = rng.Unit();  // Absent, per tensor, per row or column.
    if (form < 0.25 && zp_family != "outside int32") continue;
    const Dims& operand = is_a ? s.a : s.b;
    Tensor zp = NewTensor(is_a ? at : bt, QuantDims(rng, operand, is_a, form >= 0.6));
    FillZeroPoint(rng, is_a && family == "outside int32" ? "0" : zp_family, zp);
    p.inputs.emplace_back(is_a ? "a_zero_point" : "b_zero_point", std::move(zp));
  }
}

void DrawQLinearMatMul(Rng& rng, const GeneratorOptions& options, FamilyProblem& p) {
  const IntegerShape s = DrawIntegerShape(rng, options);
  p.version = rng.Chance(0.5) ? 10 : 21;
  p.form = s.form;
  static const std::vector<std::string> kScales = {"typical", "ties", "saturation", "extreme"};
  const std::string scales = rng.Pick(kScales);
  DType at, bt;
  std::string family = OperandFamily(rng, s, at, bt);
  if (scales == "ties") family = "small-int";  // Accumulations near 0: many halves in range.
  static const std::vector<DType> kScaleTypes = {DType::kFloat, DType::kFloat16, DType::kBFloat16};
  const DType ts = p.version == 10 ? DType::kFloat : rng.Pick(kScaleTypes);
  const DType yt = Int8Or(rng);
  Tensor a = NewTensor(at, s.a), b = NewTensor(bt, s.b);
  FillIntegerOperands(rng, family, s.k, s.b.size() == 1 ? 1 : s.n, a, b);
  const Dims a_q = QuantDims(rng, s.a, true, rng.Chance(0.4));
  const Dims b_q = QuantDims(rng, s.b, false, rng.Chance(0.4));
  const Dims y_q = rng.Chance(0.5) ? Dims{} : Dims{1};
  Tensor a_scale = NewTensor(ts, a_q), b_scale = NewTensor(ts, b_q), y_scale = NewTensor(ts, y_q);
  FillScales(rng, scales, a_scale, b_scale, y_scale);
  static const std::vector<std::string> kZeroPoints = {"0", "mid", "ends", "random"};
  const std::string zp_family = rng.Pick(kZeroPoints);
  Tensor a_zp = NewTensor(at, a_q), b_zp = NewTensor(bt, b_q), y_zp = NewTensor(yt, y_q);
  for (Tensor* zp : {&a_zp, &b_zp, &y_zp}) FillZeroPoint(rng, zp_family, *zp);
  p.values = family + ", scales " + scales + ", zero points " + zp_family;
  p.inputs.emplace_back("a", std::move(a));
  p.inputs.emplace_back("a_scale", std::move(a_scale));
  p.inputs.emplace_back("a_zero_point", std::move(a_zp));
  p.inputs.emplace_back("b", std::move(b));
  p.inputs.emplace_back("b_scale", std::move(b_scale));
  p.inputs.emplace_back("b_zero_point", std::move(b_zp));
  p.inputs.emplace_back("y_scale", std::move(y_scale));
  p.inputs.emplace_back("y_zero_point", std::move(y_zp));
}

}  // namespace

FamilyProblem GenerateFamilyProblem(std::uint64_t seed, std::int64_t index, Op op,
                                    const GeneratorOptions& options) {
  FamilyProblem p;
  p.seed = seed;
  p.index = index;
  p.op = op;
  const auto u_index = static_cast<std::uint64_t>(index);
  // Salts apart from MatMul's (1 picks the dtype, 2 + dtype starts its stream).
  const std::uint64_t op_salt = 100 * (1 + static_cast<std::uint64_t>(op));
  if (op == Op::kGemm) {
    const std::vector<DType> all(kAllDTypes.begin(), kAllDTypes.end());
    const std::vector<DType>& dtypes = options.dtypes.empty() ? all : options.dtypes;
    const DType dtype = dtypes[Mix(seed, u_index, 1) % dtypes.size()];
    Rng rng(Mix(seed, u_index, op_salt + static_cast<std::uint64_t>(dtype)));
    DrawGemm(rng, dtype, options, p);
  } else {
    Rng rng(Mix(seed, u_index, op_salt));
    if (op == Op::kMatMulInteger) DrawMatMulInteger(rng, options, p);
    if (op == Op::kQLinearMatMul) DrawQLinearMatMul(rng, options, p);
  }
  return p;
}

}  // namespace mm::fuzz
