#include "mm/backends/eigen/eigen_backend.h"

#include <omp.h>

#include <Eigen/Core>  // Eigen's version only: its products run in eigen_kernels.cc's copies.
#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "mm/backends/eigen/eigen_family.h"
#include "mm/backends/eigen/eigen_kernels.h"
#include "mm/backends/eigen/row_blocks.h"
#include "mm/backends/eigen/spread.h"

namespace mm {

namespace eigen_internal {

StatusOr<const EigenKernels*> ChosenEigenKernels() {
  MM_ASSIGN_OR_RETURN(const CpuIsa isa, ChosenCpuIsa());
  // ChosenCpuIsa never exceeds the highest level compiled (MM_MAX_COMPILED_CPU_ISA).
#if MM_MAX_COMPILED_CPU_ISA >= 2
  if (isa >= CpuIsa::kAvx512) return mm_isa_avx512_eigen_kernels();
#endif
#if MM_MAX_COMPILED_CPU_ISA >= 1
  if (isa >= CpuIsa::kAvx2) return mm_isa_avx2_eigen_kernels();
#endif
  (void)isa;
  return mm_isa_baseline_eigen_kernels();
}

}  // namespace eigen_internal

namespace {

using eigen_internal::EigenKernels;
using eigen_internal::kEigenMinTaskSize;
using eigen_internal::kRowAlignment;
using eigen_internal::Spread;
using eigen_internal::SpreadThreads;

// The chosen copy of the kernels. PrepareProduct has checked that ChosenEigenKernels is OK before
// any product runs.
const EigenKernels& Kernels() { return **eigen_internal::ChosenEigenKernels(); }

using Eigen::Index;

template <class T>
constexpr bool kIsHalf = std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>;

// The scalar Eigen multiplies in for storage type T:
//  - float16, bfloat16: float (float32 accumulation, one rounding at the end);
//  - int32, uint32: uint64. Exact modulo 2^32 (2^32 divides 2^64), and Eigen's uint64 product is
//    faster than its int32 or uint32 one (docs/backends.md);
//  - int64: int64, its sums wrapping modulo 2^64 by definition (eigen_int32_native.cc, compiled
//    with -fwrapv): the kernel bare Eigen runs; T itself otherwise.
template <class T>
using ComputeType =
    std::conditional_t<kIsHalf<T>, float,
                       std::conditional_t<std::is_integral_v<T> && !std::is_same_v<T, std::int64_t>,
                                          std::uint64_t, T>>;

// Elements converted per task when widening operands or narrowing Y.
constexpr std::int64_t kConvertChunk = std::int64_t{1} << 16;

// Eigen's own bound (EIGEN_GEMM_TO_COEFFBASED_THRESHOLD): below it, Eigen computes a product
// coefficient by coefficient rather than through its GEMM.
constexpr Index kCoeffBasedThreshold = 20;

// Whether a product of these extents is one Eigen would compute coefficient by coefficient.
bool CoeffBased(Index m, Index k, Index n) { return m + k + n < kCoeffBasedThreshold; }

// Y = A x B, row-major, each coefficient a sum over k in order, in S (for integers their unsigned
// type: sums wrap modulo 2^bits by definition). For products Eigen would compute coefficient by
// coefficient anyway (CoeffBased): the same arithmetic without its expression machinery, which
// costs more than the 3x4x3 product itself.
template <class S>
void DirectProduct(const S* a, const S* b, S* y, Index m, Index k, Index n) {
  using U = typename std::conditional_t<std::is_integral_v<S>, std::make_unsigned<S>,
                                        std::type_identity<S>>::type;
  const U* ua = reinterpret_cast<const U*>(a);
  const U* ub = reinterpret_cast<const U*>(b);
  U* uy = reinterpret_cast<U*>(y);
  for (Index i = 0; i < m; ++i) {
    for (Index j = 0; j < n; ++j) {
      U sum = ua[i * k] * ub[j];
      for (Index p = 1; p < k; ++p) sum += ua[i * k + p] * ub[p * n + j];
      uy[i * n + j] = sum;
    }
  }
}

// Y = A x B for one row-major product, m x k times k x n, every extent > 0. Eigen picks GEMM,
// GEMV (m or n == 1) or a coefficient-wise product for tiny sizes. Inside an OpenMP region it runs
// on one thread; outside one, Eigen's own parallel GEMM may still use the threads for a large
// product that is too short (rows) to split into blocks. int32 and int64 wrap modulo 2^bits: their
// products are compiled with -fwrapv (eigen_int32_native.cc).
// A type with no kernel (uint32 on the direct path of the widened 32-bit types) only ever meets
// products small enough for DirectProduct, which it then takes.
template <class S>
void Product(const S* a, const S* b, S* y, Index m, Index k, Index n) {
  if constexpr (std::is_same_v<S, std::uint32_t>) {
    DirectProduct(a, b, y, m, k, n);
  } else {
    Kernels().Product<S>()(a, b, y, m, k, n);
  }
}

// One product, rows x k times k x n, split into blocks of rows, one independent single-threaded
// Eigen product per thread (B is shared, read-only). This beats Eigen's own parallel GEMM, whose
// threads wait for each other inside every product (docs/backends.md; mm-bench shows it).
template <class S>
bool SplitProduct(const S* a, const S* b, S* y, Index rows, Index k, Index n) {
  const double work = static_cast<double>(rows) * static_cast<double>(k) * static_cast<double>(n);
  const int threads = SpreadThreads(rows, work);
  if (threads == 1) {
    Product(a, b, y, rows, k, n);
    return true;
  }
  const std::vector<std::int64_t> bounds =
      eigen_internal::RowBlockBounds(rows, threads, kRowAlignment);
  const std::int64_t blocks = static_cast<std::int64_t>(bounds.size()) - 1;
  if (blocks == 1) {
    Product(a, b, y, rows, k, n);
    return true;
  }
  return Spread(blocks, static_cast<int>(blocks), [&](std::int64_t i) {
    const Index first = bounds[i];
    Product(a + first * k, b, y + first * n, bounds[i + 1] - first, k, n);
  });
}

// Whether the whole problem is below two threads' grain (kEigenMinTaskSize multiply-adds each), so
// that no thread count spreads it (SpreadThreads gives 1, and Eigen's own GEMM stays on one thread
// likewise): decided once per plan, it spares tiny products the OpenMP queries.
bool SingleThreaded(const MatMulPlan& plan) {
  return static_cast<double>(plan.batch) * static_cast<double>(plan.m) *
             static_cast<double>(plan.n) * static_cast<double>(plan.k) <
         2 * kEigenMinTaskSize;
}

// Every batch entry's product in turn on the calling thread: what BatchedProduct does when no
// thread count spreads the problem. Entries Eigen would compute coefficient by coefficient go to
// DirectProduct.
template <class S>
void SequentialProducts(const MatMulPlan& plan, bool fold_batch_into_m, const S* a, const S* b,
                        S* y) {
  const Index m = plan.m, k = plan.k, n = plan.n;
  const bool direct = CoeffBased(m, k, n);
  if (fold_batch_into_m || plan.batch == 1) {
    if (direct) {
      DirectProduct(a, b, y, plan.batch * m, k, n);
    } else {
      Product(a, b, y, plan.batch * m, k, n);
    }
    return;
  }
  for (std::int64_t index = 0; index < plan.batch; ++index) {
    const auto [a_offset, b_offset] = plan.BatchOffsets(index);
    if (direct) {
      DirectProduct(a + a_offset, b + b_offset, y + index * m * n, m, k, n);
    } else {
      Product(a + a_offset, b + b_offset, y + index * m * n, m, k, n);
    }
  }
}

// Every batch entry's product over compute-type buffers laid out as the plan says. Returns false
// when Eigen ran out of memory on a worker thread; on the calling thread std::bad_alloc propagates.
//  - One product (batch 1, or folded: B shared by a plain stack of A, one [batch*m, k] x [k, n]
//    product): split into blocks of rows over the threads.
//  - Otherwise one product per entry: spread over the batch (each entry on one thread) when every
//    thread gets an entry or an entry is too small to split over every thread; else the entries run
//    in turn, each split over the threads.
template <class S>
bool BatchedProduct(const MatMulPlan& plan, bool fold_batch_into_m, const S* a, const S* b, S* y) {
  if (SingleThreaded(plan)) {
    SequentialProducts(plan, fold_batch_into_m, a, b, y);
    return true;
  }
  const Index m = plan.m, k = plan.k, n = plan.n;
  if (fold_batch_into_m || plan.batch == 1) return SplitProduct(a, b, y, plan.batch * m, k, n);
  const double entry_work =
      static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const int max_threads = omp_get_max_threads();
  if (plan.batch >= max_threads || entry_work < max_threads * kEigenMinTaskSize) {
    const int threads = SpreadThreads(plan.batch, entry_work * static_cast<double>(plan.batch));
    auto entry = [&](std::int64_t index) {
      const auto [a_offset, b_offset] = plan.BatchOffsets(index);
      Product(a + a_offset, b + b_offset, y + index * m * n, m, k, n);
    };
    if (threads == 1) {
      for (std::int64_t index = 0; index < plan.batch; ++index) entry(index);
      return true;
    }
    return Spread(plan.batch, threads, entry);
  }
  for (std::int64_t index = 0; index < plan.batch; ++index) {
    const auto [a_offset, b_offset] = plan.BatchOffsets(index);
    if (!SplitProduct(a + a_offset, b + b_offset, y + index * m * n, m, k, n)) return false;
  }
  return true;
}

// dst[i] = To(src[i]) for `count` elements, with Eigen's vectorised casts, split over threads when
// large. float to float16 / bfloat16 rounds to nearest even; integer casts are modular.
template <class To, class From>
void Convert(const From* src, To* dst, std::int64_t count) {
  const std::int64_t chunks = (count + kConvertChunk - 1) / kConvertChunk;
  const int threads = chunks > 1 && !omp_in_parallel()
                          ? static_cast<int>(std::min<std::int64_t>(omp_get_max_threads(), chunks))
                          : 1;
  const eigen_internal::CastFn<To, From> cast = Kernels().Cast<To, From>();
  auto convert_chunk = [&](std::int64_t chunk) {
    const std::int64_t begin = chunk * kConvertChunk;
    cast(src + begin, dst + begin, std::min(kConvertChunk, count - begin));
  };
  if (threads == 1) {
    // Entering even a one-thread OpenMP region costs more than a tiny product.
    for (std::int64_t chunk = 0; chunk < chunks; ++chunk) convert_chunk(chunk);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (std::int64_t chunk = 0; chunk < chunks; ++chunk) convert_chunk(chunk);
}

// A buffer of `count` elements, or null when the allocation fails (reported as a Status).
template <class S>
std::unique_ptr<S[]> Allocate(std::int64_t count) {
  return std::unique_ptr<S[]>(new (std::nothrow) S[static_cast<std::size_t>(count)]);
}

// S: the scalar Eigen multiplies in (ComputeType<T>, or int32 for the native 32-bit path).
template <class T, class S = ComputeType<T>>
class EigenPrimitive final : public MatMulPrimitive {
 public:
  static constexpr bool kWide = sizeof(S) > sizeof(T);

  static StatusOr<std::unique_ptr<MatMulPrimitive>> Create(const MatMulPlan& plan) {
    // An unknown MM_MAX_CPU_ISA: no product runs on a level nobody asked for.
    MM_RETURN_IF_ERROR(eigen_internal::ChosenEigenKernels().status());
    auto primitive = std::unique_ptr<EigenPrimitive>(new EigenPrimitive(plan));
    if constexpr (kWide) {
      primitive->a_wide_ = Allocate<S>(plan.a_elements);
      primitive->b_wide_ = Allocate<S>(plan.b_elements);
      primitive->y_wide_ = Allocate<S>(plan.y_elements);
      if (!primitive->a_wide_ || !primitive->b_wide_ || !primitive->y_wide_) {
        return ResourceExhaustedError("eigen: cannot allocate the scratch buffers for " +
                                      plan.desc.ToString());
      }
    }
    return std::unique_ptr<MatMulPrimitive>(std::move(primitive));
  }

  std::string implementation() const override {
    if (CoeffBased(plan().m, plan().k, plan().n) && SingleThreaded(plan())) {
      std::string how =
          "mm's coefficient loops (M + K + N < 20, where Eigen's product is coefficient-based) in ";
      if constexpr (std::is_integral_v<T>) {
        how += std::string(sizeof(T) == 4 ? "uint32" : "uint64") + " (wrapping)";
      } else {
        how += ComputeName();
        if constexpr (kWide) {
          how += ", Y narrowed once to " + std::string(DTypeName(plan().desc.dtype));
        }
      }
      return how;
    }
    // The widest instruction set the chosen copy was compiled for names it. (Eigen 3.4's own list
    // of sets says "AVX SSE" for its AVX2 kernels.)
    constexpr const char* kWidest[] = {"SSE2", "AVX2", "AVX512"};
    std::string how = "Eigen GEMM (" + std::string(kWidest[static_cast<int>(Kernels().isa)]) +
                      ") in " + ComputeName();
    if constexpr (kWide) {
      how += ", Y narrowed once to " + std::string(DTypeName(plan().desc.dtype));
    }
    if (fold_) how += ", batch folded into M";
    return how;
  }

 protected:
  Status Run(TensorView a, TensorView b, MutableTensorView y) override {
    const MatMulPlan& p = plan();
    if constexpr (!kWide || std::is_integral_v<T>) {
      if (direct_) {
        // Tiny products on the caller's buffers, allocating nothing: 32-bit integers need no
        // widening here (DirectProduct's unsigned sums wrap modulo 2^32 as the uint64 path's do).
        using D = std::conditional_t<kWide, T, S>;
        SequentialProducts<D>(p, fold_, reinterpret_cast<const D*>(a.data),
                              reinterpret_cast<const D*>(b.data), reinterpret_cast<D*>(y.data));
        return OkStatus();
      }
    }
    bool ok = false;
    try {
      if constexpr (kWide) {
        Convert(a.Data<T>(), a_wide_.get(), p.a_elements);
        Convert(b.Data<T>(), b_wide_.get(), p.b_elements);
        ok = BatchedProduct<S>(p, fold_, a_wide_.get(), b_wide_.get(), y_wide_.get());
        if (ok) Convert(y_wide_.get(), y.Data<T>(), p.y_elements);
      } else {
        // uint32 read as int32 on the native 32-bit path (an aliasing the language allows) wraps
        // modulo 2^32 (eigen_int32_native.cc), and reads back as the same bits.
        ok = BatchedProduct<S>(p, fold_, reinterpret_cast<const S*>(a.data),
                               reinterpret_cast<const S*>(b.data), reinterpret_cast<S*>(y.data));
      }
    } catch (const std::bad_alloc&) {
      ok = false;
    }
    if (!ok)
      return ResourceExhaustedError("eigen: out of memory in the product " + p.desc.ToString());
    return OkStatus();
  }

 private:
  explicit EigenPrimitive(const MatMulPlan& plan)
      : MatMulPrimitive(plan),
        // B is one matrix and A a plain stack: Y[batch*m, n] = A[batch*m, k] x B is one larger
        // product, which Eigen blocks and parallelises better than `batch` small ones.
        fold_(plan.batch > 1 && plan.b_shared_across_batch() && plan.a_batch_contiguous()),
        direct_(SingleThreaded(plan) && CoeffBased(plan.m, plan.k, plan.n)) {}

  static std::string ComputeName() {
    if constexpr (std::is_same_v<S, float>) return "float32";
    if constexpr (std::is_same_v<S, double>) return "float64";
    if constexpr (std::is_same_v<S, std::int32_t>) return "int32 (wrapping)";
    if constexpr (std::is_same_v<S, std::int64_t>) return "int64 (wrapping)";
    return "uint64 (wrapping)";
  }

  const bool fold_;
  // Below two threads' grain and coefficient-based (SingleThreaded, CoeffBased): DirectProduct.
  const bool direct_;
  // Widened types only (kWide): A, B and Y in the compute type, allocated once, reused by Run.
  std::unique_ptr<S[]> a_wide_;
  std::unique_ptr<S[]> b_wide_;
  std::unique_ptr<S[]> y_wide_;
};

}  // namespace

EigenBackend::EigenBackend(Int32Path int32_path)
    : int32_path_(int32_path), family_(std::make_unique<eigen_internal::EigenFamily>(*this)) {}

EigenBackend::~EigenBackend() = default;

Support EigenBackend::Supports(const MatMulDesc& desc) const {
  switch (desc.dtype) {
    case DType::kFloat16:
      return Support::ByConversion(
          "float16 via float32 accumulation: A and B widened to float32, Eigen's float32 product, "
          "Y rounded once to float16");
    case DType::kBFloat16:
      return Support::ByConversion(
          "bfloat16 via float32 accumulation: A and B widened to float32, Eigen's float32 product, "
          "Y rounded once to bfloat16");
    case DType::kInt32:
    case DType::kUInt32:
      if (int32_path_ == Int32Path::kNative) return Support::Native();
      return Support::ByConversion(
          std::string(DTypeName(desc.dtype)) +
          " via uint64: A and B widened to uint64, Eigen's uint64 product, Y truncated (exact "
          "modulo 2^32; faster than Eigen's 32-bit integer product where 64-bit vector "
          "multiplies exist, AVX-512DQ); a product small enough for mm's coefficient loops "
          "(M + K + N < 20, one thread) sums in wrapping uint32 instead, exact alike");
    default:
      return Support::Native();
  }
}

Arithmetic EigenBackend::DeclaredArithmetic(DType dtype) const {
  // Source: this backend's code and Eigen 3.4's products. float and double are Eigen's GEMM in
  // their own type (GeneralMatrixMatrix.h: products and sums in Scalar); float16 and bfloat16 are
  // widened exactly to float by this backend and multiplied in float, Y rounded once; integers
  // wrap (int64 compiled with -fwrapv, 32-bit ones through uint64).
  if (!IsFloat(dtype)) return Arithmetic::OwnType(dtype);
  return {dtype == DType::kDouble ? DType::kDouble : DType::kFloat, false};
}

std::string EigenBackend::RunsOn() const {
  const StatusOr<const EigenKernels*> kernels = eigen_internal::ChosenEigenKernels();
  const std::string simd = kernels.ok()
                               ? "SIMD " + std::string((*kernels)->simd) + " (kernels for " +
                                     std::string(CpuIsaLevel((*kernels)->isa)) +
                                     ", chosen for this CPU: " + DescribeChosenCpuIsa() + ")"
                               : kernels.status().message();
  return "Eigen " + std::to_string(EIGEN_WORLD_VERSION) + "." +
         std::to_string(EIGEN_MAJOR_VERSION) + "." + std::to_string(EIGEN_MINOR_VERSION) + ", " +
         simd + ", OpenMP up to " + std::to_string(MaxThreads()) + " threads";
}

EigenBackend::Int32Path EigenBackend::DefaultInt32Path() {
  // Eigen's uint64 product beats its int32 one only with 64-bit vector multiplies (AVX-512DQ's
  // vpmullq), in the copy of the kernels chosen for the running CPU (x86-64-v4 has AVX-512DQ);
  // elsewhere (AVX2) the int32 product is the faster one.
  const StatusOr<const EigenKernels*> kernels = eigen_internal::ChosenEigenKernels();
  if (kernels.ok() && (*kernels)->isa == CpuIsa::kAvx512) return Int32Path::kViaUInt64;
  return Int32Path::kNative;
}

StatusOr<std::unique_ptr<MatMulPrimitive>> EigenBackend::PrepareProduct(const MatMulPlan& plan) {
  if (int32_path_ == Int32Path::kNative) {
    if (plan.desc.dtype == DType::kInt32) {
      return EigenPrimitive<std::int32_t, std::int32_t>::Create(plan);
    }
    if (plan.desc.dtype == DType::kUInt32) {
      return EigenPrimitive<std::uint32_t, std::int32_t>::Create(plan);
    }
  }
  // Every dtype is supported (see Supports), so there is nothing to refuse.
  return VisitDType(plan.desc.dtype, [&](auto tag) {
    return EigenPrimitive<CppType<decltype(tag)::value>>::Create(plan);
  });
}

int EigenBackend::MaxThreads() { return omp_get_max_threads(); }

}  // namespace mm
