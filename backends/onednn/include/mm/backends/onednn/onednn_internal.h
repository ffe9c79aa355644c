// Pieces of the oneDNN backend exposed for its tests: how a plan becomes oneDNN's problem, and how
// oneDNN's errors become a Status. Not part of the engine API.
#ifndef MM_BACKENDS_ONEDNN_ONEDNN_INTERNAL_H_
#define MM_BACKENDS_ONEDNN_ONEDNN_INTERNAL_H_

#include <oneapi/dnnl/dnnl.hpp>
#include <string_view>

#include "mm/engine/backend.h"
#include "mm/engine/matmul_plan.h"
#include "mm/engine/status.h"

namespace mm::onednn_internal {

// oneDNN's dims limit (DNNL_MAX_NDIMS) and the largest extent we hand it: oneDNN 2.6 crashes
// (SIGFPE inside primitive creation) on an M of 2^32, so extents stay within int32.
inline constexpr int kMaxRank = DNNL_MAX_NDIMS;
inline constexpr std::int64_t kMaxExtent = 2147483647;

// The dense row-major problem oneDNN computes for a plan: src [batch..., m, k], weights
// [batch..., k, n], dst [batch..., m, n], all of one rank, with batch axes collapsed where exact:
// axes where Y has extent 1 are dropped, neighbouring axes merged when each operand is either full
// on both or broadcast on both, and a batch that shares one B matrix (and has A as a plain stack)
// folded into M. The bytes of A, B and Y are unchanged: only their description is.
struct ProblemShapes {
  Dims src;
  Dims weights;
  Dims dst;
};
ProblemShapes CollapseShapes(const MatMulPlan& plan);

// `yes` unless the problem of `plan`, collapsed (CollapseShapes), is beyond what oneDNN handles
// (more than kMaxRank dims, an extent above kMaxExtent): then kNo with the reason. Plans with an
// empty Y or K = 0 are `yes` (they never reach oneDNN).
Support WithinOneDnnLimits(const MatMulPlan& plan, Support yes);

// Row-major strides of `dims` (the stride of an axis is the product of the extents after it).
Dims DenseStrides(const Dims& dims);

// A Status for oneDNN status `status` met while `doing` (e.g. "creating the matmul primitive") for
// `desc`: names the oneDNN status (dnnl_status2str), the problem and oneDNN's message. Codes:
// out_of_memory -> RESOURCE_EXHAUSTED, invalid_arguments -> INVALID_ARGUMENT, unimplemented ->
// UNIMPLEMENTED, anything else -> INTERNAL.
Status StatusFromDnnl(dnnl_status_t status, std::string_view doing, const MatMulDesc& desc,
                      std::string_view detail = {});
inline Status StatusFromDnnlError(const dnnl::error& error, std::string_view doing,
                                  const MatMulDesc& desc) {
  return StatusFromDnnl(error.status, doing, desc, error.what());
}

}  // namespace mm::onednn_internal

#endif  // MM_BACKENDS_ONEDNN_ONEDNN_INTERNAL_H_
