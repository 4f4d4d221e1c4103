// The CSINode updater against a Node service on a real unix socket: a registered driver with a
// period is asked NodeGetInfo again and its allocatable count follows the answer; a driver
// without one is never asked.
#include "kubeletclient/csi/csi_node_updater.h"

#include <atomic>
#include <memory>

#include "api/csi/csi.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "test/util/poll.h"
#include "test/util/temp_dir.h"

namespace ndr::kubelet {
namespace {

// NodeGetInfo answers `count` and counts the calls.
class CountingNode final : public csi::v1::Node::Service {
 public:
  grpc::Status NodeGetInfo(grpc::ServerContext*, const csi::v1::NodeGetInfoRequest*,
                           csi::v1::NodeGetInfoResponse* response) override {
    ++calls;
    response->set_node_id("node-1");
    response->set_max_volumes_per_node(count.load());
    return grpc::Status::OK;
  }
  std::atomic<int64_t> count{0};
  std::atomic<int> calls{0};
};

struct Server {
  explicit Server(const std::string& socket) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + socket, grpc::InsecureServerCredentials());
    builder.RegisterService(&node);
    server = builder.BuildAndStart();
  }
  ~Server() { server->Shutdown(); }
  CountingNode node;
  std::unique_ptr<grpc::Server> server;
};

TEST(CsiNodeUpdaterTest, ARegisteredDriverWithAPeriodIsAskedAgain) {
  ::ndr::testing::TempDir dir("upd");
  Server periodic(dir.Join("a.sock")), plain(dir.Join("b.sock"));
  ASSERT_NE(periodic.server, nullptr);
  ASSERT_NE(plain.server, nullptr);
  // The observer runs on the updater's thread too (its own updates): it reads the pointer
  // atomically, and the updater joins its thread before it is gone.
  std::atomic<CsiNodeUpdater*> current{nullptr};
  std::atomic<int64_t> seen_count{-1};
  DriverRegistry registry([&](const DriverRegistry::Snapshot& drivers) {
    if (auto a = drivers.find("a.example.com"); a != drivers.end()) {
      seen_count = a->second.max_volumes_per_node;
    }
    if (CsiNodeUpdater* u = current.load()) u->OnRegistryChange(drivers);
  });
  auto updater = std::make_unique<CsiNodeUpdater>(
      &registry, std::map<std::string, absl::Duration>{{"a.example.com", absl::Milliseconds(50)}},
      absl::Seconds(10), nullptr);
  current = updater.get();

  periodic.node.count = 3;
  registry.Set({.name = "a.example.com", .endpoint = dir.Join("a.sock"),
                .registration_socket = "reg-a", .node_id = "node-1", .max_volumes_per_node = 8});
  registry.Set({.name = "b.example.com", .endpoint = dir.Join("b.sock"),
                .registration_socket = "reg-b", .node_id = "node-1", .max_volumes_per_node = 8});
  EXPECT_TRUE(::ndr::testing::PollUntil([&] { return seen_count == 3; }))
      << "count " << seen_count;
  periodic.node.count = 5;
  EXPECT_TRUE(::ndr::testing::PollUntil([&] { return seen_count == 5; }))
      << "count " << seen_count;
  EXPECT_EQ(registry.Get("a.example.com")->max_volumes_per_node, 5);
  EXPECT_EQ(registry.Get("b.example.com")->max_volumes_per_node, 8);
  EXPECT_EQ(plain.node.calls, 0);  // no period: never asked, while a was asked at least twice
  EXPECT_GE(periodic.node.calls, 2);

  // Gone, then registered again from another socket: the new registration is updated too.
  ASSERT_TRUE(registry.Erase("a.example.com", "reg-a"));
  periodic.node.count = 6;
  registry.Set({.name = "a.example.com", .endpoint = dir.Join("a.sock"),
                .registration_socket = "reg-a2", .node_id = "node-1", .max_volumes_per_node = 8});
  EXPECT_TRUE(::ndr::testing::PollUntil([&] { return seen_count == 6; }))
      << "count " << seen_count;
  updater.reset();  // stops and joins before the registry goes
  current = nullptr;
}

// Update changes a registered driver from the socket named only, and keeps its identity.
TEST(DriverRegistryTest, UpdateOnlyTheRegistrationNamed) {
  int notified = 0;
  DriverRegistry registry([&](const DriverRegistry::Snapshot&) { ++notified; });
  registry.Set({.name = "a", .endpoint = "/e", .registration_socket = "/r"});
  EXPECT_FALSE(registry.Update("a", "/other", [](DriverInfo* d) { d->max_volumes_per_node = 1; }));
  EXPECT_FALSE(registry.Update("b", "/r", [](DriverInfo* d) { d->max_volumes_per_node = 1; }));
  EXPECT_TRUE(registry.Update("a", "/r", [](DriverInfo* d) {
    d->max_volumes_per_node = 4;
    d->endpoint = "/elsewhere";  // not the updater's to change
  }));
  EXPECT_EQ(registry.Get("a")->max_volumes_per_node, 4);
  EXPECT_EQ(registry.Get("a")->endpoint, "/e");
  EXPECT_EQ(notified, 2);
}

}  // namespace
}  // namespace ndr::kubelet
