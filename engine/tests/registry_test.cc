#include "mm/engine/registry.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "mm/engine/testing/fake_backend.h"

namespace mm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A backend named `name` that supports nothing.
BackendFactory Fake(std::string name) {
  return testing::FakeBackend(std::move(name))
      .Answering(Support::No("fake"))
      .FailingToPrepare(UnimplementedError("fake"))
      .Factory();
}

TEST(BackendRegistryTest, KeepsRegistrationOrderAndCreatesByName) {
  BackendRegistry registry;
  ASSERT_TRUE(registry.Register("zeta", "last letter", Fake("zeta")).ok());
  ASSERT_TRUE(registry.Register("alpha", "first letter", Fake("alpha")).ok());
  EXPECT_THAT(registry.Names(), ElementsAre("zeta", "alpha"));
  EXPECT_TRUE(registry.Contains("alpha"));
  EXPECT_EQ(registry.Description("zeta"), "last letter");
  auto backend = registry.Create("alpha");
  ASSERT_TRUE(backend.ok());
  EXPECT_EQ((*backend)->name(), "alpha");
}

TEST(BackendRegistryTest, RefusesDuplicatesAndNamesKnownBackendsOnMiss) {
  BackendRegistry registry;
  ASSERT_TRUE(registry.Register("a", "", Fake("a")).ok());
  EXPECT_EQ(registry.Register("a", "", Fake("a")).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(registry.Register("", "", Fake("")).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(registry.Register("b", "", nullptr).code(), StatusCode::kInvalidArgument);
  auto missing = registry.Create("cuda");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("no backend named 'cuda' (known: a)"));
}

// A backend registered on request is available and creatable by name, but a tool given no
// --backend leaves it out (a runtime behind a driver costs a process and an interpreter).
TEST(BackendRegistryTest, OnRequestBackendsAreNamedButNotInTheDefaultSet) {
  BackendRegistry registry;
  ASSERT_TRUE(registry.Register("a", "", Fake("a")).ok());
  ASSERT_TRUE(registry.Register("py", "", Fake("py"), BackendRegistry::Selection::kOnRequest).ok());
  ASSERT_TRUE(registry.Register("b", "", Fake("b")).ok());
  EXPECT_THAT(registry.Names(), ElementsAre("a", "py", "b"));
  EXPECT_THAT(registry.DefaultNames(), ElementsAre("a", "b"));
  EXPECT_TRUE(registry.Contains("py"));
  EXPECT_TRUE(registry.CheckSelectable("py").ok());
  EXPECT_TRUE(registry.Create("py").ok());
}

// A backend whose library is missing is listed with the reason, never silently left out, and is not
// in the default set (Names) nor creatable: naming it is an error that says why.
TEST(BackendRegistryTest, UnavailableBackendsAreListedWithTheirReasonAndNeverCreated) {
  BackendRegistry registry;
  ASSERT_TRUE(registry.Register("a", "available", Fake("a")).ok());
  ASSERT_TRUE(registry.RegisterUnavailable("blas", "a BLAS", "/lib/libblas.so.3: not found").ok());
  ASSERT_TRUE(registry.Register("c", "available too", Fake("c")).ok());
  EXPECT_THAT(registry.Names(), ElementsAre("a", "c"));
  EXPECT_THAT(registry.UnavailableNames(), ElementsAre("blas"));
  EXPECT_FALSE(registry.Contains("blas"));
  EXPECT_EQ(registry.Description("blas"), "a BLAS");
  EXPECT_EQ(registry.UnavailableReason("blas"), "/lib/libblas.so.3: not found");
  EXPECT_EQ(registry.UnavailableReason("a"), "");
  EXPECT_TRUE(registry.CheckSelectable("a").ok());
  const Status named = registry.CheckSelectable("blas");
  EXPECT_EQ(named.code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(named.message(), HasSubstr("backend 'blas' is not available on this machine: "
                                         "/lib/libblas.so.3: not found"));
  auto created = registry.Create("blas");
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), StatusCode::kFailedPrecondition);
  // Unknown names list only the backends that can run.
  EXPECT_THAT(registry.CheckSelectable("x").message(), HasSubstr("(known: a, c)"));
  // Names are unique across both kinds, and a reason is mandatory.
  EXPECT_EQ(registry.RegisterUnavailable("a", "", "why").code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(registry.Register("blas", "", Fake("blas")).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(registry.RegisterUnavailable("d", "", "").code(), StatusCode::kInvalidArgument);
}

}  // namespace
TEST(BackendRegistryTest, RunsTheWorkerSetupsInTheOrderAddedAndKeepsThemInCopies) {
  BackendRegistry registry;
  std::string ran;
  registry.AddWorkerSetup([&ran] { ran += "a"; });
  registry.AddWorkerSetup([&ran] { ran += "b"; });
  EXPECT_EQ(ran, "") << "only a worker runs them";
  const BackendRegistry copy = registry;
  copy.SetUpWorker();
  EXPECT_EQ(ran, "ab");
  BackendRegistry().SetUpWorker();  // None: nothing to do.
  EXPECT_EQ(ran, "ab");
}

}  // namespace mm
