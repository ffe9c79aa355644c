#include "mm/conformance/fuzz/problem.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "problem_values.h"

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

}  // namespace

// A matrix size: mostly small, often a kernel edge, sometimes 0.
std::int64_t Size(Rng& rng) {
  const double r = rng.Unit();
  if (r < 0.03) return 0;
  if (r < 0.50) return rng.Between(1, 8);
  const auto& edges = EdgeSizes();
  if (r < 0.85) return edges[rng.Below(14)];  // Up to 33.
  return rng.Pick(edges);
}

namespace {

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

// One side broadcasts (A when `a_small`): extent 1 or a missing leading axis where the other has
// an extent.
void BroadcastOneSide(Rng& rng, bool a_small, std::int64_t batch_rank, Shape& s) {
  Dims full = BatchDims(rng, batch_rank), small = full;
  for (auto& d : small) {
    if (rng.Chance(0.6)) d = 1;
  }
  if (rng.Chance(0.4)) small.erase(small.begin(), small.begin() + rng.Between(1, batch_rank));
  (a_small ? s.a_batch : s.b_batch) = small;
  (a_small ? s.b_batch : s.a_batch) = full;
}

// Both sides broadcast: each axis is 1 on one side or the other; one side sometimes an axis
// shorter.
void SplitOnes(Rng& rng, std::int64_t batch_rank, Shape& s) {
  Dims full = BatchDims(rng, batch_rank);
  s.a_batch = s.b_batch = full;
  for (std::size_t i = 0; i < full.size(); ++i) {
    (rng.Chance(0.5) ? s.a_batch : s.b_batch)[i] = 1;
  }
  if (rng.Chance(0.3)) {
    Dims& shorter = rng.Chance(0.5) ? s.a_batch : s.b_batch;
    shorter.erase(shorter.begin());
  }
}

// Far beyond the usual ranks: mostly extents of 1, a few of 2 on either side.
void FarBeyondUsualRanks(Rng& rng, Shape& s) {
  const std::int64_t rank = rng.Between(5, 14);
  s.a_batch = Dims(static_cast<std::size_t>(rank), 1);
  s.b_batch = s.a_batch;
  for (int i = 0; i < 3; ++i) {
    const auto axis = static_cast<std::size_t>(rng.Below(static_cast<std::uint64_t>(rank)));
    (rng.Chance(0.5) ? s.a_batch : s.b_batch)[axis] = 2;
  }
  if (rng.Chance(0.5)) s.b_batch.erase(s.b_batch.begin(), s.b_batch.begin() + 2);
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
    case 8:
      BroadcastOneSide(rng, form == 7, batch_rank, s);
      break;
    case 9:
      SplitOnes(rng, batch_rank, s);
      break;
    default:
      FarBeyondUsualRanks(rng, s);
      break;
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

}  // namespace

std::uint64_t Mix(std::uint64_t seed, std::uint64_t index, std::uint64_t salt) {
  Rng rng(seed ^ (index * 0xD1B54A32D192ED03ull) ^ (salt * 0x8CB92BA72F3D8DD7ull));
  return rng.Next();
}

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

  FillValues(rng, options, shape.k, shape.b_vector ? 1 : shape.n, p);
  return p;
}

}  // namespace mm::fuzz
