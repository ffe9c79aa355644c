#include "plugin_family.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "family_adapter.h"

namespace mm::plugin_internal {
namespace {

// Bytes of canary on each side of the Y the plugin writes.
constexpr std::size_t kSlack = 256;
constexpr std::byte kCanary{0xA5};

std::size_t Bytes(const TensorView& view) {
  return view.data == nullptr
             ? 0
             : static_cast<std::size_t>(view.NumElements()) * DTypeSize(view.dtype);
}

// A copy of every input of a plan (name and bytes), to see whether a plugin changed one.
struct InputSnapshot {
  struct Input {
    const char* name;
    TensorView view;
    std::vector<std::byte> bytes;
  };
  std::vector<Input> inputs;

  explicit InputSnapshot(const family::Plan& plan) {
    const std::pair<const char*, TensorView> views[] = {{"A", plan.a},
                                                        {"B", plan.b},
                                                        {"C", plan.gemm.c},
                                                        {"a_zero_point", plan.a_zero_point.tensor},
                                                        {"b_zero_point", plan.b_zero_point.tensor},
                                                        {"a_scale", plan.a_scale.tensor},
                                                        {"b_scale", plan.b_scale.tensor},
                                                        {"y_scale", plan.y_scale.tensor},
                                                        {"y_zero_point", plan.y_zero_point.tensor}};
    for (const auto& [name, view] : views) {
      const auto* data = static_cast<const std::byte*>(view.data);
      inputs.push_back({name, view, std::vector<std::byte>(data, data + Bytes(view))});
    }
  }

  // The first input whose bytes changed since, named; OK when none did.
  Status Unchanged() const {
    for (const Input& input : inputs) {
      if (input.bytes.empty()) continue;
      const auto* now = static_cast<const std::byte*>(input.view.data);
      const auto changed = std::mismatch(input.bytes.begin(), input.bytes.end(), now);
      if (changed.first != input.bytes.end()) {
        return DataLossError("modified input " + std::string(input.name) + " (first changed byte " +
                             std::to_string(changed.first - input.bytes.begin()) + " of " +
                             std::to_string(input.bytes.size()) + ")");
      }
    }
    return OkStatus();
  }
};

// How many bytes of the slack before Y (`before`) or after it were written.
std::size_t Reach(const std::byte* slack, bool before) {
  for (std::size_t i = 0; i < kSlack; ++i) {
    const std::size_t at = before ? i : kSlack - 1 - i;
    if (slack[at] != kCanary) return kSlack - i;
  }
  return 0;
}

// op_supports()'s answer, checked; the refusal naming the ABI version for a plugin that computes
// MatMul only.
StatusOr<Support> AskSupports(Library& library, const family::OpDesc& desc) {
  const PluginInfo& info = library.info();
  if (desc.op == family::Op::kMatMul) {
    return Support::No("MatMul is asked through Backend::Supports with its shapes");
  }
  if (info.abi_version < 3) {
    return Support::No("plugin '" + info.name + "' speaks plugin ABI version " +
                       std::to_string(info.abi_version) + ", which carries MatMul only; " +
                       std::string(family::OpName(desc.op)) +
                       " needs version 3 (op_supports and op_compute)");
  }
  if (!info.computes_family) {
    return Support::No("plugin '" + info.name + "' computes MatMul only (its ABI version " +
                       std::to_string(info.abi_version) + " table has no op_supports)");
  }
  const mm_op_desc asked = ToPluginOpDesc(desc);
  TextBuffer text;
  std::int32_t answer;
  {
    std::lock_guard lock(library.mutex());
    answer = CallPlugin(
        [&] { return library.table().op_supports(&asked, text.data(), text.capacity()); });
  }
  return FromPluginSupport("op_supports", answer, text.Text(), desc.ToString());
}

class PluginFamily final : public family::FamilyBackend {
 public:
  explicit PluginFamily(std::shared_ptr<Library> library) : library_(std::move(library)) {}

  Support SupportsOp(const family::OpDesc& desc) const override {
    auto support = AskSupports(*library_, desc);
    // A contract violation must not look like a declared UNSUPPORTED: Compute asks again and
    // reports it as an error.
    if (!support.ok()) return Support::Native();
    return *support;
  }

  Arithmetic DeclaredArithmetic(const family::OpDesc& desc) const override {
    if (desc.op == family::Op::kGemm && IsMatMulDType(desc.y_dtype)) {
      return library_->info().gemm_arithmetic[DTypeIndex(desc.y_dtype)];
    }
    return Arithmetic::OwnType(desc.y_dtype);
  }

  Status Compute(const family::Plan& plan, MutableTensorView y) override {
    const family::OpDesc desc = family::DescOf(plan);
    StatusOr<Support> support = AskSupports(*library_, desc);
    if (!support.ok()) return support.status().WithContext(library_->Who());
    if (!support->supported()) {
      return UnimplementedError(library_->Who() + " does not compute " + desc.ToString() + ": " +
                                support->note);
    }
    const OpProblem problem(plan);
    const InputSnapshot inputs(plan);
    const std::size_t bytes = Bytes(y);
    std::vector<std::byte> guarded(kSlack + bytes + kSlack, kCanary);
    if (bytes > 0) std::memcpy(guarded.data() + kSlack, y.data, bytes);
    const mm_tensor y_tensor =
        ToPluginOutput(ToPluginDType(y.dtype), y.dims, guarded.data() + kSlack);
    TextBuffer text;
    std::int32_t code;
    {
      std::lock_guard lock(library_->mutex());
      code = CallPlugin([&] {
        return library_->table().op_compute(problem.get(), &y_tensor, text.data(), text.capacity());
      });
    }
    MM_RETURN_IF_ERROR(
        FromPluginStatus("op_compute", code, text, desc.ToString()).WithContext(library_->Who()));
    MM_RETURN_IF_ERROR(CheckWrites(guarded, bytes).WithContext(library_->Who()));
    MM_RETURN_IF_ERROR(inputs.Unchanged().WithContext(library_->Who()));
    if (bytes > 0) std::memcpy(y.data, guarded.data() + kSlack, bytes);
    return OkStatus();
  }

  std::string Implementation(const family::OpDesc& desc) const override {
    const auto describe = library_->table().op_describe;
    if (describe == nullptr || !library_->info().computes_family) return "";
    const mm_op_desc asked = ToPluginOpDesc(desc);
    TextBuffer text;
    {
      std::lock_guard lock(library_->mutex());
      CallPlugin([&] { describe(&asked, text.data(), text.capacity()); });
    }
    return text.Text();
  }

 private:
  // The refusal of a plugin that wrote outside Y (into `guarded`'s slack around its `bytes`).
  static Status CheckWrites(const std::vector<std::byte>& guarded, std::size_t bytes) {
    if (const std::size_t before = Reach(guarded.data(), /*before=*/true); before > 0) {
      return DataLossError("op_compute() wrote " + std::to_string(before) +
                           " bytes before the start of Y");
    }
    if (const std::size_t after = Reach(guarded.data() + kSlack + bytes, false); after > 0) {
      return DataLossError("op_compute() wrote " + std::to_string(after) +
                           " bytes past the end of Y");
    }
    return OkStatus();
  }

  std::shared_ptr<Library> library_;
};

}  // namespace

std::unique_ptr<family::FamilyBackend> MakePluginFamily(std::shared_ptr<Library> library) {
  return std::make_unique<PluginFamily>(std::move(library));
}

Status ProbeFamily(Library& library) {
  if (!library.info().computes_family) return OkStatus();
  for (const family::OpDesc& desc : FamilyDescs()) {
    MM_RETURN_IF_ERROR(AskSupports(library, desc).status());
  }
  return OkStatus();
}

}  // namespace mm::plugin_internal
