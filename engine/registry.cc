#include "engine/registry.h"

namespace mm {

Status BackendRegistry::Register(std::string name, std::string description,
                                 BackendFactory factory) {
  if (name.empty()) return InvalidArgumentError("a backend needs a name");
  if (!factory) return InvalidArgumentError("backend '" + name + "' has no factory");
  if (Find(name) != nullptr) {
    return Status(StatusCode::kAlreadyExists, "backend '" + name + "' is registered twice");
  }
  entries_.push_back({std::move(name), std::move(description), std::move(factory)});
  return OkStatus();
}

std::vector<std::string> BackendRegistry::Names() const {
  std::vector<std::string> names;
  names.reserve(entries_.size());
  for (const Entry& e : entries_) names.push_back(e.name);
  return names;
}

bool BackendRegistry::Contains(std::string_view name) const { return Find(name) != nullptr; }

std::string BackendRegistry::Description(std::string_view name) const {
  const Entry* e = Find(name);
  return e == nullptr ? std::string() : e->description;
}

StatusOr<std::unique_ptr<Backend>> BackendRegistry::Create(std::string_view name) const {
  const Entry* e = Find(name);
  if (e == nullptr) {
    std::string known;
    for (const Entry& entry : entries_) known += (known.empty() ? "" : ", ") + entry.name;
    return NotFoundError("no backend named '" + std::string(name) + "' (known: " + known + ")");
  }
  return e->factory();
}

const BackendRegistry::Entry* BackendRegistry::Find(std::string_view name) const {
  for (const Entry& e : entries_) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

}  // namespace mm
