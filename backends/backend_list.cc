#include "backends/backend_list.h"

#include <cstdlib>
#include <iostream>

#include "backends/reference/reference_backend.h"

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

}  // namespace

BackendRegistry BuiltinBackends() {
  BackendRegistry registry;
  MustRegister(registry, "reference", "naive i-k-j loops, double accumulation: the oracle",
               FactoryOf<ReferenceBackend>());
  return registry;
}

}  // namespace mm
