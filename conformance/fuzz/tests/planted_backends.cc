#include "conformance/fuzz/tests/planted_backends.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/reference/reference_backend.h"
#include "conformance/fuzz/shrink.h"

namespace mm::fuzz::testing {
namespace {

Tensor Converted(TensorView from, DType to) {
  Tensor out = Tensor::Create(to, Dims(from.dims.begin(), from.dims.end())).value();
  VisitDType(from.dtype, [&](auto from_tag) {
    using F = CppType<decltype(from_tag)::value>;
    VisitDType(to, [&](auto to_tag) {
      using T = CppType<decltype(to_tag)::value>;
      const F* src = from.Data<F>();
      T* dst = out.Data<T>();
      for (std::int64_t i = 0; i < out.NumElements(); ++i) {
        double v;
        if constexpr (std::is_integral_v<F>) {
          v = static_cast<double>(src[i]);
        } else {
          v = ToDouble(src[i]);
        }
        if constexpr (std::is_integral_v<T>) {
          // Clamped: converting an out-of-range double is undefined.
          const double lo = static_cast<double>(std::numeric_limits<T>::min());
          const double hi = static_cast<double>(std::numeric_limits<T>::max());
          dst[i] = std::isnan(v) ? T{0}
                   : v <= lo     ? std::numeric_limits<T>::min()
                   : v >= hi     ? std::numeric_limits<T>::max()
                                 : static_cast<T>(v);
        } else {
          dst[i] = RoundFromDouble<T>(v);
        }
      }
    });
  });
  return out;
}

void CopyInto(const Tensor& from, MutableTensorView y) {
  std::memcpy(y.data, from.raw_data(), from.NumBytes());
}

TensorView View(const Tensor& t) { return t.view(); }

// Runs `a` x `b` (any dtype, same shapes as the plan's operands) on a fresh reference primitive.
StatusOr<Tensor> Reference(TensorView a, TensorView b) {
  ReferenceBackend reference;
  return MatMul(reference, a, b);
}

class PlantedPrimitive final : public MatMulPrimitive {
 public:
  PlantedPrimitive(MatMulPlan plan, Bug bug) : MatMulPrimitive(std::move(plan)), bug_(bug) {}

 protected:
  Status Run(TensorView a, TensorView b, MutableTensorView y) override {
    const MatMulPlan& p = plan();
    const DType dtype = p.desc.dtype;
    switch (bug_) {
      case Bug::kTransposedB: {
        Tensor bt = Tensor::Create(dtype, Dims(b.dims.begin(), b.dims.end())).value();
        const std::size_t elem = DTypeSize(dtype);
        const std::int64_t k = p.k, n = p.n;
        const auto* src = static_cast<const char*>(b.data);
        auto* dst = static_cast<char*>(bt.raw_data());
        for (std::int64_t mat = 0; mat < b.NumElements() / (k * n); ++mat) {
          for (std::int64_t kk = 0; kk < k; ++kk) {
            for (std::int64_t j = 0; j < n; ++j) {
              std::memcpy(dst + ((mat * k + kk) * n + j) * elem,
                          src + (mat * k * n + j * k + kk) * elem, elem);
            }
          }
        }
        MM_ASSIGN_OR_RETURN(Tensor out, Reference(a, View(bt)));
        CopyInto(out, y);
        return OkStatus();
      }
      case Bug::kWrongBroadcastOffset: {
        MM_ASSIGN_OR_RETURN(MatMulPlan mat_plan, PlanMatMul({dtype, {p.m, p.k}, {p.k, p.n}}));
        ReferenceBackend reference;
        MM_ASSIGN_OR_RETURN(auto primitive, reference.Prepare(mat_plan));
        const std::int64_t a_count = p.a_elements / (p.m * p.k);
        const std::int64_t b_count = p.b_elements / (p.k * p.n);
        const std::size_t elem = DTypeSize(dtype);
        for (std::int64_t i = 0; i < p.batch; ++i) {
          const Dims a_dims = {p.m, p.k}, b_dims = {p.k, p.n}, y_dims = {p.m, p.n};
          TensorView a_mat{dtype, a_dims,
                           static_cast<const char*>(a.data) + (i % a_count) * p.m * p.k * elem};
          TensorView b_mat{dtype, b_dims,
                           static_cast<const char*>(b.data) + (i % b_count) * p.k * p.n * elem};
          MutableTensorView y_mat{dtype, y_dims, static_cast<char*>(y.data) + i * p.m * p.n * elem};
          MM_RETURN_IF_ERROR(primitive->Execute(a_mat, b_mat, y_mat));
        }
        return OkStatus();
      }
      case Bug::kDroppedTerm: {
        Tensor a_copy = Converted(a, dtype);
        if (p.k > 16 && p.k % 16 != 0) {
          const std::size_t elem = DTypeSize(dtype);
          for (std::int64_t row = 0; row < a_copy.NumElements() / p.k; ++row) {
            std::memset(static_cast<char*>(a_copy.raw_data()) + (row * p.k + p.k - 1) * elem, 0,
                        elem);
          }
        }
        MM_ASSIGN_OR_RETURN(Tensor out, Reference(View(a_copy), b));
        CopyInto(out, y);
        return OkStatus();
      }
      case Bug::kSkipLastRowOddM: {
        MM_ASSIGN_OR_RETURN(Tensor out, Reference(a, b));
        const std::size_t elem = DTypeSize(dtype);
        const bool skip = p.m % 2 == 1 && p.m > 1;
        for (std::int64_t i = 0; i < p.batch; ++i) {
          const std::int64_t rows = skip ? p.m - 1 : p.m;
          std::memcpy(static_cast<char*>(y.data) + i * p.m * p.n * elem,
                      static_cast<const char*>(out.raw_data()) + i * p.m * p.n * elem,
                      rows * p.n * elem);
        }
        return OkStatus();
      }
      case Bug::kTruncatedHalf: {
        if (dtype != DType::kFloat16 && dtype != DType::kBFloat16) break;
        MM_ASSIGN_OR_RETURN(Tensor out, Reference(View(Converted(a, DType::kFloat)),
                                                  View(Converted(b, DType::kFloat))));
        for (std::int64_t i = 0; i < out.NumElements(); ++i) {
          const float f = out.Data<float>()[i];
          if (dtype == DType::kBFloat16) {
            std::uint32_t bits;
            std::memcpy(&bits, &f, 4);
            if (!std::isnan(f)) bits &= 0xFFFF0000u;  // Truncation: keep the upper half.
            float t;
            std::memcpy(&t, &bits, 4);
            y.Data<bfloat16>()[i] = RoundToBFloat16(t);
          } else {
            float16 h = RoundToFloat16(f);
            if (std::isfinite(f) && std::fabs(ToDouble(h)) > std::fabs(f)) {
              h = Eigen::numext::bit_cast<float16>(
                  static_cast<std::uint16_t>(Eigen::numext::bit_cast<std::uint16_t>(h) - 1));
            }
            y.Data<float16>()[i] = h;
          }
        }
        return OkStatus();
      }
      case Bug::kSaturatingInts:
        if (IsFloat(dtype)) break;
        VisitDType(dtype, [&](auto tag) {
          using T = CppType<decltype(tag)::value>;
          if constexpr (std::is_integral_v<T>) {
            using L = std::numeric_limits<T>;
            for (std::int64_t i = 0; i < p.batch; ++i) {
              const auto [ao, bo] = p.BatchOffsets(i);
              for (std::int64_t r = 0; r < p.m; ++r) {
                for (std::int64_t c = 0; c < p.n; ++c) {
                  __int128 acc = 0;
                  for (std::int64_t kk = 0; kk < p.k; ++kk) {
                    acc += static_cast<__int128>(a.Data<T>()[ao + r * p.k + kk]) *
                           static_cast<__int128>(b.Data<T>()[bo + kk * p.n + c]);
                    acc = std::clamp<__int128>(acc, L::min(), L::max());
                  }
                  y.Data<T>()[(i * p.m + r) * p.n + c] = static_cast<T>(acc);
                }
              }
            }
          }
        });
        return OkStatus();
      case Bug::kInt64ViaDouble: {
        if (dtype != DType::kInt64 && dtype != DType::kUInt64) break;
        MM_ASSIGN_OR_RETURN(Tensor out, Reference(View(Converted(a, DType::kDouble)),
                                                  View(Converted(b, DType::kDouble))));
        CopyInto(Converted(out.view(), dtype), y);
        return OkStatus();
      }
      case Bug::kUninitialisedK0:
        if (p.k == 0) return OkStatus();  // Never writes Y.
        break;
      case Bug::kHalfAccumulation:
        if (dtype != DType::kFloat16 && dtype != DType::kBFloat16) break;
        VisitDType(dtype, [&](auto tag) {
          using T = CppType<decltype(tag)::value>;
          if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
            for (std::int64_t i = 0; i < p.batch; ++i) {
              const auto [ao, bo] = p.BatchOffsets(i);
              for (std::int64_t r = 0; r < p.m; ++r) {
                for (std::int64_t c = 0; c < p.n; ++c) {
                  T acc = RoundFromDouble<T>(0.0);
                  for (std::int64_t kk = 0; kk < p.k; ++kk) {
                    acc = RoundFromDouble<T>(ToDouble(acc) +
                                             ToDouble(a.Data<T>()[ao + r * p.k + kk]) *
                                                 ToDouble(b.Data<T>()[bo + kk * p.n + c]));
                  }
                  y.Data<T>()[(i * p.m + r) * p.n + c] = acc;
                }
              }
            }
          }
        });
        return OkStatus();
      case Bug::kDoubleInFloat: {
        if (dtype != DType::kDouble) break;
        MM_ASSIGN_OR_RETURN(Tensor out, Reference(View(Converted(a, DType::kFloat)),
                                                  View(Converted(b, DType::kFloat))));
        CopyInto(Converted(out.view(), DType::kDouble), y);
        return OkStatus();
      }
      case Bug::kWrongAbove64K: {
        constexpr std::int64_t kChunk = std::int64_t{1} << 16;
        if (std::max({p.a_elements, p.b_elements, p.y_elements}) <= kChunk) break;
        auto zeroed = [&](TensorView t) {
          Tensor copy = Tensor::Create(dtype, Dims(t.dims.begin(), t.dims.end())).value();
          std::memcpy(copy.raw_data(), t.data, copy.NumBytes());
          if (copy.NumElements() > kChunk) {
            std::memset(static_cast<char*>(copy.raw_data()) + kChunk * DTypeSize(dtype), 0,
                        DTypeSize(dtype));
          }
          return copy;
        };
        const Tensor a0 = zeroed(a), b0 = zeroed(b);
        MM_ASSIGN_OR_RETURN(Tensor out, Reference(View(a0), View(b0)));
        const std::size_t elem = DTypeSize(dtype);
        if (p.y_elements > kChunk) {
          // Every element but the first of the second chunk.
          std::memcpy(y.data, out.raw_data(), kChunk * elem);
          std::memcpy(static_cast<char*>(y.data) + (kChunk + 1) * elem,
                      static_cast<const char*>(out.raw_data()) + (kChunk + 1) * elem,
                      (p.y_elements - kChunk - 1) * elem);
        } else {
          CopyInto(out, y);
        }
        return OkStatus();
      }
    }
    MM_ASSIGN_OR_RETURN(Tensor out, Reference(a, b));
    CopyInto(out, y);
    return OkStatus();
  }

 private:
  Bug bug_;
};

class PlantedBackend final : public Backend {
 public:
  explicit PlantedBackend(PlantedBug bug) : bug_(std::move(bug)) {}
  std::string_view name() const override { return bug_.name; }
  Support Supports(const MatMulDesc& desc) const override { return reference_.Supports(desc); }
  // It computes with the reference backend, so it is held to the reference's arithmetic.
  Arithmetic DeclaredArithmetic(DType dtype) const override {
    return reference_.DeclaredArithmetic(dtype);
  }

 protected:
  StatusOr<std::unique_ptr<MatMulPrimitive>> PrepareProduct(const MatMulPlan& plan) override {
    return std::unique_ptr<MatMulPrimitive>(new PlantedPrimitive(plan, bug_.bug));
  }

 private:
  PlantedBug bug_;
  ReferenceBackend reference_;
};

}  // namespace

const std::vector<PlantedBug>& PlantedBugs() {
  static const std::vector<PlantedBug> bugs = {
      {Bug::kTransposedB, "transposed_b", "B read transposed"},
      {Bug::kWrongBroadcastOffset, "wrong_broadcast_offset", "wrong batch offset broadcasting"},
      {Bug::kDroppedTerm, "dropped_term", "last term of K dropped in the tail"},
      {Bug::kSkipLastRowOddM, "skip_last_row", "last row skipped for odd M"},
      {Bug::kTruncatedHalf, "truncated_half", "float16 and bfloat16 rounded by truncation"},
      {Bug::kSaturatingInts, "saturating_ints", "integers saturate instead of wrapping"},
      {Bug::kInt64ViaDouble, "int64_via_double", "64-bit integers passed through double"},
      {Bug::kUninitialisedK0, "uninitialised_k0", "Y not written for K = 0"},
      {Bug::kHalfAccumulation, "half_accumulation", "half-precision accumulation"},
      {Bug::kDoubleInFloat, "double_in_float", "double computed in float"},
      {Bug::kWrongAbove64K, "wrong_above_64k", "element 65,536 wrong above 65,536 elements"},
  };
  return bugs;
}

std::unique_ptr<Backend> MakePlantedBackend(const PlantedBug& bug) {
  return std::make_unique<PlantedBackend>(bug);
}

BackendRegistry PlantedRegistry(const PlantedBug& bug) {
  BackendRegistry registry;
  (void)registry.Register(
      bug.name, "planted bug: " + bug.why,
      [bug]() -> StatusOr<std::unique_ptr<Backend>> { return MakePlantedBackend(bug); });
  return registry;
}

}  // namespace mm::fuzz::testing
