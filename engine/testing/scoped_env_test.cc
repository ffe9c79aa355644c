// ScopedEnv gives an environment variable back as it found it: its earlier value, or unset.
#include "mm/engine/testing/scoped_env.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

namespace mm::testing {
namespace {

std::optional<std::string> EnvValue(const char* name) {
  const char* value = std::getenv(name);
  return value ? std::optional<std::string>(value) : std::nullopt;
}

TEST(ScopedEnvTest, SetsForItsScopeAndGivesTheEarlierValueBack) {
  constexpr const char* kName = "MM_SCOPED_ENV_TEST_VARIABLE";
  setenv(kName, "before", 1);
  {
    ScopedEnv set(kName, "during");
    EXPECT_EQ(EnvValue(kName), "during");
    {
      ScopedEnv unset(kName, std::nullopt);
      EXPECT_EQ(EnvValue(kName), std::nullopt);
    }
    EXPECT_EQ(EnvValue(kName), "during");
  }
  EXPECT_EQ(EnvValue(kName), "before");
  unsetenv(kName);
}

TEST(ScopedEnvTest, AVariableUnsetBeforeIsUnsetAgainAfter) {
  constexpr const char* kName = "MM_SCOPED_ENV_TEST_ABSENT";
  unsetenv(kName);
  {
    ScopedEnv set(kName, "");
    EXPECT_EQ(EnvValue(kName), "");
  }
  EXPECT_EQ(EnvValue(kName), std::nullopt);
}

}  // namespace
}  // namespace mm::testing
