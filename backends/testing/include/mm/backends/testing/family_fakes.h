// Fake family backends for tests above the engine (auto's choice among candidates): a backend that
// computes MatMul and the family operators it is given exactly as the reference backend does,
// accepting the descriptions a test chooses, so that a test tells which backend ran by its name.
#ifndef MM_BACKENDS_TESTING_FAMILY_FAKES_H_
#define MM_BACKENDS_TESTING_FAMILY_FAKES_H_

#include <functional>
#include <string>
#include <vector>

#include "mm/engine/registry.h"
#include "mm/family/backend.h"

namespace mm::testing {

// What a fake family backend computes.
struct FakeFamilySpec {
  std::string name;
  // The operators it computes (family::Op::kMatMul among them: MatMul too, as the reference).
  std::vector<family::Op> ops;
  // Whether it takes a description of one of `ops`, with the reason when not (a library's
  // limitation); null: every one.
  std::function<Support(const family::OpDesc&)> accepts = nullptr;
  // Its declared arithmetic per description; null: Y's own type.
  std::function<Arithmetic(const family::OpDesc&)> arithmetic = nullptr;
};

// A factory of the fake `spec` describes, for BackendRegistry::Register. Its family's
// Implementation is "fake <name>: reference loops".
BackendFactory FakeFamilyFactory(FakeFamilySpec spec);

}  // namespace mm::testing

#endif  // MM_BACKENDS_TESTING_FAMILY_FAKES_H_
