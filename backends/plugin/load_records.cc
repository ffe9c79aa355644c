#include "load_records.h"

#include <cstdio>
#include <utility>

#include "mm/engine/process/process.h"

namespace mm::plugin_internal {
namespace {

void PutField(std::string& out, std::string_view field) {
  out += std::to_string(field.size());
  out += ':';
  out.append(field);
}

// The next field of `in`, consumed; nullopt when it is truncated or malformed.
std::optional<std::string_view> TakeField(std::string_view& in) {
  const std::size_t colon = in.find(':');
  if (colon == std::string_view::npos || colon == 0 || colon > 9) return std::nullopt;
  std::size_t size = 0;
  for (char c : in.substr(0, colon)) {
    if (c < '0' || c > '9') return std::nullopt;
    size = size * 10 + static_cast<std::size_t>(c - '0');
  }
  if (in.size() - colon - 1 < size) return std::nullopt;
  const std::string_view field = in.substr(colon + 1, size);
  in.remove_prefix(colon + 1 + size);
  return field;
}

std::optional<long long> TakeNumber(std::string_view& in) {
  const auto field = TakeField(in);
  if (!field || field->empty() || field->size() > 18) return std::nullopt;
  long long value = 0;
  bool negative = false;
  for (std::size_t i = 0; i < field->size(); ++i) {
    const char c = (*field)[i];
    if (i == 0 && c == '-') {
      negative = true;
    } else if (c >= '0' && c <= '9') {
      value = value * 10 + (c - '0');
    } else {
      return std::nullopt;
    }
  }
  return negative ? -value : value;
}

void PutStatus(std::string& out, const Status& status) {
  PutField(out, std::to_string(static_cast<int>(status.code())));
  PutField(out, status.message());
}

std::optional<Status> TakeStatus(std::string_view& in) {
  const auto code = TakeNumber(in);
  const auto message = TakeField(in);
  if (!code || !message || *code < 0 || *code > static_cast<int>(StatusCode::kDataLoss)) {
    return std::nullopt;
  }
  if (*code == 0) return OkStatus();
  return Status(static_cast<StatusCode>(*code), Sanitized(*message));
}

// One declaration per dtype, read into `out`; false when garbled.
bool TakeArithmetic(std::string_view& in, PerDType<Arithmetic>& out) {
  for (Arithmetic& arithmetic : out) {
    const auto index = TakeNumber(in);
    const auto flushes = TakeNumber(in);
    if (!index || !flushes || *index < 0 || *index >= static_cast<long long>(kAllDTypes.size()) ||
        (*flushes != 0 && *flushes != 1)) {
      return false;
    }
    arithmetic = {kAllDTypes[static_cast<std::size_t>(*index)], *flushes == 1};
  }
  return true;
}

void PutArithmetic(std::string& out, const PerDType<Arithmetic>& declared) {
  for (const Arithmetic& arithmetic : declared) {
    PutField(out, std::to_string(DTypeIndex(arithmetic.accumulation)));
    PutField(out, arithmetic.flushes_subnormals ? "1" : "0");
  }
}

// The inverse of EncodeLoaded; nullopt when garbled.
std::optional<StatusOr<PluginInfo>> DecodeLoaded(std::string_view in) {
  const std::optional<Status> status = TakeStatus(in);
  if (!status) return std::nullopt;
  if (!status->ok()) return StatusOr<PluginInfo>(*status);
  PluginInfo info;
  const auto name = TakeField(in);
  const auto description = TakeField(in);
  const auto version = TakeNumber(in);
  if (!name || !description || !version || !CheckName(std::string(*name)).ok() ||
      FindAbiVersion(*version) == nullptr) {
    return std::nullopt;
  }
  info.name = *name;
  info.description = Sanitized(*description);
  info.abi_version = static_cast<std::uint32_t>(*version);
  if (!TakeArithmetic(in, info.arithmetic)) return std::nullopt;
  const auto computes_family = TakeNumber(in);
  if (!computes_family || (*computes_family != 0 && *computes_family != 1)) return std::nullopt;
  info.computes_family = *computes_family == 1;
  if (!TakeArithmetic(in, info.gemm_arithmetic)) return std::nullopt;
  if (!in.empty()) return std::nullopt;
  return StatusOr<PluginInfo>(std::move(info));
}

std::string SecondsText(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", seconds);
  return text;
}

}  // namespace

void AppendRecord(std::string& out, char tag, std::string_view payload) {
  out += tag;
  PutField(out, payload);
}

std::string EncodeLoaded(const StatusOr<PluginInfo>& loaded) {
  std::string out;
  PutStatus(out, loaded.status());
  if (!loaded.ok()) return out;
  PutField(out, loaded->name);
  PutField(out, loaded->description);
  PutField(out, std::to_string(loaded->abi_version));
  PutArithmetic(out, loaded->arithmetic);
  PutField(out, loaded->computes_family ? "1" : "0");
  PutArithmetic(out, loaded->gemm_arithmetic);
  return out;
}

std::string EncodeProbed(const Status& verdict) {
  std::string out;
  PutStatus(out, verdict);
  return out;
}

Records ParseRecords(std::string_view in) {
  Records records;
  while (!in.empty()) {
    const char tag = in.front();
    in.remove_prefix(1);
    const std::optional<std::string_view> payload = TakeField(in);
    if (!payload) break;  // Cut short by the child's end.
    if (tag == kEnteringArithmetic && payload->empty() && !records.loaded) {
      records.entering_arithmetic = true;
    } else if (tag == kLoaded && !records.loaded) {
      records.loaded = DecodeLoaded(*payload);
      if (!records.loaded) records.garbled = true;
    } else if (tag == kProbed && records.loaded && !records.probed) {
      std::string_view rest = *payload;
      records.probed = TakeStatus(rest);
      if (!records.probed || !rest.empty()) records.garbled = true;
    } else {
      records.garbled = true;
    }
    if (records.garbled) break;
  }
  return records;
}

StatusOr<Loaded> Interpret(const Records& records, std::optional<int> wait_status,
                           double timeout_seconds) {
  if (records.garbled) {
    return InvalidArgumentError(
        "the process loading it sent garbled data (the plugin wrote to "
        "a descriptor it does not own?)");
  }
  auto ended = [&](const std::string& where) {
    if (!wait_status) {
      const std::string within = "no answer within " + SecondsText(timeout_seconds) + " s";
      return records.loaded ? "hung " + where + " (" + within + ")"
                            : "hung " + where + ": " + within;
    }
    return process::DescribeWaitStatus(*wait_status, where);
  };
  if (!records.loaded) {
    Loaded died;
    died.died_loading =
        ended(records.entering_arithmetic ? "in arithmetic() while loading"
                                          : "while loading (constructor or entry function)");
    return died;
  }
  MM_RETURN_IF_ERROR(records.loaded->status());
  Loaded loaded{records.loaded->value(), "", ""};
  if (!records.probed) {
    loaded.died = ended("during the load probe");
    return loaded;
  }
  MM_RETURN_IF_ERROR(*records.probed);
  return loaded;
}

}  // namespace mm::plugin_internal
