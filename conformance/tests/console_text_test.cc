// Text from outside reaches the console cleaned: no control character (C0 but mm's own newlines
// and tabs, DEL, C1 in UTF-8 or as a raw byte) from a driver's stderr, a --backend-cmd value, a
// --filter pattern, a plugin's note or a case's name, through the real paths of mm-conformance.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "mm/conformance/report/console_stream.h"
#include "mm/conformance/testing/cli_runs.h"
#include "mm/engine/io/text.h"
#include "onnx_fixtures.h"

namespace mm::conformance {
namespace {

using testing::CliRun;
using testing::ConformanceCli;
using ::testing::HasSubstr;

// The control characters of `text` other than newline and tab, as "U+001B at byte 4" each.
std::vector<std::string> ControlsBesidesLayout(const std::string& text) {
  std::vector<std::string> found;
  std::size_t offset = 0;
  io::ForEachCodePoint(text, [&](char32_t cp, std::string_view bytes) {
    if (cp != U'\n' && cp != U'\t') {
      if (auto control = io::FirstControlCharacter(bytes)) {
        found.push_back(*control + " (of the whole text: byte " + std::to_string(offset) + ")");
      }
    }
    offset += bytes.size();
  });
  return found;
}

// Both streams of `r` hold no control character but line layout.
void ExpectClean(const CliRun& r) {
  EXPECT_THAT(ControlsBesidesLayout(r.out), ::testing::IsEmpty()) << r.out;
  EXPECT_THAT(ControlsBesidesLayout(r.err), ::testing::IsEmpty()) << r.err;
}

TEST(ConsoleStreamTest, KeepsLayoutAndUtf8AndReplacesEveryOtherControl) {
  std::ostringstream target;
  {
    ConsoleStream console(target);
    console << "a\tb\n"
            << "esc\x1b[2J del\x7f nul" << '\0' << " c1\xC2\x9B raw\x9B é\n";
    // A UTF-8 sequence cut by a flush is written whole once its end comes.
    console << "cut \xC3" << std::flush;
    EXPECT_EQ(target.str().substr(target.str().rfind('\n') + 1), "cut ");
    console << "\xA9 end";
  }
  EXPECT_EQ(target.str(), "a\tb\nesc\uFFFD[2J del\uFFFD nul\uFFFD c1\uFFFD raw\uFFFD é\ncut é end");
}

// A driver whose stderr holds an escape sequence and C1 controls (CSI as U+009B and as the byte
// 0x9B), quoted in the usage error of a driver that exits before its hello.
TEST(ConsoleTextTest, ADriversStderrIsCleaned) {
  const CliRun r = ConformanceCli(
      {"--backend-cmd",
       R"(evil=/bin/sh -c 'printf "\033]0;title\007\302\2332J\2332J\033[31mred" >&2; exit 3')"});
  EXPECT_EQ(r.code, kExitUsage);
  EXPECT_THAT(r.err, HasSubstr("--backend-cmd evil"));
  EXPECT_THAT(r.err, HasSubstr("red"));
  ExpectClean(r);
}

// A newline in a --backend-cmd name or command never breaks the error's line.
TEST(ConsoleTextTest, ABackendCmdWithANewlineStaysOnOneLine) {
  for (const std::string value : {"na\nme=/bin/true", "nl=/bin/sh -c 'exit 3\n\x1b[2J'",
                                  "nl=/nonexistent/\x1b[2J\ndriver", "no equals sign\n\x1b[2J"}) {
    const CliRun r = ConformanceCli({"--backend-cmd", value});
    EXPECT_EQ(r.code, kExitUsage) << value;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    ExpectClean(r);
  }
}

// A pattern with an escape (a terminal sequence clearing the screen) is a usage error that shows
// it cleaned, with the character's code.
TEST(ConsoleTextTest, AFilterPatternWithAnEscapeIsAUsageErrorShownCleaned) {
  for (const char* option : {"--filter", "--exclude"}) {
    const CliRun r = ConformanceCli({option, "test_\x1b[2J(", "--list"});
    EXPECT_EQ(r.code, kExitUsage) << r.out << r.err;
    EXPECT_THAT(r.err, HasSubstr("holds the control character U+001B at byte 5")) << r.err;
    ExpectClean(r);
  }
}

// A plugin's note (a newline, an escape, a stray byte) and a case named with an escape and a C1
// control, on the console lines of a run and of --list.
TEST(ConsoleTextTest, APluginsNoteAndACasesNameAreCleanedOnTheirLines) {
  testing::TempDir root;
  testing::WriteFloatCase(root.path(), "test_\x1b[31mred\xC2\x9B", {2, 3}, {3, 4});
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"--list"}, std::vector<std::string>{}}) {
    std::vector<std::string> args = {
        "--backend-lib", MM_WRONG_PLUGIN_MESSY_TEXT, "--data-dir", root.path().string(),
        "--backend",     "wrong_messy_text",         "--backend",  "reference"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliRun r = ConformanceCli(args);
    EXPECT_THAT(r.out, HasSubstr("red")) << r.out << r.err;
    if (extra.empty()) {
      EXPECT_THAT(r.out, HasSubstr("float only"));
    }
    ExpectClean(r);
  }
}

}  // namespace
}  // namespace mm::conformance
