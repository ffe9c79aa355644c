#include "load_child.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "abi_adapter.h"
#include "library.h"
#include "mm/engine/process/process.h"
#include "plugin_family.h"

namespace mm::plugin_internal {
namespace {

using SendRecord = std::function<void(char tag, std::string_view payload)>;

// dlopen (constructors), the entry, the table's checks, arithmetic(): what the parent keeps. The
// table read is copied to `table`.
StatusOr<PluginInfo> Inspect(const std::string& path, const std::string& absolute, bool announce,
                             const SendRecord& send, mm_backend_plugin& table) {
  MM_ASSIGN_OR_RETURN(table, OpenTable(path, absolute, announce));
  MM_RETURN_IF_ERROR(CheckTable(table));
  PluginInfo info;
  info.name = table.name;
  info.description = table.description != nullptr ? Sanitized(table.description) : "";
  info.abi_version = table.abi_version;
  send(kEnteringArithmetic, "");
  MM_RETURN_IF_ERROR(AskArithmetic(table, info));
  return info;
}

// Runs supports() for every dtype on [2,3] x [3,4], then prepare, execute and release on the first
// supported one, and returns the first contract violation. The plugin's own failures (with a
// message) are its business and show up in the results; only broken promises refuse the load. Y
// has slack on both sides, so a plugin writing outside Y cannot corrupt memory here (the harness
// reports such writes as ERROR).
Status Probe(Library& library) {
  std::optional<DType> runnable;
  for (DType dtype : kAllDTypes) {
    MM_ASSIGN_OR_RETURN(MatMulPlan plan, PlanMatMul({dtype, {2, 3}, {3, 4}}));
    Problem problem(std::move(plan));
    MM_ASSIGN_OR_RETURN(Support support, library.AskSupports(problem));
    if (support.supported() && !runnable) runnable = dtype;
  }
  if (!runnable) return OkStatus();
  MM_ASSIGN_OR_RETURN(MatMulPlan plan, PlanMatMul({*runnable, {2, 3}, {3, 4}}));
  const Problem problem(plan);
  const mm_backend_plugin& table = library.table();
  std::lock_guard lock(library.mutex());
  TextBuffer text;
  void* handle = nullptr;
  const std::int32_t prepared = CallPlugin(
      [&] { return table.prepare(problem.get(), &handle, text.data(), text.capacity()); });
  if (prepared != MM_STATUS_OK) {
    return IsViolation(prepared, text) ? FromPluginStatus("prepare", prepared, text, plan.desc)
                                       : OkStatus();
  }
  const std::size_t element = DTypeSize(*runnable);
  constexpr std::size_t kSlack = 256;
  std::vector<std::byte> a(6 * element), b(12 * element), y(kSlack + 8 * element + kSlack);
  const std::int32_t dtype = ToPluginDType(*runnable);
  const mm_const_tensor a_tensor = ToPluginInput(dtype, plan.desc.a_dims, a.data());
  const mm_const_tensor b_tensor = ToPluginInput(dtype, plan.desc.b_dims, b.data());
  const mm_tensor y_tensor = ToPluginOutput(dtype, plan.y_dims, y.data() + kSlack);
  TextBuffer execute_text;
  const std::int32_t executed = CallPlugin([&] {
    return table.execute(handle, &a_tensor, &b_tensor, &y_tensor, execute_text.data(),
                         execute_text.capacity());
  });
  CallPlugin([&] { table.release(handle); });
  return IsViolation(executed, execute_text)
             ? FromPluginStatus("execute", executed, execute_text, plan.desc)
             : OkStatus();
}

// Everything a plugin's code does at load time, with what it gives sent as records: the loading
// (Inspect) and the probe. In the load child; in this process when the probe is not isolated.
void LoadAndProbe(const std::string& path, const std::string& absolute, bool announce,
                  const SendRecord& send) {
  mm_backend_plugin inspected{};
  StatusOr<PluginInfo> info = Inspect(path, absolute, announce, send, inspected);
  send(kLoaded, EncodeLoaded(info));
  if (!info.ok()) return;
  Library library(path, absolute, *std::move(info), announce);
  Status verdict = library.Open();
  // The probe must run the table every later process gets from its first call of the entry.
  if (verdict.ok() && !SameTable(library.table(), inspected)) {
    verdict = FailedPreconditionError(
        "its entry function returned another table on its second call than on its first (other "
        "functions or texts); a plugin's table must never change");
  }
  if (verdict.ok()) verdict = Probe(library);
  if (verdict.ok()) verdict = ProbeFamily(library);
  send(kProbed, EncodeProbed(verdict));
}

void WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

bool HasElfHeader(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  char magic[4] = {};
  file.read(magic, sizeof(magic));
  return file.gcount() == 4 && std::memcmp(magic,
                                           "\x7f"
                                           "ELF",
                                           4) == 0;
}

// The refusal of a file that cannot be a plugin (missing, not a regular file, no ELF header).
Status CheckFile(const std::filesystem::path& absolute) {
  std::error_code ec;
  const auto status = std::filesystem::status(absolute, ec);
  if (!std::filesystem::exists(status)) return NotFoundError("no such file");
  if (!std::filesystem::is_regular_file(status)) {
    return InvalidArgumentError("not a regular file (a shared object is expected)");
  }
  if (!HasElfHeader(absolute)) {
    return InvalidArgumentError(
        "not a shared object (no ELF header; build the plugin as a shared "
        "library, e.g. CMake add_library(NAME MODULE ...))");
  }
  return OkStatus();
}

// LoadAndProbe in a child process given `timeout_seconds`.
StatusOr<Loaded> LoadInChild(const std::string& path, const std::filesystem::path& absolute,
                             double timeout_seconds) {
  auto child = process::Child::Start([&path, &absolute](int fd) {
    LoadAndProbe(path, absolute, /*announce=*/false, [fd](char tag, std::string_view payload) {
      std::string record;
      AppendRecord(record, tag, payload);
      WriteAll(fd, record);
    });
  });
  if (!child.ok()) return child.status();
  // Complete once the verdict (or a refusal) is in: a process the plugin forked may hold the pipe.
  const auto complete = [](const std::string& text) {
    const Records records = ParseRecords(text);
    return records.garbled || records.probed || (records.loaded && !records.loaded->ok());
  };
  std::string bytes;
  const auto finished = child->Finish(timeout_seconds, bytes, complete);
  std::optional<int> wait_status;  // None: the child was killed when its time was up.
  if (!finished.ok()) {
    wait_status = SIGKILL;
  } else if (!finished->timed_out) {
    wait_status = finished->wait_status;
  }
  return Interpret(ParseRecords(bytes), wait_status, timeout_seconds);
}

}  // namespace

StatusOr<Loaded> Load(const std::string& path, const std::filesystem::path& absolute,
                      const PluginLoadOptions& options) {
  MM_RETURN_IF_ERROR(CheckFile(absolute));
  if (options.isolate_probe) return LoadInChild(path, absolute, options.probe_timeout_seconds);
  std::string bytes;
  LoadAndProbe(path, absolute, /*announce=*/true,
               [&bytes](char tag, std::string_view payload) { AppendRecord(bytes, tag, payload); });
  return Interpret(ParseRecords(bytes), 0, 0);
}

}  // namespace mm::plugin_internal
