#include "kubeletclient/csi/nodeinfomanager/node_status.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace ndr::kubelet {
namespace {

using json = nlohmann::json;

TEST(RenderNodeStatusTest, WhatKubeletWouldPublish) {
  DriverInfo a;
  a.name = "a.example.com";
  a.node_id = "node-a";
  a.endpoint = "/var/lib/kubelet/plugins/a/csi.sock";
  a.registration_socket = "/var/lib/kubelet/plugins_registry/a.example.com-reg.sock";
  a.version = "1.0.0";
  a.requires_publish_pod = true;
  a.max_volumes_per_node = 16;
  a.topology = {{"topology.a/zone", "z1"}, {"topology.a/rack", "r7"}};
  DriverInfo b;
  b.name = "b.example.com";
  b.node_id = "node-b";
  const json doc = json::parse(RenderNodeStatus("node1", {{a.name, a}, {b.name, b}}));

  EXPECT_EQ(doc["csiNode"]["kind"], "CSINode");
  EXPECT_EQ(doc["csiNode"]["apiVersion"], "storage.k8s.io/v1");
  EXPECT_EQ(doc["csiNode"]["metadata"]["name"], "node1");
  const json& drivers = doc["csiNode"]["spec"]["drivers"];
  ASSERT_EQ(drivers.size(), 2u);
  EXPECT_EQ(drivers[0], json::parse(R"({"name":"a.example.com","nodeID":"node-a",
      "topologyKeys":["topology.a/rack","topology.a/zone"],"allocatable":{"count":16}})"));
  // No limit reported: no allocatable at all.
  EXPECT_EQ(drivers[1], json::parse(R"({"name":"b.example.com","nodeID":"node-b",
      "topologyKeys":[]})"));
  EXPECT_EQ(doc["annotations"][kNodeIdAnnotation],
            R"({"a.example.com":"node-a","b.example.com":"node-b"})");
  EXPECT_EQ(doc["labels"], json::parse(R"({"topology.a/rack":"r7","topology.a/zone":"z1"})"));
  EXPECT_EQ(doc["nodeStatus"]["csiDrivers"][0],
            json::parse(R"({"name":"a.example.com","nodeID":"node-a",
      "topologyKeys":["topology.a/rack","topology.a/zone"]})"));
  EXPECT_EQ(doc["drivers"]["a.example.com"]["requiresPublishPod"], true);
  EXPECT_TRUE(doc["drivers"]["b.example.com"]["requiresPublishPod"].is_null());
  EXPECT_EQ(doc["drivers"]["a.example.com"]["endpoint"], a.endpoint);
}

TEST(RenderNodeStatusTest, NoDriversNoAnnotation) {
  const json doc = json::parse(RenderNodeStatus("node1", {}));
  EXPECT_TRUE(doc["annotations"].empty());
  EXPECT_TRUE(doc["csiNode"]["spec"]["drivers"].empty());
}

}  // namespace
}  // namespace ndr::kubelet
