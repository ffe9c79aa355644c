#include "mm/backends/backend_list.h"

#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

#include "mm/backends/auto/auto_backend.h"
#include "mm/backends/cmd/cmd_backend.h"
#include "mm/backends/reference/reference_backend.h"
#if MM_WITH_BLAS
#include "mm/backends/blas/blas_backend.h"
#endif
#if MM_WITH_EIGEN_BACKEND
#include "mm/backends/eigen/eigen_backend.h"
#endif
#if MM_WITH_ONEDNN
#include "mm/backends/onednn/onednn_backend.h"
#endif

namespace mm {
namespace {

template <class B>
BackendFactory FactoryOf() {
  return []() -> StatusOr<std::unique_ptr<Backend>> {
    return std::unique_ptr<Backend>(std::make_unique<B>());
  };
}

void MustRegister(BackendRegistry& registry, std::string name, std::string description,
                  BackendFactory factory) {
  Status status = registry.Register(std::move(name), std::move(description), std::move(factory));
  if (!status.ok()) {
    // Only a programming error in the list below gets here.
    std::cerr << "mm: invalid backend list: " << status << "\n";
    std::abort();
  }
}

// A backend left out of this build (MM_WITH_<option>=OFF): listed, with how to build it.
[[maybe_unused]] void MustRegisterNotBuilt(BackendRegistry& registry, std::string name,
                                           std::string_view option) {
  std::string why = "not built: mm was configured with " + std::string(option) + "=OFF";
  Status status = registry.RegisterUnavailable(name, "left out of this build", std::move(why));
  if (!status.ok()) {
    std::cerr << "mm: invalid backend list: " << status << "\n";
    std::abort();
  }
}

}  // namespace

BackendRegistry AutoCandidateBackends() {
  BackendRegistry registry;
  MustRegister(registry, "reference", "naive i-k-j loops, double accumulation: the oracle",
               FactoryOf<ReferenceBackend>());
#if MM_WITH_ONEDNN
  MustRegister(registry, "onednn",
               "oneDNN 2.6 matmul primitives, cached per shape: float, bfloat16 (f16 via f32 where "
               "oneDNN has no f16 matmul)",
               CreateOneDnnBackend);
  registry.AddWorkerSetup(LimitOneDnnPrimitiveCacheInWorker);
#else
  MustRegisterNotBuilt(registry, "onednn", "MM_WITH_ONEDNN");
#endif
#if MM_WITH_EIGEN_BACKEND
  MustRegister(registry, "eigen",
               "Eigen 3.4 products, OpenMP threads: every dtype (float16/bfloat16 via float32 "
               "accumulation, integers wrap modulo 2^bits)",
               FactoryOf<EigenBackend>());
#else
  MustRegisterNotBuilt(registry, "eigen", "MM_WITH_EIGEN_BACKEND");
#endif
#if MM_WITH_BLAS
  // openblas, blis, atlas, netlib: each found at run time, or listed as unavailable with why.
  Status blas = blas::RegisterBlasBackends(registry);
  if (!blas.ok()) {
    std::cerr << "mm: invalid backend list: " << blas << "\n";
    std::abort();
  }
#else
  for (const char* name : {"openblas", "blis", "atlas", "netlib"}) {
    MustRegisterNotBuilt(registry, name, "MM_WITH_BLAS");
  }
#endif
  return registry;
}

BackendRegistry BuiltinBackends() {
  BackendRegistry registry = AutoCandidateBackends();
  // Registered last: every backend above is a candidate of its choice.
  MustRegister(
      registry, "auto",
      "the fastest conformant backend above per dtype, shape and thread count, from "
      "a table calibrated here on first use ($XDG_CACHE_HOME/mm/, or MM_AUTO_TABLE) or "
      "built-in defaults; MM_AUTO_EXCLUDE and the tools' expectations leave backends out",
      [] { return AutoBackend::Create(AutoCandidateBackends(), AutoOptions::FromEnvironment()); });
  // numpy, torch: other runtimes behind drivers (a process each), run when named; found at run
  // time, or listed as unavailable with why. Not candidates of auto.
#if MM_WITH_RUNTIMES
  Status drivers = runtime::RegisterShippedDrivers(registry);
  if (!drivers.ok()) {
    std::cerr << "mm: invalid backend list: " << drivers << "\n";
    std::abort();
  }
#else
  for (const std::string& name : runtime::ShippedDriverNames()) {
    MustRegisterNotBuilt(registry, name, "MM_WITH_RUNTIMES");
  }
#endif
  return registry;
}

}  // namespace mm
