#include "mm/conformance/self_check/planted_backends.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>

#include "mm/backends/reference/reference_backend.h"

namespace mm::self_check {
namespace {

using conformance::ToleranceRule;
using conformance::Verdict;

template <class T>
constexpr bool kIsHalf = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;

template <class T>
double Widen(T value) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<double>(value);
  } else {
    return ToDouble(value);
  }
}

// `value` rounded toward zero to T (the float types): the nearest-even result, stepped one place
// toward zero when it is farther from zero than `value`. Sign-magnitude bit patterns make "one
// place toward zero" the pattern minus one (and an overflow to infinity the largest finite).
template <class T>
T TowardZero(double value) {
  T rounded = RoundFromDouble<T>(value);
  if (std::isnan(value) || std::fabs(ToDouble(rounded)) <= std::fabs(value)) return rounded;
  if constexpr (kIsHalf<T>) {
    return T::FromBits(static_cast<std::uint16_t>(rounded.bits() - 1));
  } else if constexpr (std::is_same_v<T, float>) {
    return std::bit_cast<float>(std::bit_cast<std::uint32_t>(rounded) - 1);
  } else {
    return std::bit_cast<double>(std::bit_cast<std::uint64_t>(rounded) - 1);
  }
}

// For every element of Y: acc = step(acc, a_k, b_k) over k from acc = Acc{}, then Y = finish(acc).
template <class T, class Acc, class Step, class Finish>
void EachDot(const MatMulPlan& p, TensorView a, TensorView b, MutableTensorView y, Step step,
             Finish finish) {
  for (std::int64_t i = 0; i < p.batch; ++i) {
    const auto [ao, bo] = p.BatchOffsets(i);
    for (std::int64_t r = 0; r < p.m; ++r) {
      for (std::int64_t c = 0; c < p.n; ++c) {
        Acc acc{};
        for (std::int64_t k = 0; k < p.k; ++k) {
          acc = step(acc, a.Data<T>()[ao + r * p.k + k], b.Data<T>()[bo + k * p.n + c]);
        }
        y.Data<T>()[(i * p.m + r) * p.n + c] = finish(acc);
      }
    }
  }
}

Tensor Copy(TensorView from) {
  Tensor out = Tensor::Create(from.dtype, Dims(from.dims.begin(), from.dims.end())).value();
  std::memcpy(out.raw_data(), from.data, out.NumBytes());
  return out;
}

// The inputs the first call with each desc got (kFirstDataSetInputs), shared by the primitives of
// one backend instance.
struct InputCache {
  std::map<std::string, std::pair<Tensor, Tensor>> by_desc;
};

// The reference's answer for (a, b), written into y.
Status Correct(TensorView a, TensorView b, MutableTensorView y) {
  ReferenceBackend reference;
  MM_ASSIGN_OR_RETURN(Tensor out, MatMul(reference, a, b));
  std::memcpy(y.data, out.raw_data(), out.NumBytes());
  return OkStatus();
}

// kTransposedB: B read as if stored transposed (each matrix K x N read as N x K).
Tensor TransposedB(const MatMulPlan& p, TensorView b) {
  const std::size_t elem = DTypeSize(p.desc.dtype);
  Tensor bt = Copy(b);
  const auto* src = static_cast<const char*>(b.data);
  auto* dst = static_cast<char*>(bt.raw_data());
  for (std::int64_t mat = 0; mat < b.NumElements() / std::max<std::int64_t>(1, p.k * p.n); ++mat) {
    for (std::int64_t k = 0; k < p.k; ++k) {
      for (std::int64_t j = 0; j < p.n; ++j) {
        std::memcpy(dst + ((mat * p.k + k) * p.n + j) * elem,
                    src + (mat * p.k * p.n + j * p.k + k) * elem, elem);
      }
    }
  }
  return bt;
}

// kDroppedTerm: A with the last term of each row zeroed (a remainder loop that misses one).
Tensor WithoutLastTerm(const MatMulPlan& p, TensorView a) {
  const std::size_t elem = DTypeSize(p.desc.dtype);
  Tensor a_copy = Copy(a);
  for (std::int64_t row = 0; row < a_copy.NumElements() / p.k; ++row) {
    std::memset(static_cast<char*>(a_copy.raw_data()) + (row * p.k + p.k - 1) * elem, 0, elem);
  }
  return a_copy;
}

// The faults of a float accumulation (rounding, accumulator type, lost NaNs) on T; true when
// `fault` applies to T and Y was written.
template <class T>
bool WrongFloatSum(Fault fault, const MatMulPlan& p, TensorView a, TensorView b,
                   MutableTensorView y) {
  const bool half = kIsHalf<T>, single = std::is_same_v<T, float>;
  auto keep = [](T acc) { return acc; };
  auto truncating = [](T acc, T x, T w) {
    return TowardZero<T>(ToDouble(acc) + Widen(x) * Widen(w));
  };
  if ((fault == Fault::kTruncatedHalf && half) || (fault == Fault::kTruncatedFloat && single)) {
    EachDot<T, T>(p, a, b, y, truncating, keep);
  } else if (fault == Fault::kHalfAccumulation && half) {
    EachDot<T, T>(
        p, a, b, y,
        [](T acc, T x, T w) { return RoundFromDouble<T>(ToDouble(acc) + Widen(x) * Widen(w)); },
        keep);
  } else if (fault == Fault::kNanLost) {
    EachDot<T, double>(
        p, a, b, y,
        [](double acc, T x, T w) {
          return Widen(x) == 0 || Widen(w) == 0 ? acc : acc + Widen(x) * Widen(w);
        },
        [](double acc) { return RoundFromDouble<T>(acc); });
  } else if (fault == Fault::kTruncatedHalfResult && half) {
    EachDot<T, double>(
        p, a, b, y, [](double acc, T x, T w) { return acc + Widen(x) * Widen(w); },
        [](double acc) { return TowardZero<T>(static_cast<float>(acc)); });
  } else if (fault == Fault::kDoubleInFloat && std::is_same_v<T, double>) {
    EachDot<T, float>(
        p, a, b, y,
        [](float acc, T x, T w) { return acc + static_cast<float>(x) * static_cast<float>(w); },
        [](float acc) { return static_cast<T>(acc); });
  } else {
    return false;
  }
  return true;
}

// The faults of an integer accumulation (saturating, through double) on T; true when `fault`
// applies to T and Y was written.
template <class T>
bool WrongIntegerSum(Fault fault, const MatMulPlan& p, TensorView a, TensorView b,
                     MutableTensorView y) {
  using L = std::numeric_limits<T>;
  if (fault == Fault::kSaturatingInts) {
    EachDot<T, __int128>(
        p, a, b, y,
        [](__int128 acc, T x, T w) {
          return std::clamp<__int128>(acc + static_cast<__int128>(x) * static_cast<__int128>(w),
                                      L::min(), L::max());
        },
        [](__int128 acc) { return static_cast<T>(acc); });
    return true;
  }
  if (fault == Fault::kInt64ViaDouble && sizeof(T) == 8) {
    EachDot<T, double>(
        p, a, b, y, [](double acc, T x, T w) { return acc + Widen(x) * Widen(w); },
        [](double acc) {
          // Clamped: converting an out-of-range double is undefined.
          return acc <= static_cast<double>(L::min())   ? L::min()
                 : acc >= static_cast<double>(L::max()) ? L::max()
                                                        : static_cast<T>(acc);
        });
    return true;
  }
  return false;
}

// A wrong sum of `fault` (WrongFloatSum, WrongIntegerSum) for the plan's dtype; false when the
// fault does not apply to it (Y is then not written).
bool WrongSum(Fault fault, const MatMulPlan& p, TensorView a, TensorView b, MutableTensorView y) {
  bool handled = false;
  VisitDType(p.desc.dtype, [&](auto tag) {
    using T = CppType<decltype(tag)::value>;
    if constexpr (std::is_integral_v<T>) {
      handled = WrongIntegerSum<T>(fault, p, a, b, y);
    } else {
      handled = WrongFloatSum<T>(fault, p, a, b, y);
    }
  });
  return handled;
}

// kNanForSmall, kNanNearMax: the correct Y with NaN for its tiny or its huge elements.
Status NanForSomeValues(Fault fault, const MatMulPlan& p, TensorView a, TensorView b,
                        MutableTensorView y) {
  MM_RETURN_IF_ERROR(Correct(a, b, y));
  VisitDType(p.desc.dtype, [&](auto tag) {
    using T = CppType<decltype(tag)::value>;
    if constexpr (!std::is_integral_v<T>) {
      const double top = Widen(std::numeric_limits<T>::max()) / 2;
      for (std::int64_t i = 0; i < p.y_elements; ++i) {
        const double v = std::fabs(Widen(y.Data<T>()[i]));
        const bool hit =
            fault == Fault::kNanForSmall ? v > 0 && v < 1e-30 : std::isfinite(v) && v > top;
        if (hit) y.Data<T>()[i] = std::numeric_limits<T>::quiet_NaN();
      }
    }
  });
  return OkStatus();
}

// kUnwrittenZero, kUnwrittenNonzero: the correct Y but for rows never written (those of an
// all-zero row of A, or the last of an odd M).
Status UnwrittenRows(Fault fault, const MatMulPlan& p, TensorView a, TensorView b,
                     MutableTensorView y) {
  const std::size_t elem = DTypeSize(p.desc.dtype);
  ReferenceBackend reference;
  MM_ASSIGN_OR_RETURN(Tensor out, MatMul(reference, a, b));
  const std::vector<char> zero_row(static_cast<std::size_t>(p.k) * elem, 0);
  for (std::int64_t i = 0; i < p.batch; ++i) {
    const std::int64_t a_offset = p.BatchOffsets(i).first;
    for (std::int64_t r = 0; r < p.m; ++r) {
      const bool skip =
          fault == Fault::kUnwrittenZero
              ? std::memcmp(static_cast<const char*>(a.data) + (a_offset + r * p.k) * elem,
                            zero_row.data(), zero_row.size()) == 0
              : p.m % 2 == 1 && p.m > 1 && r == p.m - 1;
      if (skip) continue;
      const std::size_t at = static_cast<std::size_t>((i * p.m + r) * p.n) * elem;
      std::memcpy(static_cast<char*>(y.data) + at, static_cast<const char*>(out.raw_data()) + at,
                  static_cast<std::size_t>(p.n) * elem);
    }
  }
  return OkStatus();
}

// kWrongBatchOffset: each matrix of the batch from A and B by its index modulo their own batch
// counts, ignoring how numpy broadcasts them.
Status WrongBatchOffsets(const MatMulPlan& p, TensorView a, TensorView b, MutableTensorView y) {
  const DType dtype = p.desc.dtype;
  const std::size_t elem = DTypeSize(dtype);
  ReferenceBackend reference;
  MM_ASSIGN_OR_RETURN(MatMulPlan mat_plan, PlanMatMul({dtype, {p.m, p.k}, {p.k, p.n}}));
  MM_ASSIGN_OR_RETURN(auto primitive, reference.Prepare(mat_plan));
  const std::int64_t a_count = p.a_elements / std::max<std::int64_t>(1, p.m * p.k);
  const std::int64_t b_count = p.b_elements / std::max<std::int64_t>(1, p.k * p.n);
  const Dims a_dims = {p.m, p.k}, b_dims = {p.k, p.n}, y_dims = {p.m, p.n};
  for (std::int64_t i = 0; i < p.batch; ++i) {
    TensorView a_mat{dtype, a_dims,
                     static_cast<const char*>(a.data) + (i % a_count) * p.m * p.k * elem};
    TensorView b_mat{dtype, b_dims,
                     static_cast<const char*>(b.data) + (i % b_count) * p.k * p.n * elem};
    MutableTensorView y_mat{dtype, y_dims, static_cast<char*>(y.data) + i * p.m * p.n * elem};
    MM_RETURN_IF_ERROR(primitive->Execute(a_mat, b_mat, y_mat));
  }
  return OkStatus();
}

// kWritePastY: the correct Y, and the element after it flipped.
Status WritePastY(const MatMulPlan& p, TensorView a, TensorView b, MutableTensorView y) {
  const std::size_t elem = DTypeSize(p.desc.dtype);
  MM_RETURN_IF_ERROR(Correct(a, b, y));
  // Y sits between the harness's guards, so this write changes a guard byte and nothing else.
  auto* past = static_cast<unsigned char*>(y.data) + p.y_elements * elem;
  for (std::size_t i = 0; i < elem; ++i) past[i] = static_cast<unsigned char>(~past[i]);
  return OkStatus();
}

// kWrongAbove64K: the first element past 64Ki of A and B read as zero, and the first element past
// 64Ki of Y never written (a 16-bit index wrapping).
Status WrongAbove64K(const MatMulPlan& p, TensorView a, TensorView b, MutableTensorView y) {
  constexpr std::int64_t kChunk = std::int64_t{1} << 16;
  const std::size_t elem = DTypeSize(p.desc.dtype);
  auto zeroed = [&](TensorView t) {
    Tensor copy = Copy(t);
    if (copy.NumElements() > kChunk) {
      std::memset(static_cast<char*>(copy.raw_data()) + kChunk * elem, 0, elem);
    }
    return copy;
  };
  const Tensor a0 = zeroed(a), b0 = zeroed(b);
  ReferenceBackend reference;
  MM_ASSIGN_OR_RETURN(Tensor out, MatMul(reference, a0.view(), b0.view()));
  if (p.y_elements > kChunk) {
    // Every element but the first of the second chunk.
    std::memcpy(y.data, out.raw_data(), kChunk * elem);
    std::memcpy(static_cast<char*>(y.data) + (kChunk + 1) * elem,
                static_cast<const char*>(out.raw_data()) + (kChunk + 1) * elem,
                (p.y_elements - kChunk - 1) * elem);
  } else {
    std::memcpy(y.data, out.raw_data(), out.NumBytes());
  }
  return OkStatus();
}

class PlantedPrimitive final : public MatMulPrimitive {
 public:
  PlantedPrimitive(MatMulPlan plan, Fault fault, std::shared_ptr<InputCache> cache)
      : MatMulPrimitive(std::move(plan)), fault_(fault), cache_(std::move(cache)) {}

 protected:
  // The fault where it applies to this plan; elsewhere the correct answer.
  Status Run(TensorView a, TensorView b, MutableTensorView y) override {
    const MatMulPlan& p = plan();
    switch (fault_) {
      case Fault::kNone:
        break;
      case Fault::kTransposedB:
        return Correct(a, TransposedB(p, b).view(), y);
      case Fault::kDroppedTerm:
        if (p.k <= 16 || p.k % 16 == 0) break;
        return Correct(WithoutLastTerm(p, a).view(), b, y);
      case Fault::kNanForSmall:
      case Fault::kNanNearMax:
        if (!IsFloat(p.desc.dtype)) break;
        return NanForSomeValues(fault_, p, a, b, y);
      case Fault::kUnwrittenZero:
      case Fault::kUnwrittenNonzero:
        return UnwrittenRows(fault_, p, a, b, y);
      case Fault::kWrongBatchOffset:
        return WrongBatchOffsets(p, a, b, y);
      case Fault::kFirstDataSetInputs:
        return FirstDataSetInputs(a, b, y);
      case Fault::kCrash:
        if (p.m == 1 && p.n == 1) std::raise(SIGSEGV);
        break;
      case Fault::kWritePastY:
        return WritePastY(p, a, b, y);
      case Fault::kUnwrittenK0:
        if (p.k == 0) return OkStatus();  // Never writes Y.
        break;
      case Fault::kWrongAbove64K:
        if (std::max({p.a_elements, p.b_elements, p.y_elements}) <= std::int64_t{1} << 16) break;
        return WrongAbove64K(p, a, b, y);
      default:  // The wrong sums.
        if (WrongSum(fault_, p, a, b, y)) return OkStatus();
        break;
    }
    return Correct(a, b, y);
  }

 private:
  // kFirstDataSetInputs: the answer for the inputs the first call with this desc got.
  Status FirstDataSetInputs(TensorView a, TensorView b, MutableTensorView y) {
    const MatMulPlan& p = plan();
    const std::string key = std::string(DTypeName(p.desc.dtype)) + DimsToString(p.desc.a_dims) +
                            DimsToString(p.desc.b_dims);
    auto it = cache_->by_desc.find(key);
    if (it == cache_->by_desc.end()) {
      it = cache_->by_desc.emplace(key, std::make_pair(Copy(a), Copy(b))).first;
    }
    return Correct(it->second.first.view(), it->second.second.view(), y);
  }

  Fault fault_;
  std::shared_ptr<InputCache> cache_;
};

class Planted final : public Backend {
 public:
  explicit Planted(PlantedBackend planted) : planted_(std::move(planted)) {}
  std::string_view name() const override { return planted_.name; }
  Support Supports(const MatMulDesc& desc) const override { return reference_.Supports(desc); }
  // It computes with the reference backend, so it is held to the reference's arithmetic; the
  // half-precision accumulator declares float32, as a kernel that claims a wide accumulator does.
  Arithmetic DeclaredArithmetic(DType dtype) const override {
    if (planted_.fault == Fault::kHalfAccumulation &&
        (dtype == DType::kFloat16 || dtype == DType::kBFloat16)) {
      return {DType::kFloat, false};
    }
    return reference_.DeclaredArithmetic(dtype);
  }

 protected:
  StatusOr<std::unique_ptr<MatMulPrimitive>> PrepareProduct(const MatMulPlan& plan) override {
    return std::unique_ptr<MatMulPrimitive>(new PlantedPrimitive(plan, planted_.fault, cache_));
  }

 private:
  PlantedBackend planted_;
  ReferenceBackend reference_;
  std::shared_ptr<InputCache> cache_ = std::make_shared<InputCache>();
};

}  // namespace

const std::vector<PlantedBackend>& AllPlantedBackends() {
  static const std::vector<PlantedBackend> all = {
      {Fault::kNone, "correct", "the reference's answer through the same wrapper (the control)",
       Verdict::kPass, ToleranceRule::kOnnx},
      {Fault::kTransposedB, "transposed_b", "B read transposed", Verdict::kFail,
       ToleranceRule::kOnnx},
      {Fault::kDroppedTerm, "dropped_term", "the last term of K dropped when K > 16, K % 16 != 0",
       Verdict::kFail, ToleranceRule::kOnnx},
      {Fault::kTruncatedHalf, "truncated_half", "float16/bfloat16 partial sums rounded toward zero",
       Verdict::kFail, ToleranceRule::kOnnx},
      {Fault::kTruncatedFloat, "truncated_float", "float partial sums rounded toward zero",
       Verdict::kImprecise, ToleranceRule::kBound},
      {Fault::kNanLost, "nan_lost", "terms with a zero factor skipped: NaN * 0 lost",
       Verdict::kFail, ToleranceRule::kOnnx},
      {Fault::kNanForSmall, "nan_for_small", "NaN where |Y| < 1e-30", Verdict::kFail,
       ToleranceRule::kOnnx},
      {Fault::kNanNearMax, "nan_near_max", "NaN where |Y| is near the largest finite value",
       Verdict::kFail, ToleranceRule::kOnnx},
      {Fault::kUnwrittenZero, "unwritten_zero", "rows of Y left unwritten where A's row is zero",
       Verdict::kFail, ToleranceRule::kOnnx},
      {Fault::kUnwrittenNonzero, "unwritten_nonzero", "the last row of Y unwritten for odd M",
       Verdict::kFail, ToleranceRule::kOnnx},
      {Fault::kWrongBatchOffset, "wrong_batch_offset",
       "batch entry i reads matrix i modulo the count", Verdict::kFail, ToleranceRule::kOnnx},
      {Fault::kFirstDataSetInputs, "first_data_set_inputs",
       "every call gets the first call's inputs of its shape", Verdict::kFail,
       ToleranceRule::kOnnx},
      {Fault::kSaturatingInts, "saturating_ints", "integer sums saturate instead of wrapping",
       Verdict::kFail, ToleranceRule::kOnnx},
      {Fault::kInt64ViaDouble, "int64_via_double", "64-bit integers computed through double",
       Verdict::kFail, ToleranceRule::kOnnx},
      {Fault::kHalfAccumulation, "half_accumulation",
       "float16/bfloat16 accumulated in their own type, float32 declared", Verdict::kFail,
       ToleranceRule::kOnnx},
      {Fault::kDoubleInFloat, "double_in_float", "double computed in float", Verdict::kImprecise,
       ToleranceRule::kBound},
      {Fault::kCrash, "crash", "SIGSEGV when M = N = 1", Verdict::kError, ToleranceRule::kOnnx,
       /*in_self_check=*/true, "crashed: "},
      {Fault::kWritePastY, "write_past_y", "one element written past the end of Y", Verdict::kError,
       ToleranceRule::kOnnx, /*in_self_check=*/true, " past the end of Y"},
      {Fault::kTruncatedHalfResult, "truncated_half_result",
       "float16/bfloat16 results rounded toward zero", Verdict::kFail, ToleranceRule::kOnnx,
       /*in_self_check=*/false},
      {Fault::kUnwrittenK0, "unwritten_k0", "Y not written for K = 0", Verdict::kFail,
       ToleranceRule::kOnnx, /*in_self_check=*/false},
      {Fault::kWrongAbove64K, "wrong_above_64k", "element 65,536 wrong above 65,536 elements",
       Verdict::kFail, ToleranceRule::kOnnx, /*in_self_check=*/false},
  };
  return all;
}

const std::vector<PlantedBackend>& PlantedBackends() {
  static const std::vector<PlantedBackend> self_check = [] {
    std::vector<PlantedBackend> out;
    for (const PlantedBackend& planted : AllPlantedBackends()) {
      if (planted.in_self_check) out.push_back(planted);
    }
    return out;
  }();
  return self_check;
}

const PlantedBackend& PlantedBackendOf(Fault fault) {
  for (const PlantedBackend& planted : AllPlantedBackends()) {
    if (planted.fault == fault) return planted;
  }
  // Every Fault has its row (the self-check's and the fuzzer's tests list them all).
  std::abort();
}

std::unique_ptr<Backend> MakePlantedBackend(const PlantedBackend& planted) {
  return std::make_unique<Planted>(planted);
}

namespace {

void Register(BackendRegistry& registry, const PlantedBackend& planted) {
  (void)registry.Register(
      planted.name, "planted fault: " + planted.why,
      [planted]() -> StatusOr<std::unique_ptr<Backend>> { return MakePlantedBackend(planted); });
}

}  // namespace

BackendRegistry PlantedRegistry() {
  BackendRegistry registry;
  for (const PlantedBackend& planted : PlantedBackends()) Register(registry, planted);
  return registry;
}

BackendRegistry PlantedRegistry(const PlantedBackend& planted) {
  BackendRegistry registry;
  Register(registry, planted);
  return registry;
}

}  // namespace mm::self_check
