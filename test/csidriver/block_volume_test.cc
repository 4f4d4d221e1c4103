#include "test/csidriver/block_volume.h"

#include <sys/stat.h>
#include <unistd.h>

#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/matchers.h"
#include "test/util/temp_dir.h"

namespace ndr::sample {
namespace {

using ::ndr::testing::IsOk;
using ::ndr::testing::StatusIs;
using ::ndr::testing::TempDir;
using ::testing::HasSubstr;

TEST(ImageFileNameTest, Table) {
  struct Case {
    std::string id;
    std::string name;
  } cases[] = {
      {"pvc-0a1b", "pvc-0a1b.img"},
      {"Vol_1.2-3", "Vol_1.2-3.img"},
      {std::string(128, 'v'), std::string(128, 'v') + ".img"},
      {".", "..img"},  // a file name, never the directory itself or its parent
      {"..", "...img"},
      {"../../etc", "xLi4vLi4vZXRj.img"},
      {"/", "xLw.img"},
      {"xLw", "xeEx3.img"},  // a plain name starting with 'x' is encoded: it cannot pass for "/"
      {"a b", "xYSBi.img"},
      {std::string("a\0b", 3), "xYQBi.img"},
      {"\xff\xfe", "x__4.img"},  // base64url: '_' and '-', never '/'
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::string> name = ImageFileName(c.id);
    ASSERT_THAT(name, IsOk()) << c.id;
    EXPECT_EQ(*name, c.name) << c.id;
  }
  EXPECT_THAT(ImageFileName(std::string(129, 'v')),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "volume_id is 129 bytes long; a block volume's ID names its disk image, "
                       "and the CSI spec's limit for strings is 128 bytes"));
}

TEST(ImageFileNameTest, NamesAreSafeAndDistinct) {
  // Distinct IDs, each once.
  std::set<std::string> ids = {"a",    "x", "x61", "78", "/", "x2f", ".", "..",
                               "../x", "-", "a-b", "",   " ", "\n",  "x-", "xLw", "Lw"};
  for (size_t n : {1, 2, 3, 63, 64, 99, 100, 127, 128}) {
    ids.insert(std::string(n, 'v'));
    ids.insert(std::string(n, '/'));
    ids.insert(std::string(n, '\xff'));
    ids.insert(std::string(n - 1, 'v') + "w");
  }
  std::set<std::string> names;
  for (const std::string& id : ids) {
    absl::StatusOr<std::string> name = ImageFileName(id);
    ASSERT_THAT(name, IsOk()) << id;
    EXPECT_TRUE(names.insert(*name).second) << "two IDs share " << *name;
    EXPECT_EQ(name->find('/'), std::string::npos) << *name;
    EXPECT_LE(name->size(), 255u) << *name;
    EXPECT_THAT(*name, ::testing::EndsWith(".img"));
  }
}

TEST(EnsureImageTest, CreatesASparseImageOnceAndKeepsItsData) {
  TempDir dir("img");
  const std::string data = dir.Join("data");
  ASSERT_THAT(EnsureDataDir(data), IsOk());
  ASSERT_THAT(EnsureDataDir(data), IsOk());
  struct stat st;
  ASSERT_EQ(stat(data.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700);

  const std::string image = data + "/v.img";
  ASSERT_THAT(EnsureImage(image), IsOk());
  ASSERT_EQ(stat(image.c_str(), &st), 0);
  EXPECT_TRUE(S_ISREG(st.st_mode));
  EXPECT_EQ(st.st_size, kImageSize);
  EXPECT_EQ(st.st_mode & 07777, 0600);
  EXPECT_LT(st.st_blocks * 512, kImageSize) << "not sparse";

  // Data written to the image survives a second EnsureImage; a short image is extended.
  ASSERT_TRUE(::ndr::testing::WriteFile(image, "data"));
  ASSERT_THAT(EnsureImage(image), IsOk());
  ASSERT_EQ(stat(image.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, kImageSize);
  std::string contents;
  ASSERT_TRUE(::ndr::testing::ReadFile(image, &contents));
  EXPECT_EQ(contents.substr(0, 4), "data");
}

TEST(EnsureImageTest, RefusesWhatIsNotARegularFile) {
  TempDir dir("img");
  ASSERT_EQ(symlink("/etc/passwd", dir.Join("link.img").c_str()), 0);
  EXPECT_THAT(EnsureImage(dir.Join("link.img")),
              StatusIs(absl::StatusCode::kFailedPrecondition, "symbolic link"));
  ASSERT_EQ(mkdir(dir.Join("dir.img").c_str(), 0700), 0);
  EXPECT_FALSE(EnsureImage(dir.Join("dir.img")).ok());
  ASSERT_TRUE(::ndr::testing::WriteFile(dir.Join("file"), ""));
  EXPECT_THAT(EnsureDataDir(dir.Join("file")),
              StatusIs(absl::StatusCode::kFailedPrecondition, "is not a directory"));
  EXPECT_THAT(EnsureDataDir(dir.Join("missing/data")),
              StatusIs(absl::StatusCode::kInternal, "create data directory"));
}

TEST(BlockIndexTest, RoundTripsAnyTargetAndFingerprint) {
  TempDir dir("idx");
  const std::string path = dir.Join("published-block");
  absl::StatusOr<BlockIndex> empty = ReadBlockIndex(path);
  ASSERT_THAT(empty, IsOk());
  EXPECT_TRUE(empty->empty());

  const BlockIndex index = {
      {"/pods/a b/target", "volume_id v\nreadonly false\n"},
      {"/pods/tab\there/nl\nthere", "volume_id \\x\ncontext k \"q\"\n"},
  };
  ASSERT_THAT(WriteBlockIndex(path, index), IsOk());
  absl::StatusOr<BlockIndex> read = ReadBlockIndex(path);
  ASSERT_THAT(read, IsOk());
  EXPECT_EQ(*read, index);
  EXPECT_THAT(::ndr::testing::DirEntries(dir.path()), ::testing::ElementsAre("published-block"));

  ASSERT_THAT(WriteBlockIndex(path, {}), IsOk());
  read = ReadBlockIndex(path);
  ASSERT_THAT(read, IsOk());
  EXPECT_TRUE(read->empty());
}

TEST(BlockIndexTest, MalformedLinesAreDataLoss) {
  TempDir dir("idx");
  const std::string path = dir.Join("published-block");
  for (const char* text : {"no tab\n", "/t\tbad escape \\q\n", "\tempty target\n"}) {
    ASSERT_TRUE(::ndr::testing::WriteFile(path, text));
    EXPECT_THAT(ReadBlockIndex(path), StatusIs(absl::StatusCode::kDataLoss, path + " line 1"))
        << text;
  }
}

}  // namespace
}  // namespace ndr::sample
