#include "mm/conformance/fuzz/problem.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mm::fuzz {

std::uint64_t Rng::Next() {
  std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::int64_t Rng::Between(std::int64_t lo, std::int64_t hi) {
  return lo + static_cast<std::int64_t>(Below(static_cast<std::uint64_t>(hi - lo) + 1));
}

double Rng::Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

const std::vector<std::int64_t>& EdgeSizes() {
  static const std::vector<std::int64_t> sizes = {1,  2,  3,  4,  5,  7,  8,  9,   15,  16,
                                                  17, 31, 32, 33, 63, 64, 65, 127, 128, 129};
  return sizes;
}

namespace {

// The shape of a problem before it becomes dims.
struct Shape {
  std::string form;
  bool a_vector = false, b_vector = false;
  Dims a_batch, b_batch;
  std::int64_t m = 1, n = 1, k = 1;

  Dims ADims() const {
    if (a_vector) return {k};
    Dims d = a_batch;
    d.push_back(m);
    d.push_back(k);
    return d;
  }
  Dims BDims() const {
    if (b_vector) return {k};
    Dims d = b_batch;
    d.push_back(k);
    d.push_back(n);
    return d;
  }
};

std::int64_t Product(const Dims& dims) {
  std::int64_t p = 1;
  for (std::int64_t d : dims) p *= d;
  return p;
}

// A matrix size: mostly small, often a kernel edge, sometimes 0.
std::int64_t Size(Rng& rng) {
  const double r = rng.Unit();
  if (r < 0.03) return 0;
  if (r < 0.50) return rng.Between(1, 8);
  const auto& edges = EdgeSizes();
  if (r < 0.85) return edges[rng.Below(14)];  // Up to 33.
  return rng.Pick(edges);
}

Dims BatchDims(Rng& rng, std::int64_t rank) {
  Dims dims(static_cast<std::size_t>(rank));
  for (auto& d : dims) d = rng.Chance(0.02) ? 0 : rng.Between(1, 4);
  return dims;
}

// One operand just past a path threshold: A ([m, k], n small), B ([k, n], m small) or Y ([m, n],
// k small), the other extents few so that products stay within 4 per element of it.
Shape ThresholdShape(Rng& rng) {
  Shape s;
  s.form = "size threshold";
  const std::int64_t count = rng.Pick(PathThresholds()) + rng.Between(1, 64);
  // The row length: an edge size from 65 up, so rows and chunks do not line up.
  static const std::vector<std::int64_t> kRows = {65, 127, 129, 255, 257, 511, 513};
  const std::int64_t first = rng.Pick(kRows);
  const std::int64_t second = (count + first - 1) / first;
  const std::int64_t small = rng.Between(1, 4);
  switch (rng.Below(3)) {
    case 0:
      s.m = first, s.k = second, s.n = small;
      break;
    case 1:
      s.k = first, s.n = second, s.m = small;
      break;
    default:
      s.m = first, s.n = second, s.k = small;
      break;
  }
  if (rng.Chance(0.5)) std::swap(s.m, s.n);
  return s;
}

// Fits `s` to the budget: halves the largest extent until each of A, B and Y holds at most
// `max_elements` and batch * M * N * K is at most `max_products` (sizes stay odd / edge-like:
// 129 -> 65 -> 33).
void Fit(Shape& s, std::int64_t max_elements, std::int64_t max_products,
         std::int64_t k_weight = 1) {
  for (;;) {
    const std::size_t rank = std::max(s.a_batch.size(), s.b_batch.size());
    std::int64_t batch = 1;
    for (std::size_t i = 0; i < rank; ++i) {
      const std::int64_t ai =
          i + s.a_batch.size() >= rank ? s.a_batch[i + s.a_batch.size() - rank] : 1;
      const std::int64_t bi =
          i + s.b_batch.size() >= rank ? s.b_batch[i + s.b_batch.size() - rank] : 1;
      batch *= (ai == 1 ? bi : ai);
    }
    const std::int64_t a_elems = Product(s.ADims()), b_elems = Product(s.BDims());
    const std::int64_t m = s.a_vector ? 1 : s.m, n = s.b_vector ? 1 : s.n;
    const std::int64_t y_elems = batch * m * n, products = y_elems * s.k;
    if (std::max({a_elems, b_elems, y_elems}) <= max_elements && products <= max_products) {
      break;
    }
    // K counts as K / k_weight: a k_weight above 1 halves M, N and the batch first.
    std::int64_t* largest = &s.k;
    std::int64_t largest_value = s.k / k_weight;
    const auto consider = [&](std::int64_t& d) {
      if (d > largest_value) largest = &d, largest_value = d;
    };
    consider(s.m);
    consider(s.n);
    for (Dims* batch_dims : {&s.a_batch, &s.b_batch}) {
      for (auto& d : *batch_dims) consider(d);
    }
    if (*largest <= 1) largest = &s.k;
    if (*largest <= 1) break;  // Cannot happen with sane limits; never loop forever.
    *largest = (*largest + 1) / 2;
    // Broadcasting needs equal extents where neither is 1: keep the other side in step.
    for (std::size_t i = 0; i < std::min(s.a_batch.size(), s.b_batch.size()); ++i) {
      auto& ad = s.a_batch[s.a_batch.size() - 1 - i];
      auto& bd = s.b_batch[s.b_batch.size() - 1 - i];
      if (ad != 1 && bd != 1 && ad != bd) ad = bd = std::min(ad, bd);
    }
  }
}

// A large shape (GeneratorOptions::large_products): K of 1,024 to 16,384 and M, N of hundreds to
// thousands, at powers of two and just off them (where blocking leaves a remainder), before Fit.
Shape LargeShape(Rng& rng) {
  static const std::vector<std::int64_t> kExtents = {1024, 2048, 4096, 8192, 16384};
  static const std::vector<std::int64_t> kOffsets = {0, 0, 0, -1, 1, 7};
  const auto extent = [&rng] {
    return std::clamp<std::int64_t>(rng.Pick(kExtents) + rng.Pick(kOffsets), 1, kLargeMaxK);
  };
  Shape s;
  s.k = extent();
  s.m = extent();
  s.n = extent();
  const Dims batch = {rng.Between(2, 4)};
  switch (rng.Below(8)) {
    case 0:
    case 1:
      s.form = "large 2-D";
      break;
    case 2:
      s.form = "large square";
      s.m = s.n = s.k = rng.Pick(kExtents);
      break;
    case 3:
      s.form = "large batched";
      s.a_batch = s.b_batch = batch;
      break;
    case 4:
      s.form = "large broadcast A";
      s.a_batch = rng.Chance(0.5) ? Dims{1} : Dims{};
      s.b_batch = batch;
      break;
    case 5:
      s.form = "large broadcast B";
      s.a_batch = batch;
      s.b_batch = rng.Chance(0.5) ? Dims{1} : Dims{};
      break;
    case 6:
      s.form = "large N-D x 1-D";
      s.a_batch = batch;
      s.b_vector = true;
      break;
    default:
      s.form = "large 1-D x 2-D";
      s.a_vector = true;
      break;
  }
  return s;
}

// Sets the vector sides and batch dims of form `form` (an index into MakeShape's kForms).
void ApplyForm(Rng& rng, std::size_t form, Shape& s) {
  const std::int64_t batch_rank = rng.Between(1, 4);
  switch (form) {
    case 0:
      s.a_vector = s.b_vector = true;
      break;
    case 1:
      s.a_vector = true;
      break;
    case 2:
      s.a_vector = true;
      s.b_batch = BatchDims(rng, batch_rank);
      break;
    case 3:
      s.b_vector = true;
      break;
    case 4:
      s.b_vector = true;
      s.a_batch = BatchDims(rng, batch_rank);
      break;
    case 5:
      break;
    case 6:
      s.a_batch = s.b_batch = BatchDims(rng, batch_rank);
      break;
    case 7:
    case 8: {
      // One side broadcasts: extent 1 or a missing leading axis where the other has an extent.
      Dims full = BatchDims(rng, batch_rank), small = full;
      for (auto& d : small) {
        if (rng.Chance(0.6)) d = 1;
      }
      if (rng.Chance(0.4)) small.erase(small.begin(), small.begin() + rng.Between(1, batch_rank));
      (form == 7 ? s.a_batch : s.b_batch) = small;
      (form == 7 ? s.b_batch : s.a_batch) = full;
      break;
    }
    case 9: {
      Dims full = BatchDims(rng, batch_rank);
      s.a_batch = s.b_batch = full;
      for (std::size_t i = 0; i < full.size(); ++i) {
        (rng.Chance(0.5) ? s.a_batch : s.b_batch)[i] = 1;
      }
      if (rng.Chance(0.3)) {
        Dims& shorter = rng.Chance(0.5) ? s.a_batch : s.b_batch;
        shorter.erase(shorter.begin());
      }
      break;
    }
    default: {
      // Far beyond the usual ranks: mostly extents of 1, a few of 2 on either side.
      const std::int64_t rank = rng.Between(5, 14);
      s.a_batch = Dims(static_cast<std::size_t>(rank), 1);
      s.b_batch = s.a_batch;
      for (int i = 0; i < 3; ++i) {
        const auto axis = static_cast<std::size_t>(rng.Below(static_cast<std::uint64_t>(rank)));
        (rng.Chance(0.5) ? s.a_batch : s.b_batch)[axis] = 2;
      }
      if (rng.Chance(0.5)) s.b_batch.erase(s.b_batch.begin(), s.b_batch.begin() + 2);
      break;
    }
  }
}

Shape MakeShape(Rng& rng, const GeneratorOptions& options) {
  if (options.large_products > 0) {
    Shape s = LargeShape(rng);
    // K is what the family is for: it keeps its extent longest, except in the square form.
    Fit(s, kLargeMaxElements, options.large_products, s.form == "large square" ? 1 : 16);
    return s;
  }
  if (options.threshold_chance > 0 && rng.Chance(options.threshold_chance)) {
    return ThresholdShape(rng);
  }
  static const std::vector<std::pair<const char*, int>> kForms = {
      {"1-D x 1-D", 1},      {"1-D x 2-D", 1},   {"1-D x N-D", 1},
      {"2-D x 1-D", 1},      {"N-D x 1-D", 1},   {"2-D", 3},
      {"batched", 2},        {"broadcast A", 2}, {"broadcast B", 2},
      {"broadcast both", 2}, {"high rank", 1}};
  int total = 0;
  for (const auto& f : kForms) total += f.second;
  int pick = static_cast<int>(rng.Below(static_cast<std::uint64_t>(total)));
  std::size_t form = 0;
  while (pick >= kForms[form].second) pick -= kForms[form++].second;
  Shape s;
  s.form = kForms[form].first;
  s.m = Size(rng);
  s.n = Size(rng);
  s.k = Size(rng);
  if (rng.Chance(0.04)) {  // Wide K: where float accumulation error and blocking show.
    s.k = rng.Between(1000, 5000);
    s.m = rng.Between(1, 4);
    s.n = rng.Between(1, 4);
  }
  ApplyForm(rng, form, s);
  Fit(s, options.max_elements, options.max_products);
  return s;
}

// Exponent range and smallest values of each float dtype.
struct FloatFacts {
  int max_exp, min_exp;  // Of normal numbers: max finite ~ 2^(max_exp+1), min normal 2^min_exp.
  double max_finite, min_normal, min_subnormal;
};

FloatFacts Facts(DType dtype) {
  switch (dtype) {
    case DType::kFloat16:
      return {15, -14, 65504.0, std::ldexp(1.0, -14), std::ldexp(1.0, -24)};
    case DType::kBFloat16:
      return {127, -126, static_cast<double>(std::numeric_limits<bfloat16>::max()),
              std::ldexp(1.0, -126), std::ldexp(1.0, -133)};
    case DType::kFloat:
      return {127, -126, std::numeric_limits<float>::max(), std::ldexp(1.0, -126),
              std::ldexp(1.0, -149)};
    default:
      return {1023, -1022, std::numeric_limits<double>::max(), std::ldexp(1.0, -1022),
              std::ldexp(1.0, -1074)};
  }
}

double Normal(Rng& rng) {
  // Irwin-Hall: 12 uniforms minus 6, mean 0, variance 1, no libm (bit-reproducible everywhere).
  double sum = 0;
  for (int i = 0; i < 12; ++i) sum += rng.Unit();
  return sum - 6;
}

// The value families, resolved from their names once per tensor rather than compared per element.
enum class Family {
  kSmallInt,
  kUniform,
  kNormal,
  kWideExponent,
  kExtremes,
  kUniformBits,
  kNearLimits
};

Family ParseFamily(const std::string& name) {
  if (name == "small-int") return Family::kSmallInt;
  if (name == "uniform") return Family::kUniform;
  if (name == "normal") return Family::kNormal;
  if (name == "wide-exponent") return Family::kWideExponent;
  if (name == "uniform-bits") return Family::kUniformBits;
  if (name == "near-limits") return Family::kNearLimits;
  return Family::kExtremes;
}

double FloatValue(Rng& rng, Family family, const FloatFacts& f) {
  switch (family) {
    case Family::kSmallInt:
      return static_cast<double>(rng.Between(-3, 3));
    case Family::kUniform:
      return 2 * rng.Unit() - 1;
    case Family::kNormal:
      return Normal(rng);
    case Family::kWideExponent: {
      const int e = static_cast<int>(rng.Between(f.min_exp / 2, f.max_exp / 2));
      return (rng.Chance(0.5) ? -1 : 1) * std::ldexp(1 + rng.Unit(), e);
    }
    default:
      break;
  }
  // extremes: the edges of the type, mixed with ordinary values.
  const double sign = rng.Chance(0.5) ? -1 : 1;
  switch (rng.Below(10)) {
    case 0:
      return sign * f.max_finite;
    case 1:
      return sign * f.min_normal;
    case 2:
      return sign * f.min_subnormal;
    case 3:
      return sign * (f.min_normal - f.min_subnormal);  // Largest subnormal.
    case 4:
      return sign * 0.0;
    case 5:
      return sign * std::ldexp(1 + rng.Unit(), f.max_exp / 2);
    default:
      return 2 * rng.Unit() - 1;
  }
}

template <class T>
void FillFloats(Rng& rng, const std::string& family_name, DType dtype, Tensor& t) {
  const FloatFacts f = Facts(dtype);
  const Family family = ParseFamily(family_name);
  T* data = t.Data<T>();
  for (std::int64_t i = 0; i < t.NumElements(); ++i) {
    data[i] = RoundFromDouble<T>(FloatValue(rng, family, f));
  }
}

template <class T>
void FillInts(Rng& rng, const std::string& family_name, Tensor& t) {
  using L = std::numeric_limits<T>;
  const Family family = ParseFamily(family_name);
  T* data = t.Data<T>();
  for (std::int64_t i = 0; i < t.NumElements(); ++i) {
    if (family == Family::kSmallInt) {
      data[i] = static_cast<T>(L::is_signed ? rng.Between(-3, 3) : rng.Between(0, 6));
    } else if (family == Family::kUniformBits) {
      data[i] = static_cast<T>(rng.Next());
    } else {  // near-limits
      static constexpr T kSmall[] = {0, 1, 2, 3};
      switch (rng.Below(6)) {
        case 0:
          data[i] = L::max();
          break;
        case 1:
          data[i] = static_cast<T>(L::max() - 1);
          break;
        case 2:
          data[i] = L::min();
          break;
        case 3:
          data[i] = static_cast<T>(L::min() + 1);
          break;
        default:
          data[i] =
              static_cast<T>(kSmall[rng.Below(4)] * (L::is_signed && rng.Chance(0.5) ? -1 : 1));
      }
    }
  }
}

// Mirrors the first half of every A row into the second half, negated, and repeats the first half
// of B's rows in the second: every pair a*b + (-a)*b cancels exactly, so the exact result is tiny
// (0, or the odd K's last term) while sum |a||b| is large.
template <class T>
void Cancel(Tensor& a, Tensor& b, std::int64_t k, std::int64_t n) {
  if (k < 2 || n == 0) return;  // Nothing to cancel in an empty B.
  const std::int64_t h = k / 2;
  T* ad = a.Data<T>();
  for (std::int64_t row = 0; row < a.NumElements() / k; ++row) {
    for (std::int64_t p = 0; p < h; ++p) ad[row * k + h + p] = -ad[row * k + p];
  }
  T* bd = b.Data<T>();
  for (std::int64_t mat = 0; mat < b.NumElements() / (k * n); ++mat) {
    for (std::int64_t p = 0; p < h; ++p) {
      std::copy_n(bd + (mat * k + p) * n, n, bd + (mat * k + h + p) * n);
    }
  }
}

template <class T>
void Sprinkle(Rng& rng, Tensor& t) {
  if (t.NumElements() == 0) return;
  const double specials[] = {std::numeric_limits<double>::quiet_NaN(),
                             std::numeric_limits<double>::infinity(),
                             -std::numeric_limits<double>::infinity()};
  const std::int64_t count = rng.Between(1, 3);
  for (std::int64_t i = 0; i < count; ++i) {
    t.Data<T>()[rng.Below(static_cast<std::uint64_t>(t.NumElements()))] =
        RoundFromDouble<T>(specials[rng.Below(3)]);
  }
}

std::uint64_t Mix(std::uint64_t seed, std::uint64_t index, std::uint64_t salt) {
  Rng rng(seed ^ (index * 0xD1B54A32D192ED03ull) ^ (salt * 0x8CB92BA72F3D8DD7ull));
  return rng.Next();
}

}  // namespace

const std::vector<std::int64_t>& PathThresholds() {
  static const std::vector<std::int64_t> kThresholds = {
      std::int64_t{1} << 16, std::int64_t{1} << 17, std::int64_t{1} << 18};
  return kThresholds;
}

std::int64_t LargeProductsFor(double seconds, int threads) {
  if (!(seconds > 0)) return kLargeDefaultProducts;
  const double products = seconds / 4 * std::max(threads, 1) * 0x1p30;
  std::int64_t budget = std::int64_t{1} << 24;
  while (budget < kLargeDefaultProducts && static_cast<double>(budget * 2) <= products) budget *= 2;
  return budget;
}

Problem GenerateProblem(std::uint64_t seed, std::int64_t index, const GeneratorOptions& options) {
  const std::vector<DType> all(kAllDTypes.begin(), kAllDTypes.end());
  const std::vector<DType>& dtypes = options.dtypes.empty() ? all : options.dtypes;
  const auto u_index = static_cast<std::uint64_t>(index);
  const DType dtype = dtypes[Mix(seed, u_index, 1) % dtypes.size()];
  Rng rng(Mix(seed, u_index, 2 + static_cast<std::uint64_t>(dtype)));

  Problem p;
  p.seed = seed;
  p.index = index;
  const Shape shape = MakeShape(rng, options);
  p.form = shape.form;
  p.a = Tensor::Create(dtype, shape.ADims()).value();
  p.b = Tensor::Create(dtype, shape.BDims()).value();

  if (IsFloat(dtype)) {
    static const std::vector<std::string> kFamilies = {"small-int",     "uniform",      "normal",
                                                       "wide-exponent", "cancellation", "extremes"};
    std::string family = rng.Pick(kFamilies);
    if (!options.specials && family == "extremes") family = "wide-exponent";
    const std::string fill =
        family == "cancellation" ? (rng.Chance(0.5) ? "uniform" : "normal") : family;
    const bool sprinkle = options.specials && rng.Chance(0.08);
    VisitDType(dtype, [&](auto tag) {
      using T = CppType<decltype(tag)::value>;
      if constexpr (!std::is_integral_v<T>) {
        FillFloats<T>(rng, fill, dtype, p.a);
        FillFloats<T>(rng, fill, dtype, p.b);
        if (family == "cancellation") Cancel<T>(p.a, p.b, shape.k, shape.b_vector ? 1 : shape.n);
        if (sprinkle) Sprinkle<T>(rng, rng.Chance(0.5) ? p.a : p.b);
      }
    });
    p.values = family + (sprinkle ? "+specials" : "");
  } else {
    static const std::vector<std::string> kFamilies = {"small-int", "uniform-bits", "near-limits"};
    p.values = rng.Pick(kFamilies);
    VisitDType(dtype, [&](auto tag) {
      using T = CppType<decltype(tag)::value>;
      if constexpr (std::is_integral_v<T>) {
        FillInts<T>(rng, p.values, p.a);
        FillInts<T>(rng, p.values, p.b);
      }
    });
  }
  return p;
}

}  // namespace mm::fuzz
