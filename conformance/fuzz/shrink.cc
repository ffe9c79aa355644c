#include "mm/conformance/fuzz/shrink.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

namespace mm::fuzz {

Tensor Clone(const Tensor& tensor) {
  Tensor copy = Tensor::Create(tensor.dtype(), tensor.dims()).value();
  if (tensor.NumBytes() > 0) std::memcpy(copy.raw_data(), tensor.raw_data(), tensor.NumBytes());
  return copy;
}

Tensor SliceAxis(const Tensor& tensor, std::size_t axis, std::int64_t start, std::int64_t length) {
  const Dims& dims = tensor.dims();
  Dims out_dims = dims;
  out_dims[axis] = length;
  Tensor out = Tensor::Create(tensor.dtype(), out_dims).value();
  std::int64_t outer = 1, inner = 1;
  for (std::size_t i = 0; i < axis; ++i) outer *= dims[i];
  for (std::size_t i = axis + 1; i < dims.size(); ++i) inner *= dims[i];
  const std::size_t elem = DTypeSize(tensor.dtype());
  const auto* src = static_cast<const char*>(tensor.raw_data());
  auto* dst = static_cast<char*>(out.raw_data());
  const std::size_t block = static_cast<std::size_t>(length * inner) * elem;
  for (std::int64_t o = 0; o < outer && block > 0; ++o) {
    std::memcpy(dst + static_cast<std::size_t>(o) * block,
                src + static_cast<std::size_t>((o * dims[axis] + start) * inner) * elem, block);
  }
  return out;
}

std::vector<std::pair<std::int64_t, std::int64_t>> HalvingRanges(std::int64_t e) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  if (e >= 2) {
    out.push_back({0, (e + 1) / 2});
    out.push_back({e / 2, e - e / 2});
    if (e > 2) {
      out.push_back({0, e - 1});
      out.push_back({1, e - 1});
    }
  }
  return out;
}

namespace {

Tensor WithDims(const Tensor& tensor, Dims dims) {
  Tensor out = Tensor::Create(tensor.dtype(), std::move(dims)).value();
  if (out.NumBytes() > 0) std::memcpy(out.raw_data(), tensor.raw_data(), out.NumBytes());
  return out;
}

bool SameBytes(const Tensor& x, const Tensor& y) {
  return x.dims() == y.dims() &&
         (x.NumBytes() == 0 || std::memcmp(x.raw_data(), y.raw_data(), x.NumBytes()) == 0);
}

// Every finite value rounded to an integer in [-4, 4]; NaN and infinities kept.
Tensor Simplified(const Tensor& t) {
  Tensor out = Clone(t);
  VisitDType(t.dtype(), [&](auto tag) {
    using T = CppType<decltype(tag)::value>;
    T* d = out.Data<T>();
    for (std::int64_t i = 0; i < out.NumElements(); ++i) {
      if constexpr (std::is_integral_v<T>) {
        if constexpr (std::is_signed_v<T>) {
          d[i] = std::clamp<T>(d[i], -4, 4);
        } else {
          d[i] = std::min<T>(d[i], 4);
        }
      } else {
        const double v = ToDouble(d[i]);
        if (std::isfinite(v)) d[i] = RoundFromDouble<T>(std::clamp(std::nearbyint(v), -4.0, 4.0));
      }
    }
  });
  return out;
}

Tensor Zeroed(const Tensor& t, std::int64_t start, std::int64_t count) {
  Tensor out = Clone(t);
  const std::size_t elem = DTypeSize(t.dtype());
  std::memset(static_cast<char*>(out.raw_data()) + static_cast<std::size_t>(start) * elem, 0,
              static_cast<std::size_t>(count) * elem);
  return out;
}

// One Shrink: the smallest failing problem so far, and the steps that try to make it smaller.
class Shrinker {
 public:
  using Clock = std::chrono::steady_clock;

  Shrinker(Backend& backend, const Tensor& a, const Tensor& b, const ShrinkOptions& options)
      : backend_(backend),
        options_(options),
        deadline_(Clock::now() +
                  std::chrono::duration_cast<Clock::duration>(
                      std::chrono::duration<double>(std::max(0.0, options.seconds)))),
        r_{Clone(a), Clone(b), {}, 0, false} {}

  ShrinkResult Run() {
    r_.outcome =
        RunOne(backend_, r_.a, r_.b, options_.arithmetic, options_.tolerance, options_.cancel);
    // Stopped before or during the first judgement (the oracle returns kCancelled): the outcome
    // says nothing of the problem, and shrinking it is not to begin.
    if (Cancelled()) {
      r_.timed_out = true;
      return Take();
    }
    if (options_.seconds <= 0 || !options_.keeps_failing(r_.outcome.verdict)) return Take();
    bool progress = true;
    while (progress && !r_.timed_out) {
      progress = false;
      for (bool on_a : {true, false}) progress |= ShrinkBatchAxes(on_a);
      for (bool on_a : {true, false}) progress |= ShrinkRowsOrColumns(on_a);
      progress |= ShrinkK();
      if (progress) continue;
      for (bool on_a : {true, false}) progress |= ShrinkValues(on_a);
    }
    return Take();
  }

 private:
  ShrinkResult Take() { return std::move(r_); }

  bool Cancelled() const { return options_.cancel != nullptr && *options_.cancel; }

  // Keeps (ca, cb) when it plans and still fails in time.
  bool Attempt(Tensor ca, Tensor cb) {
    if (Clock::now() >= deadline_ || Cancelled()) {
      r_.timed_out = true;
      return false;
    }
    if (!PlanMatMul({ca.dtype(), ca.dims(), cb.dims()}).ok()) return false;
    Outcome o = RunOne(backend_, ca, cb, options_.arithmetic, options_.tolerance, options_.cancel);
    // A candidate whose oracle was stopped half way proves nothing.
    if (Cancelled()) {
      r_.timed_out = true;
      return false;
    }
    if (!options_.keeps_failing(o.verdict)) return false;
    r_.a = std::move(ca);
    r_.b = std::move(cb);
    r_.outcome = std::move(o);
    ++r_.steps;
    return true;
  }

  // Attempt with A (on_a) or B replaced by `t`.
  bool AttemptOn(bool on_a, Tensor t) {
    return on_a ? Attempt(std::move(t), Clone(r_.b)) : Attempt(Clone(r_.a), std::move(t));
  }

  // Batch axes: drop an axis of extent 1, or keep one entry (first or last) of an axis.
  bool ShrinkBatchAxes(bool on_a) {
    bool progress = false;
    for (std::size_t axis = 0;; ++axis) {
      const Tensor& t = on_a ? r_.a : r_.b;
      if (t.dims().size() <= 2 || axis + 2 >= t.dims().size()) break;
      const std::int64_t e = t.dims()[axis];
      bool changed = false;
      if (e == 1) {  // Drop the axis (a leading one always plans; others when they broadcast).
        Dims d = t.dims();
        d.erase(d.begin() + static_cast<std::ptrdiff_t>(axis));
        changed = AttemptOn(on_a, WithDims(t, d));
      }
      for (std::int64_t start : {std::int64_t{0}, e - 1}) {
        if (changed || e <= 1) break;
        changed = AttemptOn(on_a, SliceAxis(on_a ? r_.a : r_.b, axis, start, 1));
      }
      if (changed) {
        progress = true;
        axis = static_cast<std::size_t>(-1);  // The dims changed: start over (++ makes it 0).
      }
    }
    return progress;
  }

  // M (A's rows) or N (B's columns).
  bool ShrinkRowsOrColumns(bool on_a) {
    bool progress = false;
    for (bool again = true; again;) {
      again = false;
      const Tensor& t = on_a ? r_.a : r_.b;
      if (t.dims().size() < 2) break;
      const std::size_t axis = t.dims().size() - (on_a ? 2 : 1);
      for (auto [start, len] : HalvingRanges(t.dims()[axis])) {
        if (AttemptOn(on_a, SliceAxis(on_a ? r_.a : r_.b, axis, start, len))) {
          again = progress = true;
          break;
        }
      }
    }
    return progress;
  }

  // K: the same range of both operands.
  bool ShrinkK() {
    bool progress = false;
    for (bool again = true; again;) {
      again = false;
      const std::size_t a_axis = r_.a.dims().size() - 1;
      const std::size_t b_axis = r_.b.dims().size() == 1 ? 0 : r_.b.dims().size() - 2;
      for (auto [start, len] : HalvingRanges(r_.a.dims()[a_axis])) {
        if (Attempt(SliceAxis(r_.a, a_axis, start, len), SliceAxis(r_.b, b_axis, start, len))) {
          again = progress = true;
          break;
        }
      }
    }
    return progress;
  }

  // Values: small integers, then zeros (halves down to single elements).
  bool ShrinkValues(bool on_a) {
    bool progress = false;
    const Tensor& t = on_a ? r_.a : r_.b;
    Tensor simple = Simplified(t);
    if (!SameBytes(simple, t)) progress |= AttemptOn(on_a, std::move(simple));
    const std::int64_t n = (on_a ? r_.a : r_.b).NumElements();
    // Down to single elements for small operands, to 1/64 of the operand for large ones.
    const std::int64_t smallest = std::max<std::int64_t>(n / 64, 1);
    for (std::int64_t chunk = std::max<std::int64_t>(n / 2, 1); chunk >= smallest && !r_.timed_out;
         chunk /= 2) {
      for (std::int64_t start = 0; start < n && !r_.timed_out; start += chunk) {
        const Tensor& cur = on_a ? r_.a : r_.b;
        Tensor zeroed = Zeroed(cur, start, std::min(chunk, n - start));
        if (SameBytes(zeroed, cur)) continue;
        progress |= AttemptOn(on_a, std::move(zeroed));
      }
      if (chunk == 1) break;
    }
    return progress;
  }

  Backend& backend_;
  const ShrinkOptions& options_;
  const Clock::time_point deadline_;
  ShrinkResult r_;
};

}  // namespace

ShrinkResult Shrink(Backend& backend, const Tensor& a, const Tensor& b,
                    const ShrinkOptions& options) {
  return Shrinker(backend, a, b, options).Run();
}

}  // namespace mm::fuzz
