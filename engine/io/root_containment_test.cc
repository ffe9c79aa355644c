// Containment in a tree's root is decided by path components, never by the text of the paths: a
// sibling whose name extends the root's ("ROOT-old" beside "ROOT") is outside the root.
#include <gtest/gtest.h>

#include <filesystem>

#include "mm/engine/io/paths.h"
#include "mm/engine/testing/temp_dir.h"

namespace mm::io {
namespace {

namespace fs = std::filesystem;

TEST(RootContainmentTest, ASiblingWhoseNameExtendsTheRootsIsOutsideIt) {
  mm::testing::TempDir dir;
  const fs::path root = dir.path() / "root";
  fs::create_directories(root);
  fs::create_directories(dir.path() / "root-old" / "case");
  fs::create_directories(dir.path() / "rootcase");
  fs::create_directory_symlink(dir.path() / "root-old" / "case", root / "old");
  fs::create_directory_symlink(dir.path() / "rootcase", root / "joined");
  fs::create_directory_symlink(dir.path() / "root-old", root / "sibling");
  const RootDir checked(root);
  for (const char* link : {"old", "joined", "sibling"}) {
    const Status status = checked.Check(root / link, "the data root");
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << link;
    EXPECT_NE(status.message().find("leads outside the data root"), std::string::npos)
        << status.message();
  }
  // The root given with a trailing separator is the same root.
  const RootDir slashed(root.string() + "/");
  EXPECT_FALSE(slashed.Check(root / "old", "the data root").ok());
  // Inside stays inside, however the path is spelled.
  fs::create_directories(root / "real");
  fs::create_directory_symlink(root / "real", root / "inside");
  fs::create_directory_symlink("../real", root / "real" / "self");
  EXPECT_TRUE(checked.Check(root / "inside", "the data root").ok());
  EXPECT_TRUE(slashed.Check(root / "inside", "the data root").ok());
  EXPECT_TRUE(checked.Check(root / "real" / "self", "the data root").ok());
}

// When the root cannot be resolved it is compared as given, still by components.
TEST(RootContainmentTest, AnUnresolvableRootIsComparedByComponentsToo) {
  mm::testing::TempDir dir;
  const fs::path root = dir.path() / "absent";
  fs::create_directories(dir.path() / "absent-old");
  fs::create_directories(dir.path() / "links");
  fs::create_directory_symlink(dir.path() / "absent-old", dir.path() / "links" / "to_old");
  const RootDir checked(root);
  EXPECT_FALSE(checked.Check(dir.path() / "links" / "to_old", "the tree").ok());
}

}  // namespace
}  // namespace mm::io
