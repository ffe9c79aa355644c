// What the two halves of the family catalogue share (family_cases.cc: Gemm and the whole;
// family_cases_integer.cc: MatMulInteger and QLinearMatMul).
#ifndef MM_CONFORMANCE_LOADER_FAMILY_CASES_INTERNAL_H_
#define MM_CONFORMANCE_LOADER_FAMILY_CASES_INTERNAL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mm/conformance/loader/family_cases.h"
#include "mm/engine/dtype.h"
#include "mm/engine/tensor.h"
#include "mm/family/op.h"

namespace mm::conformance::internal {

// Element `i` of the deterministic pattern `seed`, in [lo, hi]: a 64-bit integer mix of the two
// (splitmix64's finaliser), so neighbours, rows and batch entries all differ.
std::int64_t PatternValue(std::uint64_t seed, std::int64_t i, std::int64_t lo, std::int64_t hi);

// A seed from a case's name (FNV-1a): a case's values depend on its name only.
std::uint64_t SeedOf(std::string_view name);

// "mm_family_" + `parts`, every run of characters other than letters and digits made one '_', a
// minus sign before a number "minus", letters lowercased: "gemm13_float_transA/C[N]" gives
// "mm_family_gemm13_float_transa_c_n".
std::string CaseName(std::string_view parts);

// A case being built: inputs by name (in the order added), attributes.
class CaseBuilder {
 public:
  // `key`: the name's parts before the class ("gemm13_float"); `op_class` as FamilyCase's.
  CaseBuilder(family::Op op, int version, std::string_view key, std::string op_class);

  const std::string& name() const { return case_.name; }
  std::uint64_t seed() const { return seed_; }
  // The case so far.
  const FamilyCase& current() const { return case_; }

  // Adds input `name` of `dtype` and `dims`, element i `value(i)` converted to the type by
  // RoundFromDouble (exact for the values the catalogue uses). Returns the new tensor.
  template <class F>
  const Tensor& Input(std::string_view name, DType dtype, Dims dims, F value) {
    Tensor& t = case_.tensors.emplace_back(Tensor::Create(dtype, std::move(dims)).value());
    VisitElementType(dtype, [&](auto tag) {
      using T = CppType<decltype(tag)::value>;
      T* data = t.template Data<T>();
      for (std::int64_t i = 0; i < t.NumElements(); ++i) {
        data[i] = RoundFromDouble<T>(static_cast<double>(value(i)));
      }
    });
    case_.problem.inputs.push_back({std::string(name), t.view()});
    return t;
  }
  // Input `name` of the pattern seed() + `salt` in [lo, hi].
  const Tensor& Pattern(std::string_view name, DType dtype, Dims dims, std::int64_t lo,
                        std::int64_t hi, std::uint64_t salt);
  void Float(std::string name, float value);
  void Int(std::string name, std::int64_t value);

  // The case, its inputs in the operator's ONNX order.
  FamilyCase Take();

 private:
  FamilyCase case_;
  std::uint64_t seed_ = 0;
};

// The cases of MatMulInteger (`op` kMatMulInteger) or QLinearMatMul, appended to `out`.
void AppendIntegerCases(family::Op op, std::vector<FamilyCase>& out);

}  // namespace mm::conformance::internal

#endif  // MM_CONFORMANCE_LOADER_FAMILY_CASES_INTERNAL_H_
