// BackendRegistry: the names of the available backends and how to create each. It is filled by one
// explicit list (backends/backend_list.cc), never by static initialisers.
#ifndef MM_ENGINE_REGISTRY_H_
#define MM_ENGINE_REGISTRY_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mm/engine/backend.h"
#include "mm/engine/status.h"

namespace mm {

// Creates a fresh backend instance, or explains why it cannot (e.g. its library failed to start).
using BackendFactory = std::function<StatusOr<std::unique_ptr<Backend>>()>;

// Name -> factory, in registration order; and the backends this build knows but cannot run on
// this machine (a library that is missing or unusable), each with the reason, so that no backend is
// silently left out.
class BackendRegistry {
 public:
  // Whether a tool given no --backend runs a backend.
  enum class Selection {
    kByDefault,  // Among the default set (DefaultNames).
    kOnRequest,  // Only when named (another runtime behind a driver: a process of its own).
  };
  // Adds a backend; ALREADY_EXISTS if `name` is taken (available or not), INVALID_ARGUMENT if
  // empty.
  Status Register(std::string name, std::string description, BackendFactory factory,
                  Selection selection = Selection::kByDefault);
  // Records a backend that is not available here, and why ("/usr/lib/.../libblas.so.3: cannot open
  // shared object file"); ALREADY_EXISTS if `name` is taken, INVALID_ARGUMENT if `name` or `why` is
  // empty. It is never created, and is not among Names().
  Status RegisterUnavailable(std::string name, std::string description, std::string why);
  // Names of the available backends in registration order (the explicit list's order: reference
  // first).
  std::vector<std::string> Names() const;
  // Names() less the backends registered kOnRequest: the default set of every tool.
  std::vector<std::string> DefaultNames() const;
  // True for an available backend.
  bool Contains(std::string_view name) const;
  // Names of the unavailable backends, in registration order.
  std::vector<std::string> UnavailableNames() const;
  // Why `name` is unavailable; empty when it is available or unknown.
  std::string UnavailableReason(std::string_view name) const;
  // One-line description given at registration (available or not); empty for unknown names.
  std::string Description(std::string_view name) const;
  // OK when `name` can be created; FAILED_PRECONDITION "backend 'x' is not available on this
  // machine: why" for an unavailable one; NOT_FOUND naming the known backends otherwise. What a
  // tool reports, as a usage error, for a backend named on its command line.
  Status CheckSelectable(std::string_view name) const;
  // A new instance of `name`; the CheckSelectable error when it cannot be created.
  StatusOr<std::unique_ptr<Backend>> Create(std::string_view name) const;

  // Adds a setting a backend wants in a worker process (one that runs many unrelated cases, forked
  // before any backend starts): oneDNN's primitive cache off, say. The caller of a worker runs
  // them without knowing what they set.
  void AddWorkerSetup(std::function<void()> setup);
  // Runs every setup added, in the order added; in a worker process, before its first case.
  void SetUpWorker() const;

 private:
  struct Entry {
    std::string name;
    std::string description;
    BackendFactory factory;   // Null for an unavailable backend.
    std::string unavailable;  // Why it is unavailable; empty for an available one.
    Selection selection = Selection::kByDefault;
  };
  const Entry* Find(std::string_view name) const;
  std::vector<Entry> entries_;
  std::vector<std::function<void()>> worker_setups_;
};

}  // namespace mm

#endif  // MM_ENGINE_REGISTRY_H_
