#include "fuzz_replay.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <sstream>
#include <string>

#include "mm/engine/io/text.h"

namespace mm::fuzz {
namespace {

// `word` as one word of a shell command: as it is when it holds only characters no shell treats
// specially, else in single quotes (a quote inside as '\''); a word with a control character (a
// newline in a --backend-cmd command, say) in bash's $'...' with each such byte as \xHH, so the
// command stays on one line and no byte of it drives the terminal.
std::string ShellWord(const std::string& word) {
  const bool plain = !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("/._-+=:,@%", c) != nullptr;
  });
  if (plain) return word;
  if (io::FirstControlCharacter(word)) {
    std::string quoted = "$'";
    for (const char c : word) {
      const auto byte = static_cast<unsigned char>(c);
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02X", byte);
      quoted += byte < 0x20 || byte >= 0x7F ? std::string(hex)
                : c == '\'' || c == '\\'    ? "\\" + std::string(1, c)
                                            : std::string(1, c);
    }
    return quoted + "'";
  }
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// `command` with what auto ran on (its table, the expectations leaving backends out) when the
// finding is auto's: another table or none chooses other backends.
std::string WithAutoContext(const FuzzOptions& options, const Finding& f, std::string command) {
  if (f.backend != "auto") return command;
  const FuzzOptions::AutoContext& context = options.auto_context;
  std::string environment = "MM_AUTO_TABLE=" + ShellWord(context.table) + " ";
  if (!context.exclude.empty())
    environment += "MM_AUTO_EXCLUDE=" + ShellWord(context.exclude) + " ";
  command = environment + command;
  if (!context.expectations.empty()) {
    command += " --expectations " + ShellWord(context.expectations);
  }
  return command;
}

}  // namespace

std::string ReplayLine(const FuzzOptions& options, const Finding& f,
                       const std::string& library_path, const std::string& driver_command) {
  std::string line = "mm-fuzz";
  // A plugin backend exists in a fresh process only once its library is loaded again; a driver's
  // once its command is given again.
  if (!library_path.empty()) line += " --backend-lib " + ShellWord(library_path);
  if (!driver_command.empty())
    line += " --backend-cmd " + ShellWord(f.backend + "=" + driver_command);
  if (f.op != family::Op::kMatMul) line += " --op " + std::string(family::OpName(f.op));
  line +=
      " --seed " + std::to_string(f.seed) + " --first " + std::to_string(f.index) + " --cases 1";
  // The integer operators draw both element types themselves; MatMul and Gemm pick theirs from
  // --dtype.
  if (f.op == family::Op::kMatMul || f.op == family::Op::kGemm) {
    line += " --dtype " + std::string(DTypeName(f.dtype));
  }
  line += " --backend " + ShellWord(f.backend);
  if (f.kind == "NONDETERMINISTIC") line += " --check-threads";
  if (!options.replay_options.empty()) line += " " + options.replay_options;
  return WithAutoContext(options, f, line);
}

std::string ExportReadme(const FuzzOptions& options, const Finding& f,
                         const std::filesystem::path& dir, const std::string& library_path,
                         const std::string& driver_command) {
  std::string conformance = "mm-conformance";
  if (!library_path.empty()) conformance += " --backend-lib " + ShellWord(library_path);
  if (!driver_command.empty()) {
    conformance += " --backend-cmd " + ShellWord(f.backend + "=" + driver_command);
  }
  conformance += " --data-dir " + ShellWord(std::filesystem::absolute(dir).string()) +
                 " --no-builtin --backend " + ShellWord(f.backend);
  // The rule and tolerance the finding was judged by (mm-conformance's default rule is onnx).
  conformance += options.rule == Rule::kBound ? " --tolerance bound" : " --tolerance onnx";
  if (options.tolerance.rtol != conformance::Tolerance{}.rtol) {
    conformance += " --rtol " + conformance::FormatDouble(options.tolerance.rtol);
  }
  if (options.tolerance.atol != conformance::Tolerance{}.atol) {
    conformance += " --atol " + conformance::FormatDouble(options.tolerance.atol);
  }
  conformance = WithAutoContext(options, f, conformance);
  const bool matmul = f.op == family::Op::kMatMul;
  const std::string op(family::OpName(f.op));
  std::string text = "# " + f.kind + ": " + f.backend + ", " + (matmul ? "" : op + ", ") +
                     std::string(DTypeName(f.dtype)) + "\n\nA minimal " + op +
                     " problem found by mm-fuzz (seed " + std::to_string(f.seed) + ", problem " +
                     std::to_string(f.index) + ": " + (matmul ? f.original.ToString() : f.problem) +
                     ", " + f.form + ", " + f.values + "; shrunk to " +
                     (matmul ? f.minimal.ToString() : f.minimal_problem) + ").\n\n";
  if (f.outside_int32 > 0) {
    text += "Outside the standard's range: " + std::to_string(f.outside_int32) +
            " elements' exact accumulation leaves int32; the expected output is the wrapped value "
            "the standard allows.\n\n";
  }
  text += f.message +
          "\n\nRun this node test (model.onnx, test_data_set_0) on the backend:\n\n"
          "    " +
          conformance +
          "\n\nFind it again (the original problem, judged the same way):\n\n"
          "    " +
          f.replay + "\n";
  return text;
}

std::string FindingLog(const Finding& f) {
  std::ostringstream log;
  if (f.op == family::Op::kMatMul) {
    log << f.kind << " " << f.backend << " " << DTypeName(f.dtype) << " " << f.original.ToString()
        << " (" << f.form << ", " << f.values << ")\n"
        << "  minimal: " << f.minimal.ToString();
  } else {
    log << f.kind << " " << f.backend << " " << family::OpName(f.op) << " " << f.problem << " ("
        << f.form << ", " << f.values << ")\n"
        << "  minimal: " << f.minimal_problem;
  }
  log << " after " << f.shrink_steps << " shrink steps"
      << (f.shrink_timed_out ? " (time limit)" : "") << "\n";
  if (f.outside_int32 > 0) {
    log << "  outside the standard's range: " << f.outside_int32
        << " elements' exact accumulation leaves int32 (judged against the wrapped value)\n";
  }
  log << "  " << f.message << "\n"
      << "  replay: " << f.replay << "\n";
  if (!f.expectation.empty()) log << "  expected failure: " << f.expectation << "\n";
  if (!f.exported.empty()) log << "  exported: " << f.exported << "\n";
  return log.str();
}

std::string CaseName(const Finding& f) {
  std::string kind = f.kind;
  for (char& c : kind) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string op;
  if (f.op != family::Op::kMatMul) {
    op = std::string(family::OpName(f.op)) + "_";
    for (char& c : op) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return "test_mm_fuzz_" + kind + "_" + f.backend + "_" + op + std::string(DTypeName(f.dtype)) +
         "_s" + std::to_string(f.seed) + "_i" + std::to_string(f.index);
}

}  // namespace mm::fuzz
