// The Backend interface: what every MatMul implementation provides, and how it says what it cannot
// do.
#ifndef MM_ENGINE_BACKEND_H_
#define MM_ENGINE_BACKEND_H_

#include <memory>
#include <string>
#include <string_view>

#include "mm/engine/arithmetic.h"
#include "mm/engine/dtype.h"
#include "mm/engine/matmul_plan.h"
#include "mm/engine/status.h"
#include "mm/engine/tensor.h"

namespace mm {

namespace family {
class FamilyBackend;
}  // namespace family

// A backend's answer to "can you compute this MatMul?". Capability is explicit: a backend that says
// kNo is never asked to compute; one that says kByConversion computes it itself, through another
// type, and `note` says how (e.g. "f16 via f32"). A backend never hands work to another engine.
struct Support {
  enum class Level { kNative, kByConversion, kNo };
  Level level = Level::kNo;
  std::string note;  // How it converts (kByConversion) or why it cannot (kNo); empty for kNative.

  static Support Native() { return {Level::kNative, {}}; }
  static Support ByConversion(std::string how) { return {Level::kByConversion, std::move(how)}; }
  static Support No(std::string why) { return {Level::kNo, std::move(why)}; }

  bool supported() const { return level != Level::kNo; }
  // "native", "by conversion: f16 via f32", "no: oneDNN has no f64 matmul".
  std::string ToString() const;
};

// The start of implementation() when the engine answers a product itself (K = 0, an empty Y):
// the backend was not called.
inline constexpr std::string_view kEngineAnswer = "engine: ";

// Whether `implementation` (MatMulPrimitive::implementation()) is the engine's own answer.
inline bool IsEngineAnswer(std::string_view implementation) {
  return implementation.substr(0, kEngineAnswer.size()) == kEngineAnswer;
}

// A MatMul prepared for one plan (dtype and shapes): created once, executed many times. Execute
// checks that the views match the plan, then runs; implementations do the expensive work (primitive
// creation, packing decisions) in Backend::PrepareProduct, so Run should only bind memory and
// compute.
class MatMulPrimitive {
 public:
  explicit MatMulPrimitive(MatMulPlan plan) : plan_(std::move(plan)) {}
  virtual ~MatMulPrimitive() = default;
  MatMulPrimitive(const MatMulPrimitive&) = delete;
  MatMulPrimitive& operator=(const MatMulPrimitive&) = delete;

  const MatMulPlan& plan() const { return plan_; }

  // Computes y = MatMul(a, b). a, b and y must have the plan's dtype and shapes (a: desc.a_dims,
  // b: desc.b_dims, y: y_dims) and non-null data unless empty; y must not alias a or b.
  // Returns INVALID_ARGUMENT when they do not match, or the backend's error.
  Status Execute(TensorView a, TensorView b, MutableTensorView y);

  // What actually computes this plan, as precisely as the backend knows it: the library's
  // implementation and instruction set ("oneDNN brg:avx512_core_bf16 (ISA avx512_core_bf16)"),
  // the SIMD set a library was compiled for, the conversion taken. Empty when the backend does
  // not say. For K = 0 or an empty Y, the engine's own answer (kEngineAnswer + "...").
  virtual std::string implementation() const { return {}; }

 protected:
  // Computes y = MatMul(a, b) for views already checked against plan().
  virtual Status Run(TensorView a, TensorView b, MutableTensorView y) = 0;
  // From now on Execute checks the views against plan() and calls `other`'s Run instead of this
  // one's: a primitive that dispatches to another of an equal plan (the auto backend's) costs a
  // call what the other costs called directly, one check and one virtual call. `other` must
  // outlive this primitive (the wrapper owns it). A chain of wrappers runs the last one's.
  void RunWith(MatMulPrimitive& other) { runner_ = other.runner_; }

 private:
  MatMulPlan plan_;
  MatMulPrimitive* runner_ = this;  // Whose Run Execute calls.
};

// One MatMul implementation. Backends are not thread-safe unless they say so; use one per thread.
//
// Invariant, checked for every registered backend by backends/tests: Supports(desc) says native or
// by conversion => Prepare succeeds for every valid plan of desc; Supports says no => Prepare
// returns UNIMPLEMENTED with that reason.
class Backend {
 public:
  virtual ~Backend() = default;

  // The registry name: "reference", "onednn", "eigen".
  virtual std::string_view name() const = 0;
  // Whether this backend computes `desc`, and how, on this machine's CPU. Cheap; never computes.
  virtual Support Supports(const MatMulDesc& desc) const = 0;
  // What this instance runs on here: library and version, the instruction set it picked, its
  // threads ("oneDNN 2.6.3, effective ISA avx512_core_bf16; ..."). Empty when nothing to say.
  virtual std::string RunsOn() const { return {}; }
  // The arithmetic this backend's kernels use for `dtype` (accumulation type, flushes), by which
  // every result of it is judged against the error bound. A fact about the backend on every CPU,
  // never about this machine's: a flush that some CPUs' kernel does is declared for all. The
  // default, for a backend that declares nothing, is Arithmetic::OwnType(dtype).
  virtual Arithmetic DeclaredArithmetic(DType dtype) const { return Arithmetic::OwnType(dtype); }
  // The operators of MatMul's family beyond MatMul (Gemm, MatMulInteger, QLinearMatMul) this
  // backend computes, as an interface (mm/family/backend.h: what it supports per operator and
  // type, its arithmetic, the computation); null, the default, for a backend that computes MatMul
  // only, which family::SupportOf then refuses with that reason. Owned by the backend.
  virtual family::FamilyBackend* family() { return nullptr; }

  // Prepares a reusable primitive for `plan` (from PlanMatMul). Returns UNIMPLEMENTED with the
  // Supports() reason when the backend does not support plan.desc. The degenerate products are
  // answered here, once, for every backend: K = 0 gives exact zeros (+0, every element an empty
  // sum) and an empty Y nothing; neither reaches PrepareProduct (unless JudgesDegenerateProducts),
  // and neither costs memory or time that grows with a dimension of the (empty) operands.
  StatusOr<std::unique_ptr<MatMulPrimitive>> Prepare(const MatMulPlan& plan);

 protected:
  // Prepares a primitive for a plan whose Y is non-empty and whose K > 0 (or any plan, when
  // JudgesDegenerateProducts), and that Supports() accepted. Expensive work (primitive creation,
  // scratch buffers) belongs here.
  virtual StatusOr<std::unique_ptr<MatMulPrimitive>> PrepareProduct(const MatMulPlan& plan) = 0;
  // True for a backend whose own answer to K = 0 and empty Y is what is judged (another runtime
  // behind a driver, whose handling of them is part of its conformance): Prepare then hands those
  // plans to PrepareProduct too instead of answering them itself.
  virtual bool JudgesDegenerateProducts() const { return false; }
};

// A conformance gap: the backend refused a problem of a dtype it says it supports (a shape class
// it cannot do, in its own words). Not UNSUPPORTED, which a backend declares through Supports()
// and which passes a run: the error a call returns, UNIMPLEMENTED with a message starting
// "conformance gap: ", that reports show as such.
Status ConformanceGapError(std::string_view message);
// True for a ConformanceGapError (also under added context).
bool IsConformanceGap(const Status& status);

// One-shot convenience: plans, prepares and executes Y = MatMul(a, b) on `backend`, returning a new
// tensor. For repeated calls of the same shape, Prepare once and Execute instead.
StatusOr<Tensor> MatMul(Backend& backend, TensorView a, TensorView b);

}  // namespace mm

#endif  // MM_ENGINE_BACKEND_H_
