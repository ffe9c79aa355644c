// A plugin is run through the table its load child probed: an entry function that gives another
// table on a later call (same version and name, other functions) is refused at load time with a
// clear error, never run through a table no probe saw.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mm/backends/plugin/plugin_loader.h"
#include "mm/engine/registry.h"

namespace mm {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(PluginTableTest, AnEntryGivingAnotherTableOnItsSecondCallIsRefusedAtLoad) {
  BackendRegistry registry;
  const Status status =
      RegisterBackendLibraries(registry, std::vector<std::string>{MM_WRONG_PLUGIN_TABLE_CHANGES});
  ASSERT_FALSE(status.ok()) << "loaded: " << ::testing::PrintToString(registry.Names());
  EXPECT_THAT(status.message(),
              AllOf(HasSubstr(MM_WRONG_PLUGIN_TABLE_CHANGES),
                    HasSubstr("its entry function returned another table on its second call"),
                    HasSubstr("a plugin's table must never change")));
  EXPECT_THAT(registry.Names(), ::testing::Not(::testing::Contains("wrong_table_changes")));
}

// The control: the same plugin whose entry always gives its one table loads.
TEST(PluginTableTest, AnEntryGivingOneTableLoads) {
  BackendRegistry registry;
  const Status status =
      RegisterBackendLibraries(registry, std::vector<std::string>{MM_WRONG_PLUGIN_NONE});
  EXPECT_TRUE(status.ok()) << status;
}

}  // namespace
}  // namespace mm
