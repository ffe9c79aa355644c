#include "mm/engine/status.h"

#include <gtest/gtest.h>

#include <memory>

namespace mm {
namespace {

TEST(StatusTest, DefaultIsOkAndPrintsOk) {
  Status status;
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(status.ToString(), "OK");
}

TEST(StatusTest, ErrorCarriesCodeAndMessage) {
  Status status = InvalidArgumentError("bad shape");
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.ToString(), "INVALID_ARGUMENT: bad shape");
}

TEST(StatusTest, WithContextPrefixesErrorsOnly) {
  EXPECT_EQ(NotFoundError("no file").WithContext("case x").message(), "case x: no file");
  EXPECT_TRUE(OkStatus().WithContext("case x").ok());
}

TEST(StatusOrTest, HoldsValueOrError) {
  StatusOr<std::unique_ptr<int>> value = std::make_unique<int>(7);
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(**value, 7);
  StatusOr<int> error = UnimplementedError("no f64");
  EXPECT_FALSE(error.ok());
  EXPECT_EQ(error.status().code(), StatusCode::kUnimplemented);
}

TEST(StatusOrTest, OkStatusWithoutValueBecomesInternalError) {
  StatusOr<int> broken = OkStatus();
  EXPECT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), StatusCode::kInternal);
}

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError("odd");
  return x / 2;
}

StatusOr<int> Quarter(int x) {
  MM_ASSIGN_OR_RETURN(int half, Half(x));
  MM_ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

TEST(StatusOrTest, AssignOrReturnPropagatesTheFirstError) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().message(), "odd");
}

}  // namespace
}  // namespace mm
