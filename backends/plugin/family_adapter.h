// The plugin ABI's family (version 3 of mm/mm_backend_plugin.h), private to backends/plugin: a
// family problem and its description converted to the C ABI, the descriptions a plugin is asked
// about at load time, and its Gemm arithmetic asked and checked.
#ifndef MM_BACKENDS_PLUGIN_FAMILY_ADAPTER_H_
#define MM_BACKENDS_PLUGIN_FAMILY_ADAPTER_H_

#include <vector>

#include "abi_adapter.h"
#include "mm/engine/status.h"
#include "mm/family/backend.h"
#include "mm/family/plan.h"
#include "mm/mm_backend_plugin.h"

namespace mm::plugin_internal {

// `desc` as the ABI describes it (scale_dtype 0 except for QLinearMatMul).
mm_op_desc ToPluginOpDesc(const family::OpDesc& desc);

// Every operator of the family beyond MatMul at every version, with every combination of element
// types the version takes (Gemm's T; MatMulInteger's A and B; QLinearMatMul's a, b, y and scales):
// what op_supports() is asked at load time.
std::vector<family::OpDesc> FamilyDescs();

// A planned problem as the ABI describes it, pointing into the plan (which must outlive it) and
// into this object.
class OpProblem {
 public:
  explicit OpProblem(const family::Plan& plan);
  OpProblem(const OpProblem&) = delete;
  OpProblem& operator=(const OpProblem&) = delete;

  const mm_op_problem* get() const { return &problem_; }

 private:
  mm_op_problem problem_{};
};

// Asks `table`'s op_arithmetic() (version 3) for Gemm's float Y types and keeps the answers in
// `info.gemm_arithmetic`; the first invalid one is the refusal ("op_arithmetic() of plugin 'NAME'
// for Gemm-13 float16 declared ..."). Without the function every type keeps its own.
Status AskGemmArithmetic(const mm_backend_plugin& table, PluginInfo& info);

}  // namespace mm::plugin_internal

#endif  // MM_BACKENDS_PLUGIN_FAMILY_ADAPTER_H_
