// Gemm's problems for mm-fuzz --op Gemm (family_values.h, DrawGemm).
#include <cstdio>
#include <cstring>
#include <optional>

#include "family_values.h"
#include "problem_values.h"

namespace mm::fuzz {

std::vector<int> GemmVersionsFor(DType dtype) {
  if (dtype == DType::kBFloat16) return {13};
  if (IsFloat(dtype)) return {1, 6, 7, 9, 11, 13};
  return {9, 11, 13};
}

namespace {

using family::Attribute;

// `t` ([rows, cols]) transposed.
Tensor Transposed(const Tensor& t) {
  const std::int64_t rows = t.dims()[0], cols = t.dims()[1];
  Tensor out = Tensor::Create(t.dtype(), {cols, rows}).value();
  const std::size_t e = DTypeSize(t.dtype());
  const auto* src = static_cast<const char*>(t.raw_data());
  auto* dst = static_cast<char*>(out.raw_data());
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) {
      std::memcpy(dst + static_cast<std::size_t>(c * rows + r) * e,
                  src + static_cast<std::size_t>(r * cols + c) * e, e);
    }
  }
  return out;
}

// alpha or beta: absent (1), 1, 0, negative, or (float types) not representable in float16,
// bfloat16 or any binary type as a decimal (0.1, 1/3).
std::optional<float> DrawScaling(Rng& rng, bool integer) {
  static const std::vector<double> kFloat = {1, 0, -1, -2.5, 0.1, 1.0 / 3};
  static const std::vector<double> kInteger = {1, 0, -1, 2, -3};
  if (rng.Chance(0.2)) return std::nullopt;
  return static_cast<float>(rng.Pick(integer ? kInteger : kFloat));
}

// C's form (CFormName's spelling) and dims; "absent" only where the version allows it.
std::pair<std::string, std::optional<Dims>> DrawC(Rng& rng, int version, std::int64_t m,
                                                  std::int64_t n) {
  static const std::vector<std::string> kForms = {"absent", "[]",    "[1]",   "[N]",
                                                  "[1,1]",  "[1,N]", "[M,1]", "[M,N]"};
  std::string form = rng.Pick(kForms);
  if (form == "absent" && version < 11) form = "[M,N]";
  if (form == "absent") return {form, std::nullopt};
  if (form == "[]") return {form, Dims{}};
  if (form == "[1]") return {form, Dims{1}};
  if (form == "[N]") return {form, Dims{n}};
  if (form == "[1,1]") return {form, Dims{1, 1}};
  if (form == "[1,N]") return {form, Dims{1, n}};
  if (form == "[M,1]") return {form, Dims{m, 1}};
  return {form, Dims{m, n}};
}

std::string Number(float value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", static_cast<double>(value));
  return text;
}

// The attributes: transposes (given when set, and sometimes as 0), alpha, beta and, before
// version 7, broadcast (1 where C is not [M, N], else sometimes 0). Adds their words to `form`.
void DrawAttributes(Rng& rng, bool trans_a, bool trans_b, const std::string& c_form, bool integer,
                    FamilyProblem& p) {
  if (trans_a || rng.Chance(0.2)) p.attributes.push_back(Attribute::Int("transA", trans_a));
  if (trans_b || rng.Chance(0.2)) p.attributes.push_back(Attribute::Int("transB", trans_b));
  for (const char* name : {"alpha", "beta"}) {
    if (const std::optional<float> v = DrawScaling(rng, integer)) {
      p.attributes.push_back(Attribute::Float(name, *v));
      p.form += std::string(", ") + name + " " + Number(*v);
    }
  }
  if (p.version < 7 && (c_form != "[M,N]" || rng.Chance(0.5))) {
    p.attributes.push_back(Attribute::Int("broadcast", c_form != "[M,N]" || rng.Chance(0.5)));
  }
}

}  // namespace

void DrawGemm(Rng& rng, DType dtype, const GeneratorOptions& options, FamilyProblem& p) {
  p.version = rng.Pick(GemmVersionsFor(dtype));
  std::int64_t m = Size(rng), n = Size(rng), k = Size(rng);
  if (rng.Chance(1.0 / 16)) {  // Wide K: where the accumulation's error shows.
    k = rng.Between(1000, 5000);
    m = rng.Between(1, 4);
    n = rng.Between(1, 4);
  }
  FitSizes(1, options, m, n, k);
  Problem product;  // A' [M, K] and B' [K, N] of MatMul's value families.
  product.a = Tensor::Create(dtype, {m, k}).value();
  product.b = Tensor::Create(dtype, {k, n}).value();
  FillValues(rng, options, k, n, product);
  const bool trans_a = rng.Chance(0.5), trans_b = rng.Chance(0.5);
  p.inputs.emplace_back("A", trans_a ? Transposed(product.a) : std::move(product.a));
  p.inputs.emplace_back("B", trans_b ? Transposed(product.b) : std::move(product.b));
  p.values = product.values;
  const auto [c_form, c_dims] = DrawC(rng, p.version, m, n);
  if (c_dims) {
    Tensor c = Tensor::Create(dtype, *c_dims).value();
    p.values += ", C " + FillGemmC(rng, options.specials, c);
    p.inputs.emplace_back("C", std::move(c));
  }
  p.form = std::string(trans_a ? "transA, " : "") + (trans_b ? "transB, " : "") + "C " + c_form;
  DrawAttributes(rng, trans_a, trans_b, c_form, !IsFloat(dtype), p);
}

}  // namespace mm::fuzz
