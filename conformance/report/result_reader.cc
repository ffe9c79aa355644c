#include <cstdio>
#include <nlohmann/json.hpp>

#include "mm/conformance/report/report_reader.h"
#include "mm/conformance/results/result_json.h"
#include "mm/engine/io/json.h"
#include "report_stdio.h"

namespace mm::conformance {
namespace {

using nlohmann::json;

// One result of a report is a few hundred bytes; a longer one is not a result mm wrote.
constexpr std::size_t kMaxResultBytes = 16 << 20;

}  // namespace

ResultReader::~ResultReader() {
  if (file_ != nullptr) std::fclose(file_);
}

int ResultReader::Get() { return getc_unlocked(file_); }

Status ResultReader::Open(const std::string& path) {
  path_ = path;
  MM_ASSIGN_OR_RETURN(StdioFile file, OpenReport(path));
  file_ = file.release();
  // Finds the key "results" of the top-level object, skipping strings and nested values.
  int depth = 0;
  std::string last_string;
  bool after_key = false;
  for (int c = Get(); c != EOF; c = Get()) {
    if (c == '"') {
      last_string.clear();
      for (c = Get(); c != EOF && c != '"'; c = Get()) {
        if (c == '\\') c = Get();
        // Only a key as short as "results" matters: a long string is not kept.
        if (last_string.size() <= 8) last_string += static_cast<char>(c);
      }
      after_key = depth == 1;
      continue;
    }
    if (c == ':' && after_key && last_string == "results") {
      for (c = Get(); c == ' ' || c == '\n' || c == '\r' || c == '\t'; c = Get()) {
      }
      if (c != '[') break;
      return OkStatus();
    }
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') --depth;
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') after_key = false;
  }
  return InvalidArgumentError("'" + path + "': not a JSON report (no \"results\" array)");
}

StatusOr<std::optional<Result>> ResultReader::Next() {
  if (done_) return std::optional<Result>();
  int c = Get();
  while (c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == ',') c = Get();
  if (c == ']') {
    done_ = true;
    return std::optional<Result>();
  }
  const std::string where = "'" + path_ + "': results[" + std::to_string(index_) + "]";
  if (c != '{') return InvalidArgumentError(where + ": not an object");
  std::string text(1, '{');
  int depth = 1;
  const auto too_long = [&] {
    return InvalidArgumentError(where + ": longer than " + std::to_string(kMaxResultBytes) +
                                " bytes");
  };
  while (depth > 0) {
    c = Get();
    if (c == EOF) return InvalidArgumentError(where + ": the file ends inside it");
    text += static_cast<char>(c);
    if (text.size() > kMaxResultBytes) return too_long();
    if (c == '"') {
      for (c = Get(); c != EOF && c != '"'; c = Get()) {
        if (text.size() > kMaxResultBytes) return too_long();
        text += static_cast<char>(c);
        if (c == '\\') {
          c = Get();
          if (c == EOF) break;
          text += static_cast<char>(c);
        }
      }
      if (c == EOF) return InvalidArgumentError(where + ": the file ends inside it");
      text += '"';
    } else if (c == '{' || c == '[') {
      if (++depth > io::kMaxJsonDepth) {
        return InvalidArgumentError(where + ": nested deeper than " +
                                    std::to_string(io::kMaxJsonDepth) + " levels");
      }
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  MM_ASSIGN_OR_RETURN(const json parsed, io::ParseJson(text, where));
  auto result = ResultFromJson(parsed);
  if (!result.ok()) return result.status().WithContext(where);
  ++index_;
  return std::optional<Result>(std::move(result).value());
}

}  // namespace mm::conformance
