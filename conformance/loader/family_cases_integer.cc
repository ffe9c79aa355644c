// The family catalogue's MatMulInteger and QLinearMatMul cases (family_cases.h).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <optional>
#include <set>
#include <utility>

#include "family_cases_internal.h"
#include "mm/conformance/loader/shape_classes.h"
#include "mm/family/exact.h"
#include "mm/family/plan.h"

namespace mm::conformance::internal {
namespace {

using family::Op;
using Values = std::function<double(std::int64_t)>;

// How the zero points (and QLinearMatMul's scales, which take their zero point's shape) apply.
enum class ZpForm { kAbsent, kScalar, kOne, kRow, kColumn, kRowColumn };

std::string ZpFormName(ZpForm form) {
  switch (form) {
    case ZpForm::kAbsent:
      return "zp-absent";
    case ZpForm::kScalar:
      return "zp-scalar";
    case ZpForm::kOne:
      return "zp-[1]";
    case ZpForm::kRow:
      return "zp-per-row";
    case ZpForm::kColumn:
      return "zp-per-column";
    case ZpForm::kRowColumn:
      return "zp-per-row,per-column";
  }
  return "?";
}

// The dims of A's (`is_a`) or B's zero point in `form`, or nullopt when the form does not apply
// to the operand's rank (a 1-D operand has no rows or columns). Per tensor otherwise: [] (or [1]
// for kOne). A 2-D operand's per-row zero point is [M] (kRow) or [M, 1] (kRowColumn), its
// per-column one [N] or [1, N]; an N-D operand's has its own dims with K made 1.
std::optional<Dims> ZeroPointDims(ZpForm form, const Dims& x, bool is_a) {
  const bool own = is_a ? (form == ZpForm::kRow || form == ZpForm::kRowColumn)
                        : (form == ZpForm::kColumn || form == ZpForm::kRowColumn);
  if (!own) return form == ZpForm::kOne ? Dims{1} : Dims{};
  if (x.size() < 2) return std::nullopt;
  Dims d = x;
  d[is_a ? d.size() - 1 : d.size() - 2] = 1;
  if (d.size() == 2 && form != ZpForm::kRowColumn) return Dims{is_a ? x[0] : x[1]};
  return d;
}

struct TypePair {
  DType a, b;
};
constexpr TypePair kTypePairs[] = {{DType::kUInt8, DType::kUInt8},
                                   {DType::kUInt8, DType::kInt8},
                                   {DType::kInt8, DType::kUInt8},
                                   {DType::kInt8, DType::kInt8}};

// QLinearMatMul's version and scale type: float at 10 and 21, float16 and bfloat16 at 21.
struct ScaleVariant {
  int version;
  DType scale;
};
constexpr ScaleVariant kScaleVariants[] = {
    {10, DType::kFloat}, {21, DType::kFloat}, {21, DType::kFloat16}, {21, DType::kBFloat16}};

// One MatMulInteger or QLinearMatMul problem. Unset values: a pattern over the type's range
// (zero points too); scales from {1, 1.25, 1.5, 1.75} x 2^{0..-3} (exact in every scale type, so
// the reference's double arithmetic is exact); y_scale the power of two that brings the largest
// |acc| a_scale b_scale to at most 64, so that most outputs are not saturated.
struct IntegerSpec {
  Op op = Op::kMatMulInteger;
  TypePair types;
  ScaleVariant scales{21, DType::kFloat};
  DType y = DType::kUInt8;
  std::string op_class;
  Dims a, b;
  std::optional<Dims> a_zp, b_zp;  // nullopt: absent (MatMulInteger only).
  Values a_value, b_value, a_zp_value, b_zp_value, a_scale_value, b_scale_value;
  std::optional<float> y_scale;
  std::optional<std::int64_t> y_zp;
};

IntegerSpec Spec(Op op, TypePair types, std::string op_class, Dims a, Dims b) {
  IntegerSpec s;
  s.op = op;
  s.types = types;
  s.op_class = std::move(op_class);
  s.a = std::move(a);
  s.b = std::move(b);
  return s;
}

std::pair<std::int64_t, std::int64_t> Range(DType t) {
  return t == DType::kInt8 ? std::pair<std::int64_t, std::int64_t>{-128, 127}
                           : std::pair<std::int64_t, std::int64_t>{0, 255};
}

double DyadicScale(std::uint64_t seed, std::int64_t i) {
  return (1 + 0.25 * static_cast<double>(PatternValue(seed, i, 0, 3))) /
         static_cast<double>(1 << PatternValue(seed + 1, i, 0, 3));
}

// The largest |exact accumulation| of A, B and the zero points of `c` (its MatMulInteger twin).
std::int64_t MaxAccumulation(const FamilyCase& c, const std::string& a, const std::string& b) {
  family::Problem twin;
  twin.op = Op::kMatMulInteger;
  twin.version = 10;
  for (const family::NamedInput& input : c.problem.inputs) {
    if (input.name == a) twin.inputs.push_back({"A", input.tensor});
    if (input.name == b) twin.inputs.push_back({"B", input.tensor});
    if (input.name.ends_with("_zero_point")) twin.inputs.push_back(input);
  }
  auto plan = family::PlanProblem(twin);
  auto oracle = plan.ok() ? family::ExactFamily(*plan, Arithmetic::OwnType(DType::kInt32))
                          : StatusOr<family::FamilyOracle>(plan.status());
  std::int64_t max = 0;
  if (!oracle.ok()) return max;  // The case itself fails to plan, and the tests say so.
  for (std::int32_t v : oracle->y.Values<std::int32_t>())
    max = std::max<std::int64_t>(max, std::llabs(v));
  return max;
}

std::string Key(const IntegerSpec& s) {
  std::string key = s.op == Op::kMatMulInteger ? "matmulinteger10"
                                               : "qlinearmatmul" + std::to_string(s.scales.version);
  key += "_" + std::string(DTypeName(s.types.a)) + "_" + std::string(DTypeName(s.types.b));
  if (s.op == Op::kQLinearMatMul) {
    key += "_" + std::string(DTypeName(s.y)) + "_" + std::string(DTypeName(s.scales.scale));
  }
  return key;
}

FamilyCase IntegerCase(const IntegerSpec& s) {
  const bool q = s.op == Op::kQLinearMatMul;
  const std::string op_name = q ? "qlinearmatmul" : "matmulinteger";
  CaseBuilder b(s.op, q ? s.scales.version : 10, Key(s), op_name + "/" + s.op_class);
  const std::string a_name = q ? "a" : "A", b_name = q ? "b" : "B";
  auto add = [&](const std::string& name, DType t, const Dims& dims, const Values& values,
                 std::uint64_t salt) {
    if (values) {
      b.Input(name, t, dims, values);
    } else {
      b.Pattern(name, t, dims, Range(t).first, Range(t).second, salt);
    }
  };
  add(a_name, s.types.a, s.a, s.a_value, 1);
  add(b_name, s.types.b, s.b, s.b_value, 2);
  if (s.a_zp) add("a_zero_point", s.types.a, *s.a_zp, s.a_zp_value, 3);
  if (s.b_zp) add("b_zero_point", s.types.b, *s.b_zp, s.b_zp_value, 4);
  if (!q) return b.Take();
  const std::uint64_t seed = b.seed();
  auto scale = [&](std::uint64_t salt) -> Values {
    return [seed, salt](std::int64_t i) { return DyadicScale(seed + salt, i); };
  };
  b.Input("a_scale", s.scales.scale, s.a_zp.value_or(Dims{}),
          s.a_scale_value ? s.a_scale_value : scale(5));
  b.Input("b_scale", s.scales.scale, s.b_zp.value_or(Dims{}),
          s.b_scale_value ? s.b_scale_value : scale(7));
  float y_scale = 1;
  if (s.y_scale) {
    y_scale = *s.y_scale;
  } else {
    const double largest =
        static_cast<double>(MaxAccumulation(b.current(), a_name, b_name)) * 1.75 * 1.75;
    if (largest > 64)
      y_scale = std::ldexp(1.0f, static_cast<int>(std::ceil(std::log2(largest / 64))));
  }
  b.Input("y_scale", s.scales.scale, {}, [&](std::int64_t) { return y_scale; });
  const std::int64_t y_zp = s.y_zp.value_or(
      PatternValue(seed, 0, s.y == DType::kInt8 ? -32 : 96, s.y == DType::kInt8 ? 32 : 160));
  b.Input("y_zero_point", s.y, {}, [&](std::int64_t) { return y_zp; });
  return b.Take();
}

// Every single-problem class of MatMul's shape catalogue x every zero-point form that applies to
// its ranks (an empty Y or K = 0: per tensor and per row and column only, every element being
// an empty sum or none), the type pair (and QLinearMatMul's scale variant and output type)
// turning; then on the 2-D class every type pair x every form, and for QLinearMatMul every scale
// variant x every type pair with per-row and per-column scales.
void AppendClassCases(Op op, std::vector<FamilyCase>& out, std::set<std::string>& names) {
  std::vector<ZpForm> forms = {ZpForm::kScalar, ZpForm::kOne, ZpForm::kRow, ZpForm::kColumn,
                               ZpForm::kRowColumn};
  if (op == Op::kMatMulInteger) forms.insert(forms.begin(), ZpForm::kAbsent);
  auto add = [&](const ShapeClass& shape, ZpForm form, int types, int scales, int y) {
    const ShapePair& p = shape.problems.front();
    IntegerSpec s = Spec(op, kTypePairs[types], shape.name + "/" + ZpFormName(form), p.a, p.b);
    s.scales = kScaleVariants[scales];
    s.y = y == 0 ? DType::kUInt8 : DType::kInt8;
    if (form != ZpForm::kAbsent) {
      s.a_zp = ZeroPointDims(form, p.a, true);
      s.b_zp = ZeroPointDims(form, p.b, false);
      if (!s.a_zp || !s.b_zp) return false;
    }
    FamilyCase c = IntegerCase(s);
    if (names.insert(c.name).second) out.push_back(std::move(c));
    return true;
  };
  auto degenerate = [](const ShapePair& p) {
    return std::ranges::count(p.a, 0) + std::ranges::count(p.b, 0) > 0;
  };
  int turn = 0;
  for (const ShapeClass& shape : ShapeClasses()) {
    if (shape.sequence()) continue;
    for (ZpForm form : forms) {
      if (degenerate(shape.problems.front()) && form != ZpForm::kScalar &&
          form != ZpForm::kRowColumn) {
        continue;
      }
      if (add(shape, form, turn % 4, (turn + turn / 4) % 4, (turn / 3) % 2)) ++turn;
    }
  }
  const ShapeClass* two_d = nullptr;
  for (const ShapeClass& shape : ShapeClasses()) {
    if (shape.name == "2d") two_d = &shape;
  }
  for (int types = 0; types < 4; ++types) {
    int form_index = 0;
    for (ZpForm form : forms) add(*two_d, form, types, (types + form_index++) % 4, types % 2);
    if (op != Op::kQLinearMatMul) continue;
    for (int v = 0; v < 4; ++v) add(*two_d, ZpForm::kRowColumn, types, v, (types + v) % 2);
  }
}

// x86's vpmaddubsw multiplies uint8 by int8 and adds adjacent pairs saturating to int16: 255 x 127
// twice is 64,770, saturated to 32,767. A [2, K] of uint8 >= 128 against int8 columns of +127,
// -128, pairs of each (+127 +127 -128 -128 ...) and alternating ones (which never saturate).
IntegerSpec SaturatingPairs(Op op, std::int64_t k, std::int64_t a_zero_point, std::string name) {
  IntegerSpec s = Spec(op, kTypePairs[1], std::move(name), {2, k}, {k, 4});
  s.a_value = [k](std::int64_t i) {
    return i < k ? 255.0 : 128.0 + static_cast<double>(PatternValue(7, i, 0, 127));
  };
  s.b_value = [](std::int64_t i) {
    const std::int64_t row = i / 4, col = i % 4;
    const bool high = col == 0 || (col == 2 && row / 2 % 2 == 0) || (col == 3 && row % 2 == 0);
    return high ? 127.0 : -128.0;
  };
  if (op == Op::kQLinearMatMul || a_zero_point != 0) {
    s.a_zp = s.b_zp = Dims{};
    s.a_zp_value = [a_zero_point](std::int64_t) { return static_cast<double>(a_zero_point); };
    s.b_zp_value = [](std::int64_t) { return 0.0; };
  }
  return s;
}

Values Constant(double v) {
  return [v](std::int64_t) { return v; };
}

Values Listed(std::vector<double> values) {
  return [values = std::move(values)](std::int64_t i) {
    return values[static_cast<std::size_t>(i) % values.size()];
  };
}

// [1, K] x [K, 1] of one value per side, zero points 0: K past 2^15 (an int16 accumulator's end)
// and either side of the first K whose exact sum leaves int32.
IntegerSpec LongK(Op op, TypePair types, double a, double b, std::int64_t k, std::string name) {
  IntegerSpec s = Spec(op, types, std::move(name), {1, k}, {k, 1});
  s.a_value = [a](std::int64_t) { return a; };
  s.b_value = [b](std::int64_t) { return b; };
  if (op == Op::kQLinearMatMul) {
    s.a_zp = s.b_zp = Dims{};
    s.a_zp_value = s.b_zp_value = [](std::int64_t) { return 0.0; };
    s.a_scale_value = s.b_scale_value = [](std::int64_t) { return 1.0; };
  }
  return s;
}

// The value cases both integer operators share.
void AppendValueCases(Op op, std::vector<FamilyCase>& out) {
  out.push_back(IntegerCase(SaturatingPairs(op, 8, 0, "saturating-pairs/K=8")));
  out.push_back(IntegerCase(SaturatingPairs(op, 7, 0, "saturating-pairs/K=7")));
  out.push_back(IntegerCase(SaturatingPairs(op, 8, 128, "saturating-pairs/a_zero_point=128")));
  for (int types = 0; types < 4; ++types) {
    for (int level = 0; level < 3; ++level) {
      const TypePair t = kTypePairs[types];
      auto zp = [level](DType d) -> double {
        return d == DType::kInt8 ? std::array{-128, 0, 127}[level] : std::array{0, 128, 255}[level];
      };
      const double az = zp(t.a), bz = zp(t.b);
      IntegerSpec s = Spec(op, t,
                           "zero-points/" + std::to_string(static_cast<int>(az)) + "," +
                               std::to_string(static_cast<int>(bz)),
                           {2, 4}, {4, 3});
      s.a_zp = s.b_zp = level == 1 ? Dims{1} : Dims{};
      s.a_zp_value = [az](std::int64_t) { return az; };
      s.b_zp_value = [bz](std::int64_t) { return bz; };
      out.push_back(IntegerCase(s));
    }
  }
  // Per-row zero points far apart (0, 255, 128) against a B of +127 only: every row's zero-point
  // term is 508 x its zero point, so a kernel applying row 0's to every row is far off.
  IntegerSpec rows = Spec(op, kTypePairs[1], "zero-points/per-row-0,255,128", {3, 4}, {4, 2});
  rows.b_value = Constant(127);
  rows.a_zp = Dims{3};
  rows.b_zp = Dims{};
  rows.a_zp_value = Listed({0, 255, 128});
  rows.b_zp_value = Constant(0);
  out.push_back(IntegerCase(rows));
  const TypePair u8s8 = kTypePairs[1], u8u8 = kTypePairs[0];
  out.push_back(IntegerCase(LongK(op, u8s8, 255, 127, 32769, "K=2^15+1")));
  out.push_back(IntegerCase(LongK(op, u8u8, 255, 255, 32769, "K=2^15+1")));
  out.push_back(IntegerCase(LongK(op, u8s8, 255, -128, 65793, "int32/last-K-inside")));
  out.push_back(IntegerCase(LongK(op, u8s8, 255, -128, 65794, "int32/first-K-outside")));
  out.push_back(IntegerCase(LongK(op, u8u8, 255, 255, 33025, "int32/last-K-inside")));
  out.push_back(IntegerCase(LongK(op, u8u8, 255, 255, 33026, "int32/first-K-outside")));
}

// QLinearMatMul's requantization at its edges: exact ties (n + 1/2 of both signs and parities,
// which round half to even: 0.5 -> 0, 1.5 -> 2, -2.5 -> -2), made by a_scale 0.5, by y_scale 2
// and by per-row and per-column scales; saturation at both ends of each output type; y's zero
// point at its type's ends.
void AppendRequantizationCases(std::vector<FamilyCase>& out) {
  const Values odd = Listed({1, 3, 5, 7, -1, -3, -5, -7});
  const TypePair s8s8 = kTypePairs[3], u8s8 = kTypePairs[1];
  IntegerSpec half = Spec(Op::kQLinearMatMul, s8s8, "ties/a_scale=0.5", {1, 1}, {1, 8});
  half.y = DType::kInt8;
  half.a_zp = half.b_zp = Dims{};
  half.a_value = Constant(1);
  half.b_value = odd;
  half.a_zp_value = half.b_zp_value = Constant(0);
  half.a_scale_value = Constant(0.5);
  half.b_scale_value = Constant(1);
  half.y_scale = 1.0f;
  half.y_zp = 0;
  out.push_back(IntegerCase(half));
  IntegerSpec by_y = half;
  by_y.types = u8s8;
  by_y.scales = {21, DType::kFloat16};
  by_y.y = DType::kUInt8;
  by_y.op_class = "ties/y_scale=2";
  by_y.a_value = Constant(3);
  by_y.a_zp_value = Constant(2);
  by_y.a_scale_value = Constant(1);
  by_y.y_scale = 2.0f;
  by_y.y_zp = 128;
  out.push_back(IntegerCase(by_y));
  IntegerSpec per_axis = half;
  per_axis.scales = {21, DType::kBFloat16};
  per_axis.op_class = "ties/per-row,per-column-scales";
  per_axis.a = {2, 1};
  per_axis.b = {1, 4};
  per_axis.a_zp = Dims{2, 1};
  per_axis.b_zp = Dims{1, 4};
  per_axis.a_value = Listed({1, -1});
  per_axis.b_value = Listed({1, -3, 5, -7});
  per_axis.a_scale_value = Listed({1, 3});
  per_axis.b_scale_value = Listed({0.5, 1.5});
  out.push_back(IntegerCase(per_axis));
  for (DType y : {DType::kInt8, DType::kUInt8}) {
    IntegerSpec sat = Spec(Op::kQLinearMatMul, s8s8, "saturation/both-ends", {2, 4}, {4, 2});
    sat.y = y;
    sat.a_zp = sat.b_zp = Dims{};
    sat.a_value = Listed({127, 127, 127, 127, -128, -128, -128, -128});
    sat.b_value = Constant(127);
    sat.a_zp_value = sat.b_zp_value = Constant(0);
    sat.y_scale = 1.0f;
    sat.y_zp = y == DType::kInt8 ? 0 : 128;
    out.push_back(IntegerCase(sat));
    IntegerSpec ends = Spec(Op::kQLinearMatMul, s8s8, "y_zero_point/type-ends", {3, 4}, {4, 3});
    ends.y = y;
    ends.y_zp = y == DType::kInt8 ? -128 : 255;
    ends.a_zp = ends.b_zp = Dims{};
    out.push_back(IntegerCase(ends));
  }
}

}  // namespace

void AppendIntegerCases(Op op, std::vector<FamilyCase>& out) {
  std::set<std::string> names;
  AppendClassCases(op, out, names);
  AppendValueCases(op, out);
  if (op == Op::kQLinearMatMul) AppendRequantizationCases(out);
}

}  // namespace mm::conformance::internal
