#include "backends/backend_list.h"

#include <gtest/gtest.h>

namespace mm {
namespace {

TEST(BuiltinBackendsTest, ReferenceComesFirstAndEveryBackendCreatesUnderItsName) {
  BackendRegistry registry = BuiltinBackends();
  const auto names = registry.Names();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names.front(), "reference");
  for (const std::string& name : names) {
    auto backend = registry.Create(name);
    ASSERT_TRUE(backend.ok()) << name << ": " << backend.status();
    EXPECT_EQ((*backend)->name(), name);
    EXPECT_FALSE(registry.Description(name).empty()) << name;
  }
}

}  // namespace
}  // namespace mm
