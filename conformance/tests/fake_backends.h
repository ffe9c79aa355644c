// Backends that misbehave on purpose, for testing verdicts and exit codes.
#ifndef MM_CONFORMANCE_TESTS_FAKE_BACKENDS_H_
#define MM_CONFORMANCE_TESTS_FAKE_BACKENDS_H_

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>

#include "backends/reference/reference_backend.h"
#include "engine/registry.h"

namespace mm::conformance::testing {

// What a fake backend does wrong.
enum class Fault { kNone, kNudgeFirstElement, kUnsupported, kByConversion, kPrepareFails, kThrows };

// Computes like the reference, then does what `fault` says.
class FakePrimitive final : public MatMulPrimitive {
 public:
  FakePrimitive(MatMulPlan plan, Fault fault) : MatMulPrimitive(plan), fault_(fault) {
    inner_ = reference_.Prepare(plan).value();
  }

 protected:
  Status Run(TensorView a, TensorView b, MutableTensorView y) override {
    if (fault_ == Fault::kThrows) throw std::runtime_error("kaboom");
    MM_RETURN_IF_ERROR(inner_->Execute(a, b, y));
    if (fault_ == Fault::kNudgeFirstElement && y.NumElements() > 0) {
      y.Data<float>()[0] *= 1.01f;  // One percent off: outside rtol 1e-3.
    }
    return OkStatus();
  }

 private:
  Fault fault_;
  ReferenceBackend reference_;
  std::unique_ptr<MatMulPrimitive> inner_;
};

// Declares support according to `fault`.
class FakeBackend final : public Backend {
 public:
  explicit FakeBackend(Fault fault) : fault_(fault) {}
  std::string_view name() const override { return "fake"; }
  Support Supports(const MatMulDesc&) const override {
    if (fault_ == Fault::kUnsupported) return Support::No("fake has no such kernel");
    if (fault_ == Fault::kByConversion) return Support::ByConversion("f32 via f64");
    return Support::Native();
  }

 protected:
  StatusOr<std::unique_ptr<MatMulPrimitive>> PrepareProduct(const MatMulPlan& plan) override {
    if (fault_ == Fault::kPrepareFails) return InternalError("out of primitives");
    return std::unique_ptr<MatMulPrimitive>(std::make_unique<FakePrimitive>(plan, fault_));
  }

 private:
  Fault fault_;
};

// "reference" plus one backend per Fault: "good", "nudge", "unsupported", "converting",
// "prepare_fails", "throws", and "cannot_start" whose factory fails.
inline BackendRegistry FakeRegistry() {
  BackendRegistry registry;
  auto add = [&](const char* name, auto factory) {
    EXPECT_TRUE(registry.Register(name, "test", factory).ok());
  };
  add("reference", []() -> StatusOr<std::unique_ptr<Backend>> {
    return std::unique_ptr<Backend>(std::make_unique<ReferenceBackend>());
  });
  for (auto [name, fault] : {std::pair{"good", Fault::kNone},
                             {"nudge", Fault::kNudgeFirstElement},
                             {"unsupported", Fault::kUnsupported},
                             {"converting", Fault::kByConversion},
                             {"prepare_fails", Fault::kPrepareFails},
                             {"throws", Fault::kThrows}}) {
    const Fault f = fault;
    add(name, [f]() -> StatusOr<std::unique_ptr<Backend>> {
      return std::unique_ptr<Backend>(std::make_unique<FakeBackend>(f));
    });
  }
  add("cannot_start",
      []() -> StatusOr<std::unique_ptr<Backend>> { return InternalError("no device"); });
  return registry;
}

}  // namespace mm::conformance::testing

#endif  // MM_CONFORMANCE_TESTS_FAKE_BACKENDS_H_
