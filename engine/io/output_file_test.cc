// Files written whole or not at all, through a fresh file of an unpredictable name (never a link
// planted beside the path), and devices, FIFOs and descriptors written in place.
#include "mm/engine/io/output_file.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "mm/engine/testing/files.h"
#include "mm/engine/testing/temp_dir.h"

namespace mm::io {
namespace {

namespace fs = std::filesystem;
using ::mm::testing::ReadFile;
using ::mm::testing::TempDir;
using ::testing::HasSubstr;

// The names in `dir`, links included.
std::set<std::string> Names(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.insert(entry.path().filename());
  return names;
}

TEST(WriteFileAtomicallyTest, WritesTheWholeContentThroughAFreshFileOfAnUnpredictableName) {
  TempDir dir;
  const fs::path path = dir.path() / "report.json";
  std::set<std::string> temporaries;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(WriteFileAtomically(path, [&](std::ostream& out) {
                  // While the content is written: PATH is not there yet, a new file beside it is.
                  EXPECT_FALSE(fs::exists(path) && i == 0);
                  for (const std::string& name : Names(dir.path())) {
                    if (name == "report.json") continue;
                    temporaries.insert(name);
                    EXPECT_FALSE(fs::is_symlink(dir.path() / name)) << name;
                  }
                  out << "content " << i;
                }).ok());
    EXPECT_EQ(ReadFile(path), "content " + std::to_string(i));
    EXPECT_EQ(Names(dir.path()), std::set<std::string>{"report.json"}) << "no temporary left";
  }
  // One temporary per write, each of a new random name, never the old predictable one.
  EXPECT_EQ(temporaries.size(), 2u);
  EXPECT_EQ(temporaries.count("report.json.partial"), 0u);
  for (const std::string& name : temporaries) EXPECT_THAT(name, HasSubstr(".report.json."));
  // The mode a file created by the tools always had: 0666 less the umask.
  const mode_t mask = ::umask(0);
  ::umask(mask);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);
}

TEST(WriteFileAtomicallyTest, AnErrorNamesTheFileAndLeavesItUnchanged) {
  TempDir dir;
  const Status missing_dir = WriteFileAtomically(dir.path() / "absent" / "r.json", "x");
  EXPECT_FALSE(missing_dir.ok());
  EXPECT_THAT(missing_dir.message(), HasSubstr("absent/r.json"));
  // A directory in the report's place: the rename fails, the directory stays, no temporary left.
  fs::create_directory(dir.path() / "r.json");
  const Status over_dir = WriteFileAtomically(dir.path() / "r.json", "x");
  EXPECT_FALSE(over_dir.ok());
  EXPECT_THAT(over_dir.message(), HasSubstr("r.json"));
  EXPECT_TRUE(fs::is_directory(dir.path() / "r.json"));
  EXPECT_EQ(Names(dir.path()), std::set<std::string>{"r.json"});
}

// What is written in place is what a new file cannot stand in for: a device, a FIFO, a socket, or
// a process's descriptor by any link; a regular file, a directory or a missing path is not.
TEST(WrittenInPlaceTest, DevicesFifosAndDescriptorsAreWrittenInPlaceFilesAreNot) {
  TempDir dir;
  const fs::path file = dir.path() / "r.json";
  std::ofstream(file) << "{}";
  const fs::path fifo = dir.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  fs::create_symlink("/dev/stdout", dir.path() / "out");
  fs::create_symlink("/proc/self/fd/1", dir.path() / "fd1");
  EXPECT_TRUE(WrittenInPlace("/dev/null"));
  EXPECT_TRUE(WrittenInPlace(fifo));
  EXPECT_TRUE(IsProcessDescriptor("/dev/stdout"));
  EXPECT_TRUE(IsProcessDescriptor(dir.path() / "out"));
  EXPECT_TRUE(IsProcessDescriptor(dir.path() / "fd1"));
  EXPECT_FALSE(WrittenInPlace(file));
  EXPECT_FALSE(WrittenInPlace(dir.path()));
  EXPECT_FALSE(WrittenInPlace(dir.path() / "absent.json"));
  EXPECT_FALSE(IsProcessDescriptor(file));
  EXPECT_FALSE(IsProcessDescriptor("/dev/null"));
}

// A FIFO keeps being a FIFO: its reader gets the content, and no file is left beside it.
TEST(WriteFileAtomicallyTest, AFifoIsWrittenInPlaceNeverReplaced) {
  TempDir dir;
  const fs::path fifo = dir.path() / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // A reader first, so that opening the FIFO for writing does not wait; non-blocking, so that a
  // FIFO never written leaves it with nothing rather than waiting.
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  ASSERT_GE(reader, 0);
  const Status written = WriteFileAtomically(fifo, "through the pipe");
  std::string got;
  char buffer[64];
  for (ssize_t n; (n = ::read(reader, buffer, sizeof(buffer))) > 0;) got.append(buffer, n);
  ::close(reader);
  ASSERT_TRUE(written.ok()) << written.message();
  EXPECT_EQ(got, "through the pipe");
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_EQ(Names(dir.path()), std::set<std::string>{"fifo"});
}

}  // namespace
}  // namespace mm::io
