// LivenessWatch against plain listening unix sockets, speaking just enough HTTP/2 by hand to see
// what the watch sends and answers.
#include "kubeletclient/pluginmanager/liveness_watch.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "test/util/poll.h"
#include "test/util/temp_dir.h"

namespace ndr::kubelet {
namespace {

using ::ndr::testing::kPatience;
using ::ndr::testing::PollUntil;
using ::ndr::testing::TempDir;

const int kPatienceMs = absl::ToInt64Milliseconds(kPatience);

int Listen(const std::string& path) {
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr = {};
  addr.sun_family = AF_UNIX;
  strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  EXPECT_EQ(listen(fd, 8), 0);
  return fd;
}

// The next connection on `listener`, or -1 if none comes within kPatience.
int Accept(int listener) {
  pollfd p = {listener, POLLIN, 0};
  if (poll(&p, 1, kPatienceMs) != 1) return -1;
  return accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
}

// Exactly `size` bytes from `fd`, or what came before EOF or a silence of kPatience.
std::string ReadBytes(int fd, size_t size) {
  std::string out;
  while (out.size() < size) {
    pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, kPatienceMs) != 1) break;
    char buffer[256];
    const ssize_t n = read(fd, buffer, std::min(sizeof(buffer), size - out.size()));
    if (n <= 0) break;
    out.append(buffer, n);
  }
  return out;
}

class LivenessWatchTest : public ::testing::Test {
 protected:
  std::vector<std::string> Dead() {
    std::lock_guard<std::mutex> lock(mu_);
    return dead_;
  }

  TempDir dir_{"live"};
  const std::string path_ = dir_.Join("p.sock");
  std::mutex mu_;
  std::vector<std::string> dead_;
  LivenessWatch watch_{[this](const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    dead_.push_back(path);
  }};
};

TEST_F(LivenessWatchTest, HoldsAnIdleHttp2ConnectionAndAcknowledgesSettingsAndPings) {
  const int listener = Listen(path_);
  watch_.Watch(path_);
  const int conn = Accept(listener);
  ASSERT_GE(conn, 0);
  const std::string preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
  EXPECT_EQ(ReadBytes(conn, preface.size()), preface);
  EXPECT_EQ(ReadBytes(conn, 9), std::string("\0\0\0\x04\0\0\0\0\0", 9));  // empty SETTINGS
  // The server's SETTINGS (one setting) and a PING: both acknowledged, the PING with its data.
  const std::string frames = std::string("\0\0\x06\x04\0\0\0\0\0" "\0\x03\0\0\0\x64", 15) +
                             std::string("\0\0\x08\x06\0\0\0\0\0" "12345678", 17);
  ASSERT_EQ(write(conn, frames.data(), frames.size()), static_cast<ssize_t>(frames.size()));
  EXPECT_EQ(ReadBytes(conn, 9), std::string("\0\0\0\x04\x01\0\0\0\0", 9));
  EXPECT_EQ(ReadBytes(conn, 17), std::string("\0\0\x08\x06\x01\0\0\0\0" "12345678", 17));
  EXPECT_TRUE(Dead().empty());
  close(conn);
  close(listener);
}

TEST_F(LivenessWatchTest, ReconnectsWhenOnlyTheConnectionDrops) {
  const int listener = Listen(path_);
  watch_.Watch(path_);
  int conn = Accept(listener);
  ASSERT_GE(conn, 0);
  close(conn);  // a restarted server, or one closing idle connections: still listening
  conn = Accept(listener);
  EXPECT_GE(conn, 0) << "the watch did not reconnect";
  EXPECT_TRUE(Dead().empty());
  close(conn);
  close(listener);
}

TEST_F(LivenessWatchTest, ReportsTheRegisteredSocketRefusingConnections) {
  const int listener = Listen(path_);
  watch_.Watch(path_);
  const int conn = Accept(listener);
  ASSERT_GE(conn, 0);
  // The process dies: its descriptors close, its socket file stays.
  close(conn);
  close(listener);
  EXPECT_TRUE(PollUntil([&] { return Dead() == std::vector<std::string>{path_}; }));
  EXPECT_FALSE(watch_.Watching(path_));
}

TEST_F(LivenessWatchTest, LeavesAReplacedSocketToThePluginWatcher) {
  int listener = Listen(path_);
  watch_.Watch(path_);
  int conn = Accept(listener);
  ASSERT_GE(conn, 0);
  // A new server takes the path (a new inode) before the old one goes.
  ASSERT_EQ(unlink(path_.c_str()), 0);
  const int replacement = Listen(path_);
  close(conn);
  close(listener);
  // Forgotten, not dead. The watch decides when it looks at the socket again, and stops watching
  // it then; a watch that had reconnected instead would have connected to the replacement.
  ASSERT_TRUE(PollUntil([&] { return !watch_.Watching(path_); }));
  pollfd p = {replacement, POLLIN, 0};
  EXPECT_EQ(poll(&p, 1, 0), 0) << "the watch connected to the replacement socket";
  EXPECT_TRUE(Dead().empty());
  close(replacement);
}

TEST_F(LivenessWatchTest, ForgetClosesTheConnection) {
  const int listener = Listen(path_);
  watch_.Watch(path_);
  const int conn = Accept(listener);
  ASSERT_GE(conn, 0);
  watch_.Forget(path_);
  EXPECT_FALSE(watch_.Watching(path_));
  ReadBytes(conn, 1 << 20);  // the preface, then EOF; kPatience if the connection stayed
  char c;
  EXPECT_EQ(recv(conn, &c, 1, MSG_DONTWAIT), 0) << "the connection is still open";
  close(conn);
  close(listener);
}

}  // namespace
}  // namespace ndr::kubelet
