#include "mm/conformance/loader/family_cases.h"

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

#include "family_cases_internal.h"
#include "mm/family/exact.h"
#include "mm/family/plan.h"

namespace mm::conformance {
namespace internal {

std::int64_t PatternValue(std::uint64_t seed, std::int64_t i, std::int64_t lo, std::int64_t hi) {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ull * (static_cast<std::uint64_t>(i) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return lo + static_cast<std::int64_t>(z % static_cast<std::uint64_t>(hi - lo + 1));
}

std::uint64_t SeedOf(std::string_view name) {
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
  return h;
}

std::string CaseName(std::string_view parts) {
  std::string out(kFamilyCasePrefix);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const char c = parts[i];
    const bool sign = c == '-' && i + 1 < parts.size() &&
                      std::isdigit(static_cast<unsigned char>(parts[i + 1])) &&
                      (i == 0 || !std::isalnum(static_cast<unsigned char>(parts[i - 1])));
    if (sign) {
      if (out.back() != '_') out += '_';
      out += "minus";
    } else if (std::isalnum(static_cast<unsigned char>(c))) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else if (out.back() != '_') {
      out += '_';
    }
  }
  while (out.back() == '_') out.pop_back();
  return out;
}

CaseBuilder::CaseBuilder(family::Op op, int version, std::string_view key, std::string op_class) {
  case_.problem.op = op;
  case_.problem.version = version;
  // The class without its operator, which the key names already.
  case_.name = CaseName(std::string(key) + "_" + op_class.substr(op_class.find('/') + 1));
  case_.op_class = std::move(op_class);
  seed_ = SeedOf(case_.name);
}

const Tensor& CaseBuilder::Pattern(std::string_view name, DType dtype, Dims dims, std::int64_t lo,
                                   std::int64_t hi, std::uint64_t salt) {
  const std::uint64_t seed = seed_ + salt * 0x51ED27ull;
  return Input(name, dtype, std::move(dims),
               [&](std::int64_t i) { return PatternValue(seed, i, lo, hi); });
}

void CaseBuilder::Float(std::string name, float value) {
  case_.problem.attributes.push_back(family::Attribute::Float(std::move(name), value));
}

void CaseBuilder::Int(std::string name, std::int64_t value) {
  case_.problem.attributes.push_back(family::Attribute::Int(std::move(name), value));
}

FamilyCase CaseBuilder::Take() {
  const std::span<const std::string_view> order = family::InputNames(case_.problem.op);
  auto rank = [&](const family::NamedInput& input) {
    return std::find(order.begin(), order.end(), input.name) - order.begin();
  };
  std::stable_sort(case_.problem.inputs.begin(), case_.problem.inputs.end(),
                   [&](const auto& x, const auto& y) { return rank(x) < rank(y); });
  return std::move(case_);
}

}  // namespace internal

namespace {

using family::CForm;
using family::Op;
using internal::CaseBuilder;

// Gemm's M, K, N: all different, so that a transpose or a broadcast along the wrong axis reads
// other values (a [N] bias taken per row stays inside its 4 values with M = 3).
constexpr std::int64_t kM = 3, kK = 5, kN = 4;

// A value of alpha or beta and its label in the class.
struct Scaling {
  std::string label;
  float value = 0;
};

// alpha's and beta's values for Gemm of `t`: 0, 1, a negative one and one `t` does not hold where
// there is such a float32 integer (16-bit floats: 1 + 2^-12; int32 and uint32: 2^32 + 512, which
// wraps to 512; float and double hold every float32, so the decimal 0.1 stands there). int64
// holds every integer alpha mm judges, and uint64's unrepresentable ones are the negative ones.
std::vector<Scaling> Scalings(DType t, bool beta) {
  const bool is_float = IsFloat(t);
  std::vector<Scaling> out = {{"0", 0}, {"1", 1}};
  out.push_back({"negative", is_float ? (beta ? -0.5f : -2.0f) : (beta ? -3.0f : -2.0f)});
  if (t == DType::kFloat16 || t == DType::kBFloat16)
    out.push_back({"unrepresentable", 1.000244140625f});
  if (t == DType::kFloat || t == DType::kDouble) out.push_back({"0.1", 0.1f});
  if (t == DType::kInt32 || t == DType::kUInt32) out.push_back({"unrepresentable", 4294967808.0f});
  return out;
}

constexpr CForm kCForms[] = {CForm::kAbsent,   CForm::kScalar, CForm::kOne,    CForm::kRow,
                             CForm::kOneByOne, CForm::kOneByN, CForm::kMByOne, CForm::kMByN};

Dims CDims(CForm form, std::int64_t m, std::int64_t n) {
  switch (form) {
    case CForm::kScalar:
      return {};
    case CForm::kOne:
      return {1};
    case CForm::kRow:
      return {n};
    case CForm::kOneByOne:
      return {1, 1};
    case CForm::kOneByN:
      return {1, n};
    case CForm::kMByOne:
      return {m, 1};
    default:
      return {m, n};
  }
}

std::string TransName(bool a, bool b) {
  if (a && b) return "transA,transB";
  if (a) return "transA";
  return b ? "transB" : "noTrans";
}

// One Gemm problem.
struct GemmSpec {
  int version = 13;
  DType t = DType::kFloat;
  bool trans_a = false, trans_b = false;
  CForm c = CForm::kMByN;
  Scaling alpha{"1", 1}, beta{"1", 1};
  std::int64_t m = kM, k = kK, n = kN;
  int broadcast = -1;  // Gemm-1 and -6's attribute; -1: not given.
  std::string extra;   // A class part of its own ("K=0", "broadcast=1").
};

GemmSpec Spec(int version, DType t, bool trans_a, bool trans_b, CForm c) {
  GemmSpec s;
  s.version = version;
  s.t = t;
  s.trans_a = trans_a;
  s.trans_b = trans_b;
  s.c = c;
  return s;
}

std::string GemmClass(const GemmSpec& s) {
  std::string c =
      "gemm/" + TransName(s.trans_a, s.trans_b) + "/" +
      (s.c == CForm::kAbsent ? std::string("no-C") : "C" + std::string(CFormName(s.c))) +
      "/alpha-" + s.alpha.label + ",beta-" + s.beta.label;
  return s.extra.empty() ? c : c + "/" + s.extra;
}

// Small integers (of both signs where the type has them): every product, sum and scaling by 0, 1,
// -2 or -0.5 is exact in bfloat16 (|Y| < 128 in steps of 1/2), so Y is exact in every type.
FamilyCase GemmCase(const GemmSpec& s) {
  CaseBuilder b(Op::kGemm, s.version,
                "gemm" + std::to_string(s.version) + "_" + std::string(DTypeName(s.t)),
                GemmClass(s));
  const std::int64_t lo = GetDTypeInfo(s.t).is_signed ? -3 : 0;
  b.Pattern("A", s.t, s.trans_a ? Dims{s.k, s.m} : Dims{s.m, s.k}, lo, 3, 1);
  b.Pattern("B", s.t, s.trans_b ? Dims{s.n, s.k} : Dims{s.k, s.n}, lo, 3, 2);
  if (s.c != CForm::kAbsent) b.Pattern("C", s.t, CDims(s.c, s.m, s.n), lo, 3, 3);
  // The defaults (alpha = beta = 1, no transposes) are left to the attribute's default.
  if (s.alpha.value != 1) b.Float("alpha", s.alpha.value);
  if (s.beta.value != 1) b.Float("beta", s.beta.value);
  if (s.trans_a) b.Int("transA", 1);
  if (s.trans_b) b.Int("transB", 1);
  if (s.broadcast >= 0) b.Int("broadcast", s.broadcast);
  return b.Take();
}

constexpr DType kGemm13Types[] = {DType::kFloat16, DType::kFloat, DType::kDouble, DType::kBFloat16,
                                  DType::kInt32,   DType::kInt64, DType::kUInt32, DType::kUInt64};

void Add(std::vector<FamilyCase>& out, std::set<std::string>& names, FamilyCase c) {
  if (names.insert(c.name).second) out.push_back(std::move(c));
}

// Every transpose pair x every form of C per type, alpha and beta turning through their values so
// that each C form meets each alpha; then alpha x beta whole per type, the transposes and C's form
// turning.
void AppendGemm13Cases(std::vector<FamilyCase>& out, std::set<std::string>& names) {
  for (DType t : kGemm13Types) {
    const std::vector<Scaling> alphas = Scalings(t, false), betas = Scalings(t, true);
    const auto na = static_cast<int>(alphas.size()), nb = static_cast<int>(betas.size());
    for (int f = 0; f < 8; ++f) {
      for (int pair = 0; pair < 4; ++pair) {
        GemmSpec s = Spec(13, t, (pair & 1) != 0, (pair & 2) != 0, kCForms[f]);
        s.alpha = alphas[static_cast<std::size_t>((f + pair) % na)];
        s.beta = betas[static_cast<std::size_t>((f + 3 * pair + 1) % nb)];
        Add(out, names, GemmCase(s));
      }
    }
    for (int ai = 0; ai < na; ++ai) {
      for (int bi = 0; bi < nb; ++bi) {
        const int turn = ai * nb + bi;
        GemmSpec s = Spec(13, t, (turn & 1) != 0, (turn & 2) != 0, kCForms[1 + turn % 7]);
        s.alpha = alphas[static_cast<std::size_t>(ai)];
        s.beta = betas[static_cast<std::size_t>(bi)];
        Add(out, names, GemmCase(s));
      }
    }
  }
}

// K = 0 (Y = beta C), M = 0 and N = 0 (empty Y), in float and int32; and the older versions'
// attributes: Gemm-1 and Gemm-6 with broadcast 0 (C exactly [M, N]) and 1, Gemm-7 (broadcast
// gone, C required), Gemm-9 (integer types), Gemm-11 (C optional).
void AppendGemmEdgeCases(std::vector<FamilyCase>& out, std::set<std::string>& names) {
  const Scaling neg_alpha{"negative", -2}, neg_beta{"negative", -3};
  for (DType t : {DType::kFloat, DType::kInt32}) {
    for (const auto& [m, k, n, name] :
         {std::tuple{kM, std::int64_t{0}, kN, "K=0"}, std::tuple{std::int64_t{0}, kK, kN, "M=0"},
          std::tuple{kM, kK, std::int64_t{0}, "N=0"}}) {
      for (bool trans : {false, true}) {
        GemmSpec s = Spec(13, t, trans, trans, n == 0 ? CForm::kMByOne : CForm::kRow);
        s.alpha = neg_alpha;
        s.beta = neg_beta;
        s.m = m, s.k = k, s.n = n, s.extra = name;
        Add(out, names, GemmCase(s));
      }
    }
  }
  const Scaling two{"negative", -2}, half{"negative", -0.5f};
  auto legacy = [&](int version, DType t, bool ta, bool tb, CForm c, int broadcast,
                    std::string extra) {
    GemmSpec s = Spec(version, t, ta, tb, c);
    s.broadcast = broadcast;
    s.extra = std::move(extra);
    return s;
  };
  std::vector<GemmSpec> specs = {
      legacy(1, DType::kFloat, false, false, CForm::kMByN, -1, "broadcast-default"),
      legacy(1, DType::kFloat, false, false, CForm::kMByN, 0, "broadcast=0"),
      legacy(1, DType::kFloat16, false, true, CForm::kRow, 1, "broadcast=1"),
      legacy(6, DType::kDouble, true, false, CForm::kMByN, 0, "broadcast=0"),
      legacy(6, DType::kFloat, false, false, CForm::kScalar, 1, "broadcast=1"),
      legacy(7, DType::kFloat, false, true, CForm::kOneByN, -1, ""),
      legacy(9, DType::kInt32, false, false, CForm::kMByOne, -1, ""),
      legacy(9, DType::kUInt64, true, false, CForm::kOne, -1, ""),
      legacy(11, DType::kFloat, false, false, CForm::kAbsent, -1, ""),
      legacy(11, DType::kInt64, false, true, CForm::kAbsent, -1, ""),
  };
  specs[0].beta = specs[4].beta = half;
  specs[2].alpha = specs[5].alpha = specs[7].alpha = specs[8].alpha = specs[9].alpha = two;
  specs[6].beta = neg_beta;
  for (const GemmSpec& s : specs) Add(out, names, GemmCase(s));
}

}  // namespace

std::vector<FamilyCase> BuiltinFamilyCases() {
  std::vector<FamilyCase> out;
  std::set<std::string> names;
  AppendGemm13Cases(out, names);
  AppendGemmEdgeCases(out, names);
  internal::AppendIntegerCases(Op::kMatMulInteger, out);
  internal::AppendIntegerCases(Op::kQLinearMatMul, out);
  return out;
}

StatusOr<Tensor> FamilyCaseExpectedY(const FamilyCase& family_case) {
  MM_ASSIGN_OR_RETURN(const family::Plan plan, family::PlanProblem(family_case.problem));
  MM_ASSIGN_OR_RETURN(family::FamilyOracle oracle,
                      family::ExactFamily(plan, Arithmetic::OwnType(plan.y_dtype)));
  return std::move(oracle.y);
}

}  // namespace mm::conformance
