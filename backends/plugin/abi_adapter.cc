#include "abi_adapter.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <optional>
#include <utility>

#include "family_adapter.h"
#include "mm/engine/io/names.h"
#include "mm/engine/io/text.h"

namespace mm::plugin_internal {
namespace {

// The versions this loader reads, oldest first, one row each. Version 2 appended arithmetic() to
// version 1's table; version 3 the family's four functions.
constexpr AbiVersion kAbiVersions[] = {
    {1, MM_BACKEND_PLUGIN_V1_SIZE},
    {2, MM_BACKEND_PLUGIN_V2_SIZE},
    {3, sizeof(mm_backend_plugin)},
};

constexpr bool RowsAreTheHeadersVersions() {
  std::uint32_t expected = MM_BACKEND_PLUGIN_ABI_VERSION_OLDEST;
  for (const AbiVersion& version : kAbiVersions) {
    if (version.number != expected++ || version.table_size > sizeof(mm_backend_plugin)) {
      return false;
    }
  }
  return expected == MM_BACKEND_PLUGIN_ABI_VERSION + 1;
}
static_assert(
    RowsAreTheHeadersVersions(),
    "kAbiVersions must have one row per version from MM_BACKEND_PLUGIN_ABI_VERSION_OLDEST "
    "to MM_BACKEND_PLUGIN_ABI_VERSION");

std::string_view PluginStatusName(std::int32_t code) {
  switch (code) {
    case MM_STATUS_OK:
      return "OK";
    case MM_STATUS_INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case MM_STATUS_RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case MM_STATUS_UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case MM_STATUS_INTERNAL:
      return "INTERNAL";
  }
  return "UNKNOWN";
}

StatusCode ToStatusCode(std::int32_t code) {
  switch (code) {
    case MM_STATUS_INVALID_ARGUMENT:
      return StatusCode::kInvalidArgument;
    case MM_STATUS_RESOURCE_EXHAUSTED:
      return StatusCode::kResourceExhausted;
    case MM_STATUS_UNIMPLEMENTED:
      return StatusCode::kUnimplemented;
    case MM_STATUS_INTERNAL:
      return StatusCode::kInternal;
  }
  return StatusCode::kUnknown;
}

}  // namespace

StatusOr<Arithmetic> FromPluginArithmetic(DType dtype, const mm_arithmetic& answer,
                                          const std::string& what) {
  std::optional<DType> accumulation;
  for (DType candidate : kAllDTypes) {
    if (ToPluginDType(candidate) == answer.accumulation) accumulation = candidate;
  }
  if (!accumulation) {
    return InvalidArgumentError(what + "accumulation type " + std::to_string(answer.accumulation) +
                                ", which is not an mm_dtype");
  }
  if (IsFloat(dtype) && !IsFloat(*accumulation)) {
    return InvalidArgumentError(what + "accumulation in " + std::string(DTypeName(*accumulation)) +
                                "; a float dtype accumulates in float, double, float16 or "
                                "bfloat16");
  }
  if (!IsFloat(dtype) && *accumulation != dtype) {
    return InvalidArgumentError(what + "accumulation in " + std::string(DTypeName(*accumulation)) +
                                "; an integer dtype is exact modulo 2^bits: declare the dtype "
                                "itself");
  }
  if (answer.flushes_subnormals != 0 && answer.flushes_subnormals != 1) {
    return InvalidArgumentError(what + "flushes_subnormals = " +
                                std::to_string(answer.flushes_subnormals) + "; valid are 0 and 1");
  }
  if (!IsFloat(dtype) && answer.flushes_subnormals != 0) {
    return InvalidArgumentError(what + "flushes_subnormals = 1; integers have no subnormals");
  }
  return Arithmetic{*accumulation, answer.flushes_subnormals == 1};
}

const AbiVersion* FindAbiVersion(std::int64_t number) {
  const auto* row = std::find_if(std::begin(kAbiVersions), std::end(kAbiVersions),
                                 [number](const AbiVersion& v) { return v.number == number; });
  return row != std::end(kAbiVersions) ? row : nullptr;
}

StatusOr<mm_backend_plugin> CopyTable(const mm_backend_plugin& table) {
  const std::uint32_t number = table.abi_version;
  const AbiVersion* version = FindAbiVersion(number);
  if (version == nullptr) {
    return InvalidArgumentError("speaks plugin ABI version " + std::to_string(number) +
                                ", but this mm speaks versions " +
                                std::to_string(MM_BACKEND_PLUGIN_ABI_VERSION_OLDEST) + " to " +
                                std::to_string(MM_BACKEND_PLUGIN_ABI_VERSION) +
                                "; rebuild the plugin against this mm's mm/mm_backend_plugin.h");
  }
  mm_backend_plugin copy{};
  std::memcpy(&copy, &table, version->table_size);
  return copy;
}

Status CheckTable(const mm_backend_plugin& table) {
  if (table.name == nullptr) return InvalidArgumentError("the backend name is NULL");
  MM_RETURN_IF_ERROR(CheckName(table.name));
  std::string null_functions;
  for (const auto& [field, is_null] : {std::pair{"supports", table.supports == nullptr},
                                       {"prepare", table.prepare == nullptr},
                                       {"execute", table.execute == nullptr},
                                       {"release", table.release == nullptr}}) {
    if (is_null) null_functions += (null_functions.empty() ? "" : ", ") + std::string(field);
  }
  if (!null_functions.empty()) {
    return InvalidArgumentError("required function pointer(s) NULL in the table of '" +
                                std::string(table.name) + "': " + null_functions);
  }
  if ((table.op_supports == nullptr) != (table.op_compute == nullptr)) {
    return InvalidArgumentError(
        std::string("the table of '") + table.name + "' sets " +
        (table.op_supports != nullptr ? "op_supports but not op_compute"
                                      : "op_compute but not op_supports") +
        "; a plugin computing MatMul's family sets both, one computing MatMul only neither");
  }
  return OkStatus();
}

bool SameTable(const mm_backend_plugin& a, const mm_backend_plugin& b) {
  return a.abi_version == b.abi_version && a.name == b.name && a.description == b.description &&
         a.supports == b.supports && a.prepare == b.prepare && a.execute == b.execute &&
         a.release == b.release && a.describe == b.describe && a.arithmetic == b.arithmetic &&
         a.op_supports == b.op_supports && a.op_arithmetic == b.op_arithmetic &&
         a.op_compute == b.op_compute && a.op_describe == b.op_describe;
}

Status CheckName(const std::string& name) { return io::CheckName(name, "the backend name"); }

std::string Sanitized(std::string_view text) { return io::ReplacingControls(text, "?"); }

std::int32_t ToPluginDType(DType dtype) { return GetDTypeInfo(dtype).onnx_enum; }

std::size_t DTypeIndex(DType dtype) {
  return static_cast<std::size_t>(std::find(kAllDTypes.begin(), kAllDTypes.end(), dtype) -
                                  kAllDTypes.begin());
}

Problem::Problem(MatMulPlan plan) : plan_(std::move(plan)) {
  problem_.dtype = ToPluginDType(plan_.desc.dtype);
  problem_.a_rank = static_cast<std::int32_t>(plan_.desc.a_dims.size());
  problem_.a_dims = plan_.desc.a_dims.data();
  problem_.b_rank = static_cast<std::int32_t>(plan_.desc.b_dims.size());
  problem_.b_dims = plan_.desc.b_dims.data();
  SetProduct(plan_, problem_);
}

mm_const_tensor ToPluginInput(std::int32_t dtype, std::span<const std::int64_t> dims,
                              const void* data) {
  return {dtype, static_cast<std::int32_t>(dims.size()), dims.empty() ? nullptr : dims.data(),
          data};
}

mm_tensor ToPluginOutput(std::int32_t dtype, std::span<const std::int64_t> dims, void* data) {
  return {dtype, static_cast<std::int32_t>(dims.size()), dims.empty() ? nullptr : dims.data(),
          data};
}

StatusOr<Support> FromPluginSupport(std::string_view what, std::int32_t answer, std::string note,
                                    const std::string& problem) {
  switch (answer) {
    case MM_SUPPORT_NATIVE:
      return Support::Native();
    case MM_SUPPORT_BY_CONVERSION:
    case MM_SUPPORT_NO:
      if (note.empty()) {
        return InternalError(std::string(what) + "() answered " +
                             (answer == MM_SUPPORT_NO ? "NO" : "BY_CONVERSION") + " for " +
                             problem + " without a note; the plugin ABI requires one");
      }
      return answer == MM_SUPPORT_NO ? Support::No(std::move(note))
                                     : Support::ByConversion(std::move(note));
  }
  return InternalError(std::string(what) + "() answered " + std::to_string(answer) + " for " +
                       problem + "; valid answers are 0 (native), 1 (by conversion), 2 (no)");
}

StatusOr<Support> FromPluginSupport(std::int32_t answer, std::string note, const MatMulDesc& desc) {
  return FromPluginSupport("supports", answer, std::move(note), desc.ToString());
}

bool IsViolation(std::int32_t code, TextBuffer& text) {
  return code != MM_STATUS_OK && text.Text().empty();
}

Status FromPluginStatus(std::string_view function, std::int32_t code, TextBuffer& text,
                        const MatMulDesc& desc) {
  return FromPluginStatus(function, code, text, desc.ToString());
}

Status FromPluginStatus(std::string_view function, std::int32_t code, TextBuffer& text,
                        const std::string& problem) {
  if (code == MM_STATUS_OK) return OkStatus();
  std::string message = text.Text();
  const std::string code_text =
      std::to_string(code) + " (" + std::string(PluginStatusName(code)) + ")";
  if (message.empty()) {
    return InternalError(std::string(function) + "() returned status " + code_text +
                         " with no message for " + problem + "; the plugin ABI requires one");
  }
  return Status(ToStatusCode(code),
                std::string(function) + "() failed with " + code_text + ": " + message);
}

Status AskArithmetic(const mm_backend_plugin& table, PluginInfo& info) {
  for (DType dtype : kAllDTypes) {
    info.arithmetic[DTypeIndex(dtype)] = Arithmetic::OwnType(dtype);
    info.gemm_arithmetic[DTypeIndex(dtype)] = Arithmetic::OwnType(dtype);
  }
  info.computes_family = table.op_supports != nullptr;
  const auto declare = table.arithmetic;
  if (declare == nullptr) return AskGemmArithmetic(table, info);
  for (DType dtype : kAllDTypes) {
    mm_arithmetic answer{ToPluginDType(dtype), 0};
    CallPlugin([&] { declare(ToPluginDType(dtype), &answer); });
    const std::string what = "arithmetic() of plugin '" + info.name + "' for " +
                             std::string(DTypeName(dtype)) + " declared ";
    MM_ASSIGN_OR_RETURN(info.arithmetic[DTypeIndex(dtype)],
                        FromPluginArithmetic(dtype, answer, what));
  }
  return AskGemmArithmetic(table, info);
}

}  // namespace mm::plugin_internal
