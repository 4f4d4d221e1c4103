#include "registrar/options.h"

#include <functional>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test/util/matchers.h"

namespace ndr::registrar {
namespace {

using ::ndr::testing::IsOk;
using ::ndr::testing::StatusIs;

RawFlags Valid() {
  RawFlags flags;
  flags.kubelet_registration_path = "/var/lib/kubelet/plugins/x/csi.sock";
  return flags;
}

TEST(ParseOptionsTest, GoDefaults) {
  absl::StatusOr<Options> options = ParseOptions(Valid());
  ASSERT_THAT(options, IsOk());
  EXPECT_EQ(options->csi_socket_path, "/run/csi/socket");
  EXPECT_EQ(options->plugin_registration_dir, "/registration");
  EXPECT_EQ(options->timeout, absl::Seconds(1));
  EXPECT_EQ(options->connection_timeout, absl::ZeroDuration());
  EXPECT_FALSE(options->serve_http);
  EXPECT_FALSE(options->requires_publish_pod);
  EXPECT_FALSE(options->registration_probe_mode);
  EXPECT_EQ(options->registration_retry_after, kDefaultRegistrationRetryAfter);
  EXPECT_EQ(options->connection_timeout, absl::ZeroDuration());
  EXPECT_TRUE(options->unknown_mode.empty());
}

TEST(ParseOptionsTest, ValidCombinations) {
  struct Case {
    const char* name;
    std::function<void(RawFlags*)> mutate;
    std::function<void(const Options&)> check;
  } cases[] = {
      {"unix url", [](RawFlags* f) { f->csi_address = "unix:///csi/csi.sock"; },
       [](const Options& o) { EXPECT_EQ(o.csi_socket_path, "/csi/csi.sock"); }},
      {"go durations",
       [](RawFlags* f) {
         f->timeout = "500ms";
         f->connection_timeout = "1m30s";
         f->registration_retry_after = "45s";
       },
       [](const Options& o) {
         EXPECT_EQ(o.timeout, absl::Milliseconds(500));
         EXPECT_EQ(o.connection_timeout, absl::Seconds(90));
         EXPECT_EQ(o.registration_retry_after, absl::Seconds(45));
       }},
      {"watchdog off", [](RawFlags* f) { f->registration_retry_after = "0"; },
       [](const Options& o) { EXPECT_EQ(o.registration_retry_after, absl::ZeroDuration()); }},
      {"http all interfaces", [](RawFlags* f) { f->http_endpoint = ":9809"; },
       [](const Options& o) {
         EXPECT_TRUE(o.serve_http);
         EXPECT_EQ(o.http_host, "");
         EXPECT_EQ(o.http_port, 9809);
       }},
      {"http any free port", [](RawFlags* f) { f->http_endpoint = "127.0.0.1:0"; },
       [](const Options& o) {
         EXPECT_TRUE(o.serve_http);
         EXPECT_EQ(o.http_port, 0);
       }},
      {"http v4", [](RawFlags* f) { f->http_endpoint = "127.0.0.1:8080"; },
       [](const Options& o) { EXPECT_EQ(o.http_host, "127.0.0.1"); }},
      {"http v6", [](RawFlags* f) { f->http_endpoint = "[::1]:8080"; },
       [](const Options& o) { EXPECT_EQ(o.http_host, "::1"); }},
      {"health port", [](RawFlags* f) { f->health_port = 9808; },
       [](const Options& o) {
         EXPECT_TRUE(o.serve_http);
         EXPECT_EQ(o.http_port, 9808);
       }},
      {"trailing slash", [](RawFlags* f) { f->plugin_registration_path = "/registration/"; },
       [](const Options& o) { EXPECT_EQ(o.plugin_registration_dir, "/registration"); }},
      {"requires pod", [](RawFlags* f) { f->requires_publish_pod = true; },
       [](const Options& o) { EXPECT_TRUE(o.requires_publish_pod); }},
      {"pprof", [](RawFlags* f) { f->enable_pprof = true; },
       [](const Options& o) { EXPECT_TRUE(o.pprof_requested); }},
      {"empty mode registers, as the Go registrar's default", [](RawFlags* f) { f->mode = ""; },
       [](const Options& o) { EXPECT_FALSE(o.registration_probe_mode); }},
      {"any other mode registers, with a warning, as the Go registrar does",
       [](RawFlags* f) { f->mode = "node-register"; },
       [](const Options& o) {
         EXPECT_FALSE(o.registration_probe_mode);
         EXPECT_EQ(o.unknown_mode, "node-register");
       }},
      {"registration mode is no unknown mode", [](RawFlags* f) { f->mode = "registration"; },
       [](const Options& o) { EXPECT_TRUE(o.unknown_mode.empty()); }},
      {"connection timeout accepted, with no effect",
       [](RawFlags* f) { f->connection_timeout = "2s"; },
       [](const Options& o) { EXPECT_EQ(o.connection_timeout, absl::Seconds(2)); }},
      {"localhost for the HTTP server", [](RawFlags* f) { f->http_endpoint = "localhost:0"; },
       [](const Options& o) { EXPECT_EQ(o.http_host, "localhost"); }},
      {"probe mode needs nothing else",
       [](RawFlags* f) {
         f->mode = "kubelet-registration-probe";
         f->kubelet_registration_path = "";
       },
       [](const Options& o) { EXPECT_TRUE(o.registration_probe_mode); }},
  };
  for (const Case& c : cases) {
    RawFlags flags = Valid();
    c.mutate(&flags);
    absl::StatusOr<Options> options = ParseOptions(flags);
    ASSERT_THAT(options, IsOk()) << c.name;
    c.check(*options);
  }
}

TEST(ParseOptionsTest, InvalidCombinationsNameTheFlag) {
  struct Case {
    const char* name;
    std::function<void(RawFlags*)> mutate;
    const char* message;
  } cases[] = {
      {"no registration path", [](RawFlags* f) { f->kubelet_registration_path = ""; },
       "--kubelet-registration-path: is required"},
      {"relative registration path", [](RawFlags* f) { f->kubelet_registration_path = "csi.sock"; },
       "--kubelet-registration-path: \"csi.sock\" must be an absolute path"},
      {"long registration path",
       [](RawFlags* f) { f->kubelet_registration_path = "/" + std::string(120, 'k'); },
       "--kubelet-registration-path: socket path"},
      {"empty csi address", [](RawFlags* f) { f->csi_address = ""; }, "--csi-address"},
      {"tcp csi address", [](RawFlags* f) { f->csi_address = "tcp://1.2.3.4:5"; },
       "--csi-address"},
      {"long csi address", [](RawFlags* f) { f->csi_address = "/" + std::string(120, 'c'); },
       "--csi-address: socket path"},
      {"bad timeout", [](RawFlags* f) { f->timeout = "1 second"; }, "--timeout: \"1 second\""},
      {"bare number timeout", [](RawFlags* f) { f->timeout = "5"; }, "--timeout"},
      {"zero timeout", [](RawFlags* f) { f->timeout = "0s"; }, "--timeout: must be greater"},
      {"negative timeout", [](RawFlags* f) { f->timeout = "-1s"; }, "--timeout"},
      {"bad connection timeout", [](RawFlags* f) { f->connection_timeout = "soon"; },
       "--connection-timeout"},
      {"bad retry", [](RawFlags* f) { f->registration_retry_after = "2 minutes"; },
       "--registration-retry-after: \"2 minutes\""},
      {"negative retry", [](RawFlags* f) { f->registration_retry_after = "-1m"; },
       "--registration-retry-after"},
      {"both http flags",
       [](RawFlags* f) {
         f->http_endpoint = ":9809";
         f->health_port = 9808;
       },
       "--health-port: may not be combined with --http-endpoint"},
      {"health port range", [](RawFlags* f) { f->health_port = 70000; }, "--health-port"},
      {"http no port", [](RawFlags* f) { f->http_endpoint = "9809"; }, "--http-endpoint"},
      {"http bad port", [](RawFlags* f) { f->http_endpoint = ":http"; }, "--http-endpoint"},
      {"http port too big", [](RawFlags* f) { f->http_endpoint = ":65536"; }, "--http-endpoint"},
      {"http host name", [](RawFlags* f) { f->http_endpoint = "example.com:80"; },
       "--http-endpoint: host \"example.com\""},
      {"empty registration dir", [](RawFlags* f) { f->plugin_registration_path = ""; },
       "--plugin-registration-path"},
  };
  for (const Case& c : cases) {
    RawFlags flags = Valid();
    c.mutate(&flags);
    absl::StatusOr<Options> options = ParseOptions(flags);
    EXPECT_THAT(options, StatusIs(absl::StatusCode::kInvalidArgument, c.message)) << c.name;
    if (!options.ok()) {
      EXPECT_EQ(options.status().message().find('\n'), absl::string_view::npos)
          << c.name << ": not one line";
    }
  }
}

}  // namespace
}  // namespace ndr::registrar
