#include "plugin_backend.h"

#include <utility>

#include "mm/backends/plugin/plugin_loader.h"
#include "plugin_family.h"

namespace mm {
namespace plugin_internal {
namespace {

class PluginBackend final : public Backend {
 public:
  explicit PluginBackend(std::shared_ptr<Library> library)
      : library_(std::move(library)), family_(MakePluginFamily(library_)) {}

  std::string_view name() const override { return library_->name(); }

  Support Supports(const MatMulDesc& desc) const override {
    auto plan = PlanMatMul(desc);
    if (!plan.ok()) return Support::No("not a valid MatMul: " + plan.status().message());
    Problem problem(std::move(*plan));
    auto support = library_->AskSupports(problem);
    // A contract violation must not look like a declared UNSUPPORTED: the caller goes on to
    // Prepare, whose PrepareProduct asks again and reports the violation as an error.
    if (!support.ok()) return Support::Native();
    return *support;
  }

  std::string RunsOn() const override {
    return "plugin " + library_->path() + " (ABI version " +
           std::to_string(library_->info().abi_version) + ")";
  }

  // What the plugin's arithmetic() declared at load time; its own dtype without one.
  Arithmetic DeclaredArithmetic(DType dtype) const override { return library_->arithmetic(dtype); }

  // Every plugin answers for the family: a version-3 plugin through its op_ functions, one that
  // computes MatMul only by refusing with a reason that names its ABI version.
  family::FamilyBackend* family() override { return family_.get(); }

  const std::string& library_path() const { return library_->absolute_path(); }

 protected:
  // Reached only when Supports() accepted the plan and K > 0 and Y is not empty: the engine
  // answers those (the ABI promises plugins they never see them).
  StatusOr<std::unique_ptr<MatMulPrimitive>> PrepareProduct(const MatMulPlan& plan) override {
    Problem problem(plan);
    auto asked = library_->AskSupports(problem);
    if (!asked.ok()) return asked.status().WithContext(library_->Who());
    if (!asked->supported()) {
      return UnimplementedError(library_->Who() + " does not support " + plan.desc.ToString() +
                                ": " + asked->note);
    }
    TextBuffer text;
    void* handle = nullptr;
    std::int32_t code;
    {
      std::lock_guard lock(library_->mutex());
      code = CallPlugin([&] {
        return library_->table().prepare(problem.get(), &handle, text.data(), text.capacity());
      });
    }
    MM_RETURN_IF_ERROR(
        FromPluginStatus("prepare", code, text, plan.desc).WithContext(library_->Who()));
    return std::unique_ptr<MatMulPrimitive>(
        std::make_unique<PluginPrimitive>(plan, library_, handle));
  }

 private:
  std::shared_ptr<Library> library_;
  std::unique_ptr<family::FamilyBackend> family_;
};

}  // namespace

std::unique_ptr<Backend> MakePluginBackend(std::shared_ptr<Library> library) {
  return std::make_unique<PluginBackend>(std::move(library));
}

}  // namespace plugin_internal

std::string PluginLibraryPath(const Backend& backend) {
  const auto* plugin = dynamic_cast<const plugin_internal::PluginBackend*>(&backend);
  return plugin != nullptr ? plugin->library_path() : std::string();
}

}  // namespace mm
