// --backend-cmd: a driver's command split and made absolute, and its registration.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>

#include "mm/backends/cmd/cmd_backend.h"
#include "mm/engine/io/names.h"
#include "mm/engine/process/process.h"

namespace mm::runtime {

StatusOr<std::vector<std::string>> SplitCommand(std::string_view command) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::exchange(word, {}));
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\\' && i + 1 < command.size()) {
      word += command[++i];
    } else if (c == '\'') {
      const std::size_t close = command.find('\'', i + 1);
      if (close == std::string_view::npos) return InvalidArgumentError("unclosed ' in the command");
      word.append(command.substr(i + 1, close - i - 1));
      i = close;
    } else if (c == '"') {
      std::size_t j = i + 1;
      for (; j < command.size() && command[j] != '"'; ++j) {
        if (command[j] == '\\' && j + 1 < command.size() &&
            std::string_view("$`\"\\\n").find(command[j + 1]) != std::string_view::npos) {
          ++j;
        }
        word += command[j];
      }
      if (j >= command.size()) return InvalidArgumentError("unclosed \" in the command");
      i = j;
    } else {
      word += c;
    }
  }
  if (in_word) words.push_back(std::move(word));
  if (words.empty()) return InvalidArgumentError("the command is empty");
  return words;
}

std::string AbsoluteCommand(const std::vector<std::string>& argv) {
  std::string out;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    std::string word = argv[i];
    const std::filesystem::path path(word);
    std::error_code ec;
    const bool relative = !word.empty() && path.is_relative() && word[0] != '-';
    const bool a_path =
        i == 0 ? word.find('/') != std::string::npos : std::filesystem::exists(path, ec);
    if (relative && a_path) {
      const auto absolute = std::filesystem::absolute(path, ec);
      // "CWD/run/../drivers/d.py" shortened where it still names the same file.
      const auto normal = absolute.lexically_normal();
      if (!ec) word = std::filesystem::equivalent(absolute, normal, ec) ? normal : absolute;
    }
    const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("/._-+=:,@%", c) != nullptr;
    });
    std::string quoted = "'";
    for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += (i == 0 ? "" : " ") + (plain ? word : quoted + "'");
  }
  return out;
}

StatusOr<DriverCommand> ParseBackendCmd(std::string_view text) {
  const std::size_t equals = text.find('=');
  if (equals == std::string_view::npos) {
    return InvalidArgumentError("--backend-cmd '" + DriverText(text, 200) +
                                "': expected NAME=COMMAND");
  }
  DriverCommand command{
      std::string(text.substr(0, equals)), std::string(text.substr(equals + 1)), {}};
  const std::string where = "--backend-cmd " + DriverText(command.name, 80);
  MM_RETURN_IF_ERROR(io::CheckName(command.name, "the backend name").WithContext(where));
  auto argv = SplitCommand(command.command);
  if (!argv.ok()) return argv.status().WithContext(where);
  command.argv = *std::move(argv);
  command.absolute = AbsoluteCommand(command.argv);
  return command;
}

Status RegisterCommandBackends(BackendRegistry& registry, std::span<const std::string> specs) {
  for (const std::string& spec : specs) {
    MM_ASSIGN_OR_RETURN(DriverCommand command, ParseBackendCmd(spec));
    const std::string where = "--backend-cmd " + command.name;
    if (registry.Contains(command.name) || !registry.UnavailableReason(command.name).empty()) {
      return InvalidArgumentError(where + ": the backend name '" + command.name +
                                  "' is already taken by " + registry.Description(command.name));
    }
    // What the probe's driver starts and leaves (a daemon) ends with it, whoever calls.
    const process::Subreaper subreaper;
    auto probe = StartCommandBackend(command);
    std::string description;
    if (probe.ok()) {
      description = (*probe)->RunsOn() + " [runtime protocol]";
      probe->reset();  // Its driver ends here; each instance starts its own.
    } else if (probe.status().code() == StatusCode::kCancelled) {
      // Stopped during its hello: registered all the same, so that the run goes on to its
      // reports (with no result, marked interrupted) instead of failing as a usage error.
      description = DriverText(command.command) + " [runtime protocol; not probed: stopped]";
    } else {
      return InvalidArgumentError(where + ": " + probe.status().message());
    }
    MM_RETURN_IF_ERROR(registry.Register(command.name, description,
                                         [command]() -> StatusOr<std::unique_ptr<Backend>> {
                                           return StartCommandBackend(command);
                                         }));
  }
  return OkStatus();
}

}  // namespace mm::runtime
