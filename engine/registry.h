// BackendRegistry: the names of the available backends and how to create each. It is filled by one
// explicit list (backends/backend_list.cc), never by static initialisers.
#ifndef MM_ENGINE_REGISTRY_H_
#define MM_ENGINE_REGISTRY_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/backend.h"
#include "engine/status.h"

namespace mm {

// Creates a fresh backend instance, or explains why it cannot (e.g. its library failed to start).
using BackendFactory = std::function<StatusOr<std::unique_ptr<Backend>>()>;

// Name -> factory, in registration order.
class BackendRegistry {
 public:
  // Adds a backend; ALREADY_EXISTS if `name` is taken, INVALID_ARGUMENT if empty.
  Status Register(std::string name, std::string description, BackendFactory factory);
  // Names in registration order (the explicit list's order: reference first).
  std::vector<std::string> Names() const;
  bool Contains(std::string_view name) const;
  // One-line description given at registration; empty for unknown names.
  std::string Description(std::string_view name) const;
  // A new instance of `name`; NOT_FOUND naming the known backends if there is no such backend.
  StatusOr<std::unique_ptr<Backend>> Create(std::string_view name) const;

 private:
  struct Entry {
    std::string name;
    std::string description;
    BackendFactory factory;
  };
  const Entry* Find(std::string_view name) const;
  std::vector<Entry> entries_;
};

}  // namespace mm

#endif  // MM_ENGINE_REGISTRY_H_
