#include "api/go_errno.h"

#include <errno.h>

#include "gtest/gtest.h"

namespace ndr {
namespace {

TEST(GoErrnoTest, LowerCaseAsGoPrintsIt) {
  EXPECT_EQ(GoErrnoText(ENOENT), "no such file or directory");
  EXPECT_EQ(GoErrnoText(EBUSY), "device or resource busy");
  EXPECT_EQ(GoErrnoText(ECONNREFUSED), "connection refused");
}

}  // namespace
}  // namespace ndr
