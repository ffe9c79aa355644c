#include "plugin_family.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <optional>
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
    // ONNX's names: QLinearMatMul's operands are a and b.
    const bool qlinear = plan.op == family::Op::kQLinearMatMul;
    const std::pair<const char*, TensorView> views[] = {{qlinear ? "a" : "A", plan.a},
                                                        {qlinear ? "b" : "B", plan.b},
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

// The refusal of a plugin that wrote outside Y (into `guarded`'s slack around its `bytes`).
Status CheckWrites(const std::vector<std::byte>& guarded, std::size_t bytes) {
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

// Calls op_compute() for `plan` into `y` (poisoned by the caller), with Y guarded by canaries and
// the inputs copied: the plugin's status code (its message in `text`), or the promise it broke (a
// write outside Y, a changed input) as the error. Y keeps its poison unless the call succeeded.
StatusOr<std::int32_t> CallCompute(Library& library, const family::Plan& plan, MutableTensorView y,
                                   TextBuffer& text) {
  const OpProblem problem(plan);
  const InputSnapshot inputs(plan);
  const std::size_t bytes = Bytes(y);
  std::vector<std::byte> guarded(kSlack + bytes + kSlack, kCanary);
  if (bytes > 0) std::memcpy(guarded.data() + kSlack, y.data, bytes);
  const mm_tensor y_tensor =
      ToPluginOutput(ToPluginDType(y.dtype), y.dims, guarded.data() + kSlack);
  std::int32_t code;
  {
    std::lock_guard lock(library.mutex());
    code = CallPlugin([&] {
      return library.table().op_compute(problem.get(), &y_tensor, text.data(), text.capacity());
    });
  }
  MM_RETURN_IF_ERROR(CheckWrites(guarded, bytes));
  MM_RETURN_IF_ERROR(inputs.Unchanged());
  if (code == MM_STATUS_OK && bytes > 0) std::memcpy(y.data, guarded.data() + kSlack, bytes);
  return code;
}

// A problem of `desc` at its operator's newest version: A [2, 3] and B [3, 4] of zeros, Gemm
// without C, MatMulInteger without zero points, QLinearMatMul's parameters per tensor (zero points
// 0, scales 1). `tensors` holds the data.
StatusOr<family::Plan> ProbeProblem(const family::OpDesc& desc, std::deque<Tensor>& tensors,
                                    family::Problem& problem) {
  problem.op = desc.op;
  problem.version = desc.version;
  const auto add = [&](std::string name, DType dtype, Dims dims, double value) -> Status {
    MM_ASSIGN_OR_RETURN(Tensor t, Tensor::Create(dtype, std::move(dims)));
    VisitElementType(dtype, [&](auto tag) {
      using T = CppType<decltype(tag)::value>;
      for (std::int64_t i = 0; i < t.NumElements(); ++i) t.Data<T>()[i] = RoundFromDouble<T>(value);
    });
    problem.inputs.push_back({std::move(name), tensors.emplace_back(std::move(t)).view()});
    return OkStatus();
  };
  const bool qlinear = desc.op == family::Op::kQLinearMatMul;
  MM_RETURN_IF_ERROR(add(qlinear ? "a" : "A", desc.a_dtype, {2, 3}, 0));
  MM_RETURN_IF_ERROR(add(qlinear ? "b" : "B", desc.b_dtype, {3, 4}, 0));
  if (qlinear) {
    for (const char* scale : {"a_scale", "b_scale", "y_scale"}) {
      MM_RETURN_IF_ERROR(add(scale, desc.scale_dtype, {}, 1));
    }
    MM_RETURN_IF_ERROR(add("a_zero_point", desc.a_dtype, {}, 0));
    MM_RETURN_IF_ERROR(add("b_zero_point", desc.b_dtype, {}, 0));
    MM_RETURN_IF_ERROR(add("y_zero_point", desc.y_dtype, {}, 0));
  }
  return family::PlanProblem(problem);
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
    TextBuffer text;
    const StatusOr<std::int32_t> code = CallCompute(*library_, plan, y, text);
    if (!code.ok()) return code.status().WithContext(library_->Who());
    return FromPluginStatus("op_compute", *code, text, desc.ToString())
        .WithContext(library_->Who());
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
  std::shared_ptr<Library> library_;
};

}  // namespace

std::unique_ptr<family::FamilyBackend> MakePluginFamily(std::shared_ptr<Library> library) {
  return std::make_unique<PluginFamily>(std::move(library));
}

Status ProbeFamily(Library& library) {
  if (!library.info().computes_family) return OkStatus();
  std::optional<family::OpDesc> runnable;
  for (const family::OpDesc& desc : FamilyDescs()) {
    MM_ASSIGN_OR_RETURN(const Support support, AskSupports(library, desc));
    const bool newest = desc.version == family::OpVersions(desc.op).back();
    if (support.supported() && newest && !runnable) runnable = desc;
  }
  if (!runnable) return OkStatus();
  std::deque<Tensor> tensors;
  family::Problem problem;
  MM_ASSIGN_OR_RETURN(const family::Plan plan, ProbeProblem(*runnable, tensors, problem));
  MM_ASSIGN_OR_RETURN(Tensor y, Tensor::Create(plan.y_dtype, plan.y_dims()));
  TextBuffer text;
  MM_ASSIGN_OR_RETURN(const std::int32_t code, CallCompute(library, plan, y.mutable_view(), text));
  return IsViolation(code, text) ? FromPluginStatus("op_compute", code, text, runnable->ToString())
                                 : OkStatus();
}

}  // namespace mm::plugin_internal
