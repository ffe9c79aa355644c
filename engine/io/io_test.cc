// engine/io: every file by one rule, JSON that never throws, names, trees that are not left.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <string>

#include "mm/engine/io/input_file.h"
#include "mm/engine/io/json.h"
#include "mm/engine/io/names.h"
#include "mm/engine/io/paths.h"
#include "mm/engine/io/text.h"
#include "mm/engine/testing/temp_dir.h"

namespace mm::io {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

constexpr InputKind kSmall{"--small", 16};

void Write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

TEST(ReadInputFileTest, ReadsARegularFileWhole) {
  mm::testing::TempDir dir;
  Write(dir.path() / "f", "0123456789abcdef");  // Exactly the cap.
  auto text = ReadInputFile(dir.path() / "f", kSmall);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(*text, "0123456789abcdef");
}

TEST(ReadInputFileTest, AMissingFileIsNotFoundNamingTheOptionAndTheFile) {
  mm::testing::TempDir dir;
  auto text = ReadInputFile(dir.path() / "absent", kSmall);
  EXPECT_EQ(text.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(text.status().message(),
            "--small '" + (dir.path() / "absent").string() + "': no such file");
}

TEST(ReadInputFileTest, AFifoIsRefusedAtOnceWithoutAWriter) {
  mm::testing::TempDir dir;
  const fs::path fifo = dir.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  auto text = ReadInputFile(fifo, kSmall);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(text.status().message(),
            "--small '" + fifo.string() + "': a FIFO (named pipe), not a regular file");
}

TEST(ReadInputFileTest, DevZeroIsRefusedAsACharacterDevice) {
  auto text = ReadInputFile("/dev/zero", kSmall);
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(text.status().message(), "--small '/dev/zero': a character device, not a regular file");
}

TEST(ReadInputFileTest, ADirectoryIsRefused) {
  mm::testing::TempDir dir;
  auto text = ReadInputFile(dir.path(), kSmall);
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(text.status().message(), HasSubstr("a directory, not a regular file"));
}

TEST(ReadInputFileTest, ASocketIsRefused) {
  mm::testing::TempDir dir;
  const fs::path path = dir.path() / "sock";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  ASSERT_LT(path.string().size(), sizeof(address.sun_path));
  std::strcpy(address.sun_path, path.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  auto text = ReadInputFile(path, kSmall);
  ::close(fd);
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(text.status().message(), HasSubstr("a socket, not a regular file"));
}

TEST(ReadInputFileTest, AFileOverTheCapIsRefusedBeforeReading) {
  mm::testing::TempDir dir;
  Write(dir.path() / "big", std::string(17, 'x'));
  auto text = ReadInputFile(dir.path() / "big", kSmall);
  EXPECT_EQ(text.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(text.status().message(),
            "--small '" + (dir.path() / "big").string() +
                "': 17 bytes, larger than the 16-byte limit for this file");
}

TEST(ReadInputFileTest, AFileThatSaysItIsEmptyIsStillCappedWhileReading) {
  // /proc files report size 0 whatever they hold.
  auto text = ReadInputFile("/proc/self/maps", InputKind{"--maps", 8});
  EXPECT_EQ(text.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(text.status().message(), HasSubstr("larger than the 8-byte limit"));
}

TEST(InputFileTest, ReleasesToAStdioStream) {
  mm::testing::TempDir dir;
  Write(dir.path() / "f", "ab");
  auto file = OpenInputFile(dir.path() / "f", kSmall);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->size(), 2u);
  std::FILE* stream = file->ReleaseToStdio();
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(std::fgetc(stream), 'a');
  std::fclose(stream);
  EXPECT_EQ(file->fd(), -1);
}

TEST(ParseJsonTest, ParsesAndNamesTheFileAndTheByteOfAnError) {
  EXPECT_EQ(ParseJson(R"({"a": [1, 2]})", "table 'x'")->at("a").size(), 2u);
  auto bad = ParseJson(R"({"a": nul})", "table 'x'");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("table 'x': not valid JSON: at byte "));
  EXPECT_THAT(bad.status().message(), HasSubstr("line 1, column"));
  EXPECT_FALSE(ParseJson("", "empty").ok());
  EXPECT_FALSE(ParseOrderedJson("{} trailing", "t").ok());
}

TEST(ParseJsonTest, RefusesDeepNestingBeforeParsing) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto parsed = ParseJson(deep, "report 'r'");
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(parsed.status().message(), "report 'r': JSON nested deeper than 64 levels at byte 64");
  // Exactly the limit parses; brackets inside strings do not count.
  EXPECT_TRUE(ParseJson(std::string(64, '[') + std::string(64, ']'), "r").ok());
  EXPECT_TRUE(ParseJson("\"" + std::string(1000, '[') + "\\\"\"", "r").ok());
  EXPECT_FALSE(ParseOrderedJson(std::string(3, '{'), "r", 2).ok());
}

TEST(JsonFieldTest, WrongTypesNameTheFileTheFieldAndWhatWasExpected) {
  const auto j = *ParseJson(R"({"cells": [{"backend": 3, "n": -1, "x": 1.5}]})", "t");
  const JsonField<nlohmann::json> root(j, "calibration table 'x.json'");
  auto cells = root.Member("cells")->Elements();
  ASSERT_TRUE(cells.ok());
  const auto& cell = (*cells)[0];
  EXPECT_EQ(cell.StringAt("backend").status().message(),
            "calibration table 'x.json': cells[0].backend: expected a string, found a number");
  EXPECT_EQ(cell.IntAt("n", 0, 10).status().message(),
            "calibration table 'x.json': cells[0].n: expected an integer in [0, 10], found -1");
  EXPECT_EQ(cell.IntAt("x").status().message(),
            "calibration table 'x.json': cells[0].x: expected an integer in "
            "[-9223372036854775808, 9223372036854775807], found a number");
  EXPECT_EQ(cell.StringAt("missing").status().message(),
            "calibration table 'x.json': cells[0].missing: missing");
  EXPECT_EQ(root.Member("cells")->Member("a").status().message(),
            "calibration table 'x.json': cells: expected an object, found an array");
  EXPECT_EQ(cell.OnlyKeys({"backend", "n"}).message(),
            "calibration table 'x.json': cells[0]: unknown key 'x' (allowed: backend, n)");
  EXPECT_EQ(*cell.NumberAt("x"), 1.5);
  EXPECT_EQ(cell.Member("n")->UInt().status().message(),
            "calibration table 'x.json': cells[0].n: expected an integer >= 0, found -1");
}

TEST(JsonFieldTest, ReadsEveryTypeOfAnOrderedDocument) {
  const auto j = *ParseOrderedJson(R"({"s": "v", "b": true, "u": 18446744073709551615,
                                       "l": ["a", "b"], "o": {"z": 1, "a": 2}})",
                                   "f");
  const JsonField<nlohmann::ordered_json> root(j, "f");
  EXPECT_EQ(*root.StringAt("s"), "v");
  EXPECT_TRUE(*root.BoolAt("b"));
  EXPECT_EQ(*root.Member("u")->UInt(), 18446744073709551615u);
  EXPECT_FALSE(root.IntAt("u").ok());
  EXPECT_EQ(*root.Member("l")->Strings(), (std::vector<std::string>{"a", "b"}));
  auto members = root.Member("o")->Members();
  ASSERT_TRUE(members.ok());
  ASSERT_EQ(members->size(), 2u);
  EXPECT_EQ((*members)[0].first, "z");
  EXPECT_EQ((*members)[1].second.path(), "o.a");
  EXPECT_FALSE(root.OptionalMember("absent")->has_value());
}

TEST(CheckNameTest, AcceptsOnlyShortNamesOfLettersDigitsUnderscoresAndDashes) {
  EXPECT_TRUE(CheckName("ort-1_x", "the backend name").ok());
  EXPECT_TRUE(CheckName(std::string(64, 'a'), "n").ok());
  EXPECT_EQ(CheckName("", "the backend name").message(), "the backend name is empty");
  EXPECT_EQ(CheckName("a\nPASS", "--outputs NAME").message(),
            "--outputs NAME 'a?PASS' has a character outside [A-Za-z0-9_-]");
  EXPECT_EQ(CheckName(std::string(65, 'a'), "n").message(),
            "n '" + std::string(64, 'a') + "...' is longer than 64 characters");
  EXPECT_EQ(CheckName("a b", "n").code(), StatusCode::kInvalidArgument);
}

// C0 (NUL included), DEL and C1 are control characters, as code points (C1 as UTF-8 C2 80 to
// C2 9F) and as raw bytes 0x80 to 0x9F outside valid UTF-8; the rest of Unicode is not.
TEST(TextTest, ControlCharactersAreC0DelAndC1InUtf8OrAsRawBytes) {
  using namespace std::string_literals;
  EXPECT_EQ(FirstControlCharacter("test_matmul_2d é → ✓"), std::nullopt);
  EXPECT_EQ(FirstControlCharacter("\xC2\xA0 no-break space"), std::nullopt);  // U+00A0.
  EXPECT_EQ(FirstControlCharacter("*\0name"s), "U+0000 at byte 1");
  EXPECT_EQ(FirstControlCharacter("ab\x1f"), "U+001F at byte 2");
  EXPECT_EQ(FirstControlCharacter("\x7f"), "U+007F at byte 0");
  EXPECT_EQ(FirstControlCharacter("é\xC2\x80"), "U+0080 at byte 2");
  EXPECT_EQ(FirstControlCharacter("x\xC2\x9F"), "U+009F at byte 1");
  EXPECT_EQ(FirstControlCharacter("x\x9b[2J"), "byte 0x9B at byte 1");
  EXPECT_EQ(FirstControlCharacter("x\xA0"), std::nullopt);  // Invalid UTF-8 but not C1.
}

TEST(TextTest, ConsoleTextReplacesEveryControlAndInvalidByteAndKeepsTheRest) {
  using namespace std::string_literals;
  EXPECT_EQ(ConsoleText("plain é ✓"), "plain é ✓");
  EXPECT_EQ(ConsoleText("a\nb\tc\x1b[31md\0e\x7f"s), "a\uFFFDb\uFFFDc\uFFFD[31md\uFFFDe\uFFFD");
  EXPECT_EQ(ConsoleText("c1\xC2\x9B"
                        "2J raw\x9b"
                        "2J"),
            "c1\uFFFD"
            "2J raw\uFFFD"
            "2J");
}

TEST(TextTest, APatternWithAControlCharacterIsRefusedCleanedAndNamingTheCode) {
  using namespace std::string_literals;
  EXPECT_TRUE(CheckPatternText("test_*[0-9]", "--filter").ok());
  const Status nul = CheckPatternText("*\0name"s, "known.json: entry 0: the \"case\" pattern");
  EXPECT_EQ(nul.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(nul.message(),
            "known.json: entry 0: the \"case\" pattern \"*\uFFFDname\" holds the control "
            "character U+0000 at byte 1; a pattern is printable text");
  EXPECT_THAT(CheckPatternText("a\x1b[2J", "the regular expression").message(),
              HasSubstr("\"a\uFFFD[2J\" holds the control character U+001B at byte 1"));
}

TEST(RootDirTest, RefusesLinksLeadingOutsideAndAcceptsLinksInside) {
  mm::testing::TempDir dir;
  const fs::path root = dir.path() / "root";
  fs::create_directories(root / "real");
  fs::create_directory_symlink(root / "real", root / "inside");
  fs::create_directory_symlink("/usr", root / "outside");
  fs::create_directory_symlink("../..", root / "real" / "up");
  const RootDir checked(root);
  EXPECT_TRUE(checked.Check(root / "real", "the tree").ok());
  EXPECT_TRUE(checked.Check(root / "inside", "the tree").ok());
  EXPECT_TRUE(checked.Check(root / "absent", "the tree").ok());
  const Status outside = checked.Check(root / "outside", "the outputs tree");
  EXPECT_EQ(outside.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(outside.message(), "'" + (root / "outside").string() +
                                   "' leads outside the outputs tree '" + root.string() +
                                   "' through a symbolic link (to '/usr'); links may only point "
                                   "inside it");
  EXPECT_FALSE(checked.Check(root / "real" / "up", "t").ok());
  EXPECT_FALSE(checked.Check(root / "outside" / "lib", "t").ok());
  // A root given through a link is the tree it leads to.
  fs::create_directory_symlink(root, dir.path() / "alias");
  EXPECT_TRUE(RootDir(dir.path() / "alias").Check(dir.path() / "alias" / "inside", "t").ok());
}

// Reports never name the machine's working directory or checkout: a path in either becomes
// relative to the working directory (and still names the same file); any other stays as given.
TEST(ReportedPathTest, PathsInTheWorkingDirectoryOrTheTreeBecomeRelativeOthersStay) {
  const fs::path cwd = fs::current_path();
  EXPECT_EQ(ReportedPath(cwd / "data" / "node"), fs::path("data/node"));
  EXPECT_EQ(ReportedPath(cwd / "a" / ".." / "b"), fs::path("b"));
  EXPECT_EQ(ReportedPath(cwd), fs::path("."));
  EXPECT_EQ(ReportedPath("/nonexistent-root/data"), fs::path("/nonexistent-root/data"));
  EXPECT_EQ(ReportedPath("relative/data"), fs::path("relative/data"));
  // Under the tree (mm's source tree) but outside the working directory: "../".
  const fs::path tree = cwd.parent_path();
  const fs::path beside = tree / "elsewhere" / "driver.py";
  EXPECT_EQ(ReportedPath(beside, tree), fs::path("..") / "elsewhere" / "driver.py");
  EXPECT_EQ(ReportedPath(beside), beside);  // Without the tree: outside, as given.
}

}  // namespace
}  // namespace mm::io
