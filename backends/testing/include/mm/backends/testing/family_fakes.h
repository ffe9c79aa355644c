// Fake family backends for tests above the engine: one that computes MatMul and the family
// operators it is given exactly as the reference backend does, accepting the descriptions a test
// chooses, so that a test tells which backend ran by its name (auto's choice among candidates);
// one that computes as the reference does and then writes where it must not (the write guard).
#ifndef MM_BACKENDS_TESTING_FAMILY_FAKES_H_
#define MM_BACKENDS_TESTING_FAMILY_FAKES_H_

#include <cstddef>
#include <functional>
#include <memory>
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

// What a scribbling fake does after computing Y as the reference backend does: given the plan it
// was handed (its views are the inputs it read) and Y.
using FamilyScribble = std::function<void(const family::Plan& plan, MutableTensorView y)>;

// A family backend `name` computing `op` (every version and type of it; no MatMul) as the
// reference backend does and then doing `scribble`: a backend that writes where it must not (past
// Y, before it, into an input), for the tests of the harness's write guard.
std::unique_ptr<Backend> MakeScribblingFamilyBackend(std::string name, family::Op op,
                                                     FamilyScribble scribble);

// Flips every bit of the byte at `offset` of the input `input` is a view of (a scribble: the
// input's memory is the backend's caller's, which it must not change).
void FlipByte(const TensorView& input, std::size_t offset);

}  // namespace mm::testing

#endif  // MM_BACKENDS_TESTING_FAMILY_FAKES_H_
