#include "mm/engine/registry.h"

namespace mm {

Status BackendRegistry::Register(std::string name, std::string description, BackendFactory factory,
                                 Selection selection) {
  if (name.empty()) return InvalidArgumentError("a backend needs a name");
  if (!factory) return InvalidArgumentError("backend '" + name + "' has no factory");
  if (Find(name) != nullptr) {
    return Status(StatusCode::kAlreadyExists, "backend '" + name + "' is registered twice");
  }
  entries_.push_back({std::move(name), std::move(description), std::move(factory), {}, selection});
  return OkStatus();
}

Status BackendRegistry::RegisterUnavailable(std::string name, std::string description,
                                            std::string why) {
  if (name.empty()) return InvalidArgumentError("a backend needs a name");
  if (why.empty()) {
    return InvalidArgumentError("unavailable backend '" + name + "' needs a reason");
  }
  if (Find(name) != nullptr) {
    return Status(StatusCode::kAlreadyExists, "backend '" + name + "' is registered twice");
  }
  entries_.push_back(
      {std::move(name), std::move(description), nullptr, std::move(why), Selection::kByDefault});
  return OkStatus();
}

std::vector<std::string> BackendRegistry::Names() const {
  std::vector<std::string> names;
  names.reserve(entries_.size());
  for (const Entry& e : entries_) {
    if (e.unavailable.empty()) names.push_back(e.name);
  }
  return names;
}

std::vector<std::string> BackendRegistry::DefaultNames() const {
  std::vector<std::string> names;
  for (const Entry& e : entries_) {
    if (e.unavailable.empty() && e.selection == Selection::kByDefault) names.push_back(e.name);
  }
  return names;
}

bool BackendRegistry::Contains(std::string_view name) const {
  const Entry* e = Find(name);
  return e != nullptr && e->unavailable.empty();
}

std::vector<std::string> BackendRegistry::UnavailableNames() const {
  std::vector<std::string> names;
  for (const Entry& e : entries_) {
    if (!e.unavailable.empty()) names.push_back(e.name);
  }
  return names;
}

std::string BackendRegistry::UnavailableReason(std::string_view name) const {
  const Entry* e = Find(name);
  return e == nullptr ? std::string() : e->unavailable;
}

Status BackendRegistry::CheckSelectable(std::string_view name) const {
  const Entry* e = Find(name);
  if (e == nullptr) {
    std::string known;
    for (const std::string& n : Names()) known += (known.empty() ? "" : ", ") + n;
    return NotFoundError("no backend named '" + std::string(name) + "' (known: " + known + ")");
  }
  if (!e->unavailable.empty()) {
    return FailedPreconditionError("backend '" + e->name +
                                   "' is not available on this machine: " + e->unavailable);
  }
  return OkStatus();
}

std::string BackendRegistry::Description(std::string_view name) const {
  const Entry* e = Find(name);
  return e == nullptr ? std::string() : e->description;
}

StatusOr<std::unique_ptr<Backend>> BackendRegistry::Create(std::string_view name) const {
  Status selectable = CheckSelectable(name);
  if (!selectable.ok()) return selectable;
  return Find(name)->factory();
}

const BackendRegistry::Entry* BackendRegistry::Find(std::string_view name) const {
  for (const Entry& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

void BackendRegistry::AddWorkerSetup(std::function<void()> setup) {
  worker_setups_.push_back(std::move(setup));
}

void BackendRegistry::SetUpWorker() const {
  for (const auto& setup : worker_setups_) setup();
}

}  // namespace mm
