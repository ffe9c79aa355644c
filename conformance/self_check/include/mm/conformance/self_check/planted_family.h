// Deliberately wrong backends of MatMul's family (Gemm, MatMulInteger, QLinearMatMul): each
// computes with the reference backend's family loops except for one fault that int8 and Gemm
// kernels really have (issue 52), so that the self-check can require the exact judgement
// (family::ExactFamily, family::JudgeFamily) to catch each on the built-in family catalogue
// (conformance/loader/family_cases.h) and to pass each where its fault cannot show; and one that
// writes past Y, which the harness's write guard (conformance/running/write_guard.h) must catch.
#ifndef MM_CONFORMANCE_SELF_CHECK_PLANTED_FAMILY_H_
#define MM_CONFORMANCE_SELF_CHECK_PLANTED_FAMILY_H_

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "mm/conformance/judging/verdict.h"
#include "mm/engine/backend.h"
#include "mm/family/plan.h"

namespace mm::self_check {

// The faults. kNone is the control: the reference's answer through the same wrapper.
enum class FamilyFault {
  kNone,
  // MatMulInteger and QLinearMatMul of uint8 A by int8 B: the raw products added in adjacent pairs
  // along K saturated to int16 (x86's vpmaddubsw: 255 x 127 twice gives 32,767, not 64,770), the
  // pair sums then added in int32 and the zero points subtracted exactly afterwards.
  kSaturatingPairs,
  kIgnoredBZeroPoint,   // b's zero point taken as 0.
  kPerTensorZeroPoint,  // A per-row zero point of A applied as per tensor (its element 0).
  kHalfAwayFromZero,    // QLinearMatMul's requantization rounds ties away from zero, not to even.
  kIgnoredBeta,         // Gemm's beta taken as 1.
  kBiasWrongAxis,       // Gemm's [N] bias broadcast along the wrong axis: C[i] (mod N) for Y[i, j].
  kIgnoredTransB,       // Gemm's transB ignored: B read as if stored [K, N].
  // The right Y, and the element after it changed (an off-by-one loop bound): every problem.
  kWritePastY,
};

// One planted family backend.
struct PlantedFamilyBackend {
  FamilyFault fault = FamilyFault::kNone;
  std::string name;  // Backend name, e.g. "family_saturating_pairs".
  std::string why;   // The fault in words.
  // The verdict its results deserve where its fault shows: FAIL (wrong elements), ERROR (a write
  // outside Y), PASS for the control.
  conformance::Verdict needed = conformance::Verdict::kFail;
  // What the message of a result with that verdict must say, when not empty (" past the end of
  // Y": the stray write caught for what it is, not by another error).
  std::string needed_text;
};

// Test names and messages show the planted backend's name.
inline void PrintTo(const PlantedFamilyBackend& planted, std::ostream* os) { *os << planted.name; }

// Every planted family backend: the control first, then in FamilyFault order.
const std::vector<PlantedFamilyBackend>& PlantedFamilyBackends();

// A backend named `planted.name`: MatMul as the reference computes it, and family() computing
// the family's operators with the reference's loops except for the fault. It declares the
// reference's arithmetic (it is held to it).
std::unique_ptr<Backend> MakePlantedFamilyBackend(const PlantedFamilyBackend& planted);

// The classes of the built-in family catalogue (FamilyCase::op_class) aimed at `fault`: each
// holds a case (in one or several types) the fault gives its needed verdict (FAIL; ERROR for
// kWritePastY, whose classes are one of each operator); every case of a "saturating-pairs",
// "ties" or "per-row-0,255,128" class FAILs. Empty for kNone. What the self-check runs a planted
// family backend on.
const std::vector<std::string>& ClassesAimedAt(FamilyFault fault);

// False when `fault` cannot change any element of `plan`'s Y, which the planted backend then
// computes exactly as the reference does (another operator, no uint8 x int8 pair, b's zero point
// all 0, no per-row zero point, beta 1 or no C, no [N] bias, transB 0); true when it may (always
// for kWritePastY, which writes past every Y).
bool FaultCanShow(FamilyFault fault, const family::Plan& plan);

}  // namespace mm::self_check

#endif  // MM_CONFORMANCE_SELF_CHECK_PLANTED_FAMILY_H_
