// What a load child (load_child.h) sends back, private to backends/plugin: its records, and what
// the parent makes of those that arrived and of how the child ended.
//
// A record is a tag byte and a netstring ("5:hello"). kEnteringArithmetic comes before
// arithmetic() is called, kLoaded with the table's data (or the refusal), kProbed with the probe's
// verdict. What arrived says where a child that died or hung was.
#ifndef MM_BACKENDS_PLUGIN_LOAD_RECORDS_H_
#define MM_BACKENDS_PLUGIN_LOAD_RECORDS_H_

#include <optional>
#include <string>
#include <string_view>

#include "abi_adapter.h"
#include "mm/engine/status.h"

namespace mm::plugin_internal {

inline constexpr char kEnteringArithmetic = 'A';
inline constexpr char kLoaded = 'L';
inline constexpr char kProbed = 'P';

// Appends the record `tag` with `payload` to `out`.
void AppendRecord(std::string& out, char tag, std::string_view payload);

// The payload of kLoaded: the plugin's data, or the refusal.
std::string EncodeLoaded(const StatusOr<PluginInfo>& loaded);

// The payload of kProbed: the probe's verdict.
std::string EncodeProbed(const Status& verdict);

// The records a load child sent, as far as they arrived.
struct Records {
  bool entering_arithmetic = false;
  std::optional<StatusOr<PluginInfo>> loaded;
  std::optional<Status> probed;
  bool garbled = false;
};

// The records of `in`, a child's output; a record cut short by the child's end is left out, one
// out of order or malformed makes them garbled (and ends the reading).
Records ParseRecords(std::string_view in);

// A plugin loaded and probed: what the parent keeps, and, when the probe's child died or hung,
// what happened ("crashed during the load probe: SIGABRT (signal 6)"): the plugin is then
// registered as a backend that cannot start.
struct Loaded {
  PluginInfo info;
  std::string died;
  // Set instead when the child died or hung while loading: what happened, a refusal
  // ("crashed while loading (constructor or entry function): SIGSEGV (signal 11)").
  std::string died_loading;
};

// What a load child that sent `records` and ended with `wait_status` (nullopt: killed after
// `timeout_seconds` without an end) gave: the plugin, or the refusal.
StatusOr<Loaded> Interpret(const Records& records, std::optional<int> wait_status,
                           double timeout_seconds);

}  // namespace mm::plugin_internal

#endif  // MM_BACKENDS_PLUGIN_LOAD_RECORDS_H_
