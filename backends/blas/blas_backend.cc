#include "mm/backends/blas/blas_backend.h"

#include <omp.h>

#include <climits>
#include <cstring>
#include <new>
#include <optional>
#include <type_traits>

#include "mm/backends/blas/blas_family.h"

namespace mm::blas {
namespace {

constexpr std::int64_t kMaxBlasInt = INT_MAX;  // Debian's BLAS libraries use a 32-bit blasint.

// The GEMM of one row-major product, through the column-major interface: Y^T (n x m) =
// B^T (n x k) A^T (k x m), leading dimensions n, k and n. beta = 0, so Y's prior contents (the
// harness's poison) are never read.
struct Gemm {
  const BlasLibrary* library;
  int m, n, k;  // Row-major extents of one product (m rows of A and Y).

  template <class T, class Fn>
  void Call(Fn fn, const void* a, const void* b, float* y) const {
    const char no = 'N';
    const float one = 1, zero = 0;
    fn(&no, &no, &n, &m, &k, &one, static_cast<const T*>(b), &n, static_cast<const T*>(a), &k,
       &zero, y, &n, 1, 1);
  }
  void Run(DType dtype, const void* a, const void* b, void* y) const {
    const char no = 'N';
    if (dtype == DType::kFloat) {
      const float one = 1, zero = 0;
      library->sgemm()(&no, &no, &n, &m, &k, &one, static_cast<const float*>(b), &n,
                       static_cast<const float*>(a), &k, &zero, static_cast<float*>(y), &n, 1, 1);
    } else if (dtype == DType::kDouble) {
      const double one = 1, zero = 0;
      library->dgemm()(&no, &no, &n, &m, &k, &one, static_cast<const double*>(b), &n,
                       static_cast<const double*>(a), &k, &zero, static_cast<double*>(y), &n, 1, 1);
    } else {
      Call<std::uint16_t>(library->sbgemm(), a, b, static_cast<float*>(y));
    }
  }
};

// Why `desc` cannot go through a 32-bit Fortran integer, or nullopt when it can.
std::optional<std::string> IntegerLimit(const MatMulDesc& desc) {
  auto plan = PlanMatMul(desc);
  if (!plan.ok()) return std::nullopt;  // Not a valid MatMul: the engine refuses it first.
  // K = 0 and an empty Y are the engine's answer, whatever their dims: no GEMM is called.
  if (plan->k == 0 || plan->y_elements == 0) return std::nullopt;
  for (const auto& [what, value] : {std::pair<const char*, std::int64_t>{"M", plan->m},
                                    {"N (and the leading dimensions of B and Y)", plan->n},
                                    {"K (the leading dimension of A)", plan->k}}) {
    if (value > kMaxBlasInt) {
      return std::string(what) + " = " + std::to_string(value) +
             " exceeds the 32-bit Fortran integer of the BLAS interface (2^31 - 1)";
    }
  }
  return std::nullopt;
}

class BlasPrimitive final : public MatMulPrimitive {
 public:
  BlasPrimitive(const MatMulPlan& plan, const BlasBackend& backend, std::unique_ptr<float[]> y32)
      : MatMulPrimitive(plan),
        backend_(backend),
        // B is one matrix and A a plain stack: Y[batch*m, n] = A[batch*m, k] x B is one GEMM.
        fold_(plan.batch > 1 && plan.b_shared_across_batch() && plan.a_batch_contiguous() &&
              plan.batch * plan.m <= kMaxBlasInt),
        y32_(std::move(y32)),
        threads_(backend.RequestedThreads()) {}

  std::string implementation() const override {
    const BlasLibrary& library = backend_.library();
    const DType dtype = plan().desc.dtype;
    std::string how = library.description().label + " " +
                      (dtype == DType::kFloat    ? "sgemm_"
                       : dtype == DType::kDouble ? "dgemm_"
                                                 : "sbgemm_");
    const std::string core = library.Core();
    how += " (" + (core.empty() ? std::string() : core + " kernel, ") + std::to_string(threads_) +
           " thread" + (threads_ == 1 ? "" : "s") + ")";
    if (dtype == DType::kBFloat16) how += ", float32 Y rounded once to bfloat16";
    if (fold_) how += ", batch folded into M";
    return how;
  }

 protected:
  Status Run(TensorView a, TensorView b, MutableTensorView y) override {
    const MatMulPlan& p = plan();
    threads_ = backend_.RequestedThreads();
    backend_.library().SetThreads(threads_);
    const DType dtype = p.desc.dtype;
    const std::size_t size = GetDTypeInfo(dtype).size;
    // sbgemm_ writes float32, rounded into Y afterwards.
    char* out = dtype == DType::kBFloat16 ? reinterpret_cast<char*>(y32_.get())
                                          : static_cast<char*>(y.data);
    const std::size_t out_size = dtype == DType::kBFloat16 ? sizeof(float) : size;
    const auto* a_bytes = static_cast<const char*>(a.data);
    const auto* b_bytes = static_cast<const char*>(b.data);
    const int m = static_cast<int>(p.m), n = static_cast<int>(p.n), k = static_cast<int>(p.k);
    if (fold_ || p.batch == 1) {
      Gemm{&backend_.library(), static_cast<int>(p.batch * p.m), n, k}.Run(dtype, a.data, b.data,
                                                                           out);
    } else {
      const Gemm gemm{&backend_.library(), m, n, k};
      for (std::int64_t index = 0; index < p.batch; ++index) {
        const auto [a_offset, b_offset] = p.BatchOffsets(index);
        gemm.Run(dtype, a_bytes + a_offset * size, b_bytes + b_offset * size,
                 out + index * p.m * p.n * out_size);
      }
    }
    if (dtype == DType::kBFloat16) {
      bfloat16* dst = y.Data<bfloat16>();
      for (std::int64_t i = 0; i < p.y_elements; ++i) dst[i] = bfloat16(y32_[i]);
    }
    return OkStatus();
  }

 private:
  const BlasBackend& backend_;
  const bool fold_;
  std::unique_ptr<float[]> y32_;  // bfloat16 only: sbgemm_'s float32 Y.
  int threads_;                   // The count of the last Execute (or the one it would use).
};

}  // namespace

BlasBackend::BlasBackend(std::shared_ptr<const BlasLibrary> library)
    : library_(std::move(library)), family_(std::make_unique<BlasFamily>(*this)) {}

BlasBackend::~BlasBackend() = default;

Support BlasBackend::Supports(const MatMulDesc& desc) const {
  const std::string& label = library_->description().label;
  switch (desc.dtype) {
    case DType::kFloat:
    case DType::kDouble:
      break;
    case DType::kBFloat16:
      if (library_->sbgemm() == nullptr) {
        return Support::No(label + " " + library_->version() +
                           " has no sbgemm_ (bfloat16 GEMM) in " + library_->path().string());
      }
      break;
    default:
      return Support::No("BLAS has no " + std::string(DTypeName(desc.dtype)) + " GEMM");
  }
  if (auto limit = IntegerLimit(desc)) return Support::No(*limit);
  if (desc.dtype == DType::kBFloat16) {
    return Support::ByConversion("bf16 in, float32 out (sbgemm_), Y rounded once to bfloat16");
  }
  return Support::Native();
}

std::string BlasBackend::RunsOn() const {
  const BlasLibrary& library = *library_;
  std::string text = library.description().label;
  if (!library.version().empty()) text += " " + library.version();
  if (!library.config().empty()) text += " (" + library.config() + ")";
  const std::string core = library.Core();
  if (!core.empty()) text += ", core " + core;
  text += ", " + library.ThreadingName();
  if (library.description().threads != ThreadControl::kSerial) {
    text += ", up to " + std::to_string(omp_get_max_threads()) + " threads";
  }
  text += "; " + library.path().string();
  if (library.real_path() != library.path()) text += " -> " + library.real_path().string();
  text += " (Debian " + library.description().package + ")";
  return text;
}

Arithmetic BlasBackend::DeclaredArithmetic(DType dtype) const {
  // Source: the BLAS interface (reference BLAS 3.11's SGEMM/DGEMM: REAL/DOUBLE PRECISION temps),
  // which each library implements in the operands' precision; OpenBLAS's sbgemm_ (0.3.21,
  // interface/gemm.c: bfloat16 inputs, float32 C) accumulates in float32, and its AVX512_BF16
  // kernels use VDPBF16PS, which flushes subnormals (Intel SDM): declared wherever sbgemm_ is
  // found, as a library's kernel choice is not known before the call.
  switch (dtype) {
    case DType::kFloat:
      return {DType::kFloat, false};
    case DType::kDouble:
      return {DType::kDouble, false};
    case DType::kBFloat16:
      return {DType::kFloat, true};
    default:
      return Arithmetic::OwnType(dtype);
  }
}

int BlasBackend::RequestedThreads() const {
  return library_->description().threads == ThreadControl::kSerial ? 1 : omp_get_max_threads();
}

StatusOr<std::unique_ptr<MatMulPrimitive>> BlasBackend::PrepareProduct(const MatMulPlan& plan) {
  std::unique_ptr<float[]> y32;
  if (plan.desc.dtype == DType::kBFloat16) {
    y32.reset(new (std::nothrow) float[static_cast<std::size_t>(plan.y_elements)]);
    if (!y32) {
      return ResourceExhaustedError(std::string(name()) + ": cannot allocate the float32 Y of " +
                                    plan.desc.ToString());
    }
  }
  return std::unique_ptr<MatMulPrimitive>(
      std::make_unique<BlasPrimitive>(plan, *this, std::move(y32)));
}

Status RegisterBlasBackend(BackendRegistry& registry, const BlasLibraryDescription& description,
                           const std::filesystem::path& path) {
  const std::string what =
      description.label +
      " sgemm_/dgemm_, column-major (Y^T = B^T A^T): "
      "float, double" +
      (description.threads == ThreadControl::kOpenBlas ? ", bfloat16 where it has sbgemm_" : "") +
      (description.threads == ThreadControl::kSerial ? "; serial"
                                                     : "; threads set through its own API") +
      " (Debian " + description.package + ")";
  auto library = BlasLibrary::Load(description, path);
  if (!library.ok()) {
    return registry.RegisterUnavailable(description.name, what, library.status().message());
  }
  std::shared_ptr<const BlasLibrary> loaded = *library;
  return registry.Register(description.name, what,
                           [loaded]() -> StatusOr<std::unique_ptr<Backend>> {
                             return std::unique_ptr<Backend>(std::make_unique<BlasBackend>(loaded));
                           });
}

Status RegisterBlasBackends(BackendRegistry& registry, const std::filesystem::path& lib_dir) {
  for (const BlasLibraryDescription& description : DebianBlasLibraries()) {
    Status status =
        RegisterBlasBackend(registry, description, BlasLibraryPath(description, lib_dir));
    if (!status.ok()) return status;
  }
  return OkStatus();
}

}  // namespace mm::blas
