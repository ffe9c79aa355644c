// The plugin loader's adapter to the plugin ABI (mm/mm_backend_plugin.h), private to
// backends/plugin: the ABI versions it reads, a plugin's table copied and checked, and every value
// that crosses the C boundary converted (a problem and tensors to the ABI; status codes, support
// answers, arithmetic declarations and texts from it). The rest of the loader speaks mm's types.
#ifndef MM_BACKENDS_PLUGIN_ABI_ADAPTER_H_
#define MM_BACKENDS_PLUGIN_ABI_ADAPTER_H_

#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "mm/engine/arithmetic.h"
#include "mm/engine/backend.h"
#include "mm/engine/dtype.h"
#include "mm/engine/matmul_plan.h"
#include "mm/engine/status.h"
#include "mm/mm_backend_plugin.h"

namespace mm::plugin_internal {

// ---- Versions and tables ------------------------------------------------------------------------

// One version of the ABI as the loader reads it. A new version is one more row of kAbiVersions
// (abi_adapter.cc) and adapters for the functions it adds; the checks below follow the rows.
struct AbiVersion {
  std::uint32_t number;
  std::size_t table_size;  // The bytes of mm_backend_plugin a table of this version has.
};

// The row of `number`, or nullptr when this mm does not speak that version (or it is no version).
const AbiVersion* FindAbiVersion(std::int64_t number);

// A copy of `table` as its version defines it (the fields of later versions zero, e.g. no
// arithmetic() in a version-1 table): the version comes first in every table, and nothing past
// its version's size is read. Another version is the refusal naming both.
StatusOr<mm_backend_plugin> CopyTable(const mm_backend_plugin& table);

// The promises of a table mm checks before anything else: a valid name, no NULL required function,
// (version 3) op_supports and op_compute both set or both NULL.
Status CheckTable(const mm_backend_plugin& table);

// Whether two copies of a plugin's table (CopyTable's) are the same table: the same functions and
// texts, field by field (their padding is not compared).
bool SameTable(const mm_backend_plugin& a, const mm_backend_plugin& b);

// Whether `name` may name a backend (io::CheckName, as "the backend name").
Status CheckName(const std::string& name);

// ---- Calls and texts ----------------------------------------------------------------------------

// Size of every text buffer handed to a plugin (the header promises at least 256).
inline constexpr std::size_t kTextCapacity = 1024;

// Text from a plugin as mm can print and store it: valid UTF-8 sequences kept (strictly: no
// overlong forms, surrogates or code points above U+10FFFF, as JSON writers demand), control
// characters (C0, DEL and C1: io::IsControl) and every other byte replaced by '?'.
std::string Sanitized(std::string_view text);

// A zero-filled buffer the plugin writes a NUL-terminated string into; Text() never reads past it
// even when the plugin forgot the NUL, and returns it Sanitized.
class TextBuffer {
 public:
  char* data() { return buffer_.data(); }
  std::size_t capacity() const { return buffer_.size(); }
  std::string Text() {
    buffer_.back() = '\0';
    return Sanitized(buffer_.data());
  }

 private:
  std::array<char, kTextCapacity> buffer_{};
};

// Runs `call`, a call into the plugin. A process the plugin forked during it never returns into
// mm: only the process that called answers (a copy would answer a second time, and run on with
// mm's state).
template <class Call>
decltype(auto) CallPlugin(Call&& call) {
  const pid_t caller = getpid();
  struct LeaveIfCopy {
    pid_t caller;
    ~LeaveIfCopy() {
      if (getpid() != caller) _exit(0);
    }
  } leave{caller};
  return call();
}

// ---- To the ABI ---------------------------------------------------------------------------------

// The mm_dtype of `dtype` (its ONNX enum).
std::int32_t ToPluginDType(DType dtype);

// The position of `dtype` in kAllDTypes.
std::size_t DTypeIndex(DType dtype);

// The problem as the ABI describes it, pointing into a plan this object keeps.
class Problem {
 public:
  explicit Problem(MatMulPlan plan);
  Problem(const Problem&) = delete;
  Problem& operator=(const Problem&) = delete;

  const mm_matmul_problem* get() const { return &problem_; }
  const MatMulPlan& plan() const { return plan_; }

 private:
  MatMulPlan plan_;
  mm_matmul_problem problem_{};
};

// Sets the fields a MatMul problem and a family problem (mm_matmul_problem, mm_op_problem) share,
// Y's shape and what mm derived of the product, from `plan` (which must outlive `problem`).
template <class PluginProblem>
void SetProduct(const MatMulPlan& plan, PluginProblem& problem) {
  problem.y_rank = static_cast<std::int32_t>(plan.y_dims.size());
  problem.y_dims = plan.y_dims.empty() ? nullptr : plan.y_dims.data();
  problem.m = plan.m;
  problem.n = plan.n;
  problem.k = plan.k;
  problem.batch = plan.batch;
  problem.batch_rank = static_cast<std::int32_t>(plan.batch_dims.size());
  const bool has_batch = !plan.batch_dims.empty();
  problem.batch_dims = has_batch ? plan.batch_dims.data() : nullptr;
  problem.a_batch_strides = has_batch ? plan.a_batch_strides.data() : nullptr;
  problem.b_batch_strides = has_batch ? plan.b_batch_strides.data() : nullptr;
}

// An input (A, B) or the output (Y) as the ABI describes it, pointing into `dims` (empty: a
// scalar, with NULL dims).
mm_const_tensor ToPluginInput(std::int32_t dtype, std::span<const std::int64_t> dims,
                              const void* data);
mm_tensor ToPluginOutput(std::int32_t dtype, std::span<const std::int64_t> dims, void* data);

// ---- From the ABI -------------------------------------------------------------------------------

// One value per dtype of kAllDTypes, at DTypeIndex.
template <class T>
using PerDType = std::array<T, kAllDTypes.size()>;

// What this process keeps of a plugin, learnt in the load child: everything but its code.
struct PluginInfo {
  std::string name;
  std::string description;  // Sanitized; may be empty.
  std::uint32_t abi_version = 0;
  PerDType<Arithmetic> arithmetic;  // Declared (or default), per dtype.
  // Version 3: whether the table computes the family (op_supports and op_compute set), and
  // op_arithmetic()'s declaration for Gemm per Y dtype (its own type for the others, and without
  // a declaration).
  bool computes_family = false;
  PerDType<Arithmetic> gemm_arithmetic;
};

// The function `what` of the plugin answered `answer` with `note` (supports() or op_supports(),
// for the problem `problem`); a contract violation (an answer outside the three values, or no note
// where one is required) is returned as an error.
StatusOr<Support> FromPluginSupport(std::string_view what, std::int32_t answer, std::string note,
                                    const std::string& problem);
// supports()'s answer for `desc`.
StatusOr<Support> FromPluginSupport(std::int32_t answer, std::string note, const MatMulDesc& desc);

// True when a plugin's failure comes without the message the ABI requires.
bool IsViolation(std::int32_t code, TextBuffer& text);

// A plugin's status and message from `function` as a Status; a failure without a message is
// itself a contract violation, reported as such.
Status FromPluginStatus(std::string_view function, std::int32_t code, TextBuffer& text,
                        const MatMulDesc& desc);
// The same for a problem described by `problem` ("MatMulInteger-10 uint8 x int8 -> int32").
Status FromPluginStatus(std::string_view function, std::int32_t code, TextBuffer& text,
                        const std::string& problem);

// arithmetic()'s or op_arithmetic()'s `answer` for Y's `dtype`, checked (see mm_arithmetic); `what`
// begins the refusal ("arithmetic() of plugin 'NAME' for float16 declared ").
StatusOr<Arithmetic> FromPluginArithmetic(DType dtype, const mm_arithmetic& answer,
                                          const std::string& what);

// Asks `table`'s arithmetic() for every dtype and (version 3) op_arithmetic() for Gemm's float
// types, and keeps the answers in `info` (whose name it uses); the first invalid one (see
// mm_arithmetic) is the refusal, naming the plugin, the function and the dtype. Without the
// function (and for earlier versions) every dtype keeps its own type.
Status AskArithmetic(const mm_backend_plugin& table, PluginInfo& info);

}  // namespace mm::plugin_internal

#endif  // MM_BACKENDS_PLUGIN_ABI_ADAPTER_H_
