#include "registrar/metrics.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ndr::registrar {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(MetricsTest, RendersPrometheusText) {
  Metrics metrics;
  metrics.registrations = 2;
  metrics.refusals = 1;
  metrics.socket_recreations = 3;
  metrics.driver_reconnects = 4;
  metrics.health_ok = 5;
  metrics.health_socket_missing = 6;
  metrics.health_failed = 7;
  metrics.refusals_replaced_socket = 8;
  metrics.refusals_socket_gone = 9;
  metrics.reoffers = 11;
  metrics.unwatched_registry = 1;
  metrics.refusals_transient = 12;
  metrics.refusals_permanent = 13;
  metrics.refusals_unknown = 14;
  metrics.registered = 1;
  metrics.retrying = 1;
  const std::string text = RenderPrometheus(metrics);
  EXPECT_THAT(text, HasSubstr("# TYPE csi_node_driver_registrar_registrations_total counter\n"
                              "csi_node_driver_registrar_registrations_total 2\n"));
  EXPECT_THAT(text, HasSubstr("\ncsi_node_driver_registrar_registration_refusals_total 1\n"));
  EXPECT_THAT(text, HasSubstr("\ncsi_node_driver_registrar_socket_recreations_total 3\n"));
  EXPECT_THAT(text, HasSubstr("\ncsi_node_driver_registrar_driver_reconnects_total 4\n"));
  EXPECT_THAT(text,
              HasSubstr("\ncsi_node_driver_registrar_health_checks_total{result=\"ok\"} 5\n"));
  EXPECT_THAT(text, HasSubstr("{result=\"socket_missing\"} 6\n"));
  EXPECT_THAT(text, HasSubstr("{result=\"failed\"} 7\n"));
  EXPECT_THAT(text, HasSubstr("\ncsi_node_driver_registrar_registration_refusals_ignored_total"
                              "{reason=\"replaced_socket\"} 8\n"));
  EXPECT_THAT(text, HasSubstr("{reason=\"socket_gone\"} 9\n"));
  EXPECT_THAT(text, Not(HasSubstr("after_reoffer")));  // such refusals are transient ones now
  EXPECT_THAT(text, HasSubstr("\ncsi_node_driver_registrar_registration_reoffers_total 11\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE csi_node_driver_registrar_path_problem gauge\n"
                              "csi_node_driver_registrar_path_problem"
                              "{sign=\"unwatched_registry\"} 1\n"
                              "csi_node_driver_registrar_path_problem"
                              "{sign=\"driver_unreachable\"} 0\n"));
  EXPECT_THAT(text, HasSubstr("\ncsi_node_driver_registrar_registration_refusals_by_kind_total"
                              "{kind=\"transient\"} 12\n"));
  EXPECT_THAT(text, HasSubstr("{kind=\"permanent\"} 13\n"));
  EXPECT_THAT(text, HasSubstr("{kind=\"unknown\"} 14\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE csi_node_driver_registrar_registered gauge\n"
                              "csi_node_driver_registrar_registered 1\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE csi_node_driver_registrar_registration_retrying gauge\n"
                              "csi_node_driver_registrar_registration_retrying 1\n"));
  // One HELP/TYPE header per metric family, even with several label sets.
  size_t headers = 0;
  for (size_t at = 0; (at = text.find("# TYPE ", at)) != std::string::npos; ++at) ++headers;
  EXPECT_EQ(headers, 11u);
  EXPECT_EQ(text.back(), '\n');
}

}  // namespace
}  // namespace ndr::registrar
