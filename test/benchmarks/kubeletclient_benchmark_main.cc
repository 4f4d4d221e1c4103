// Prints kubeletclient's figures: how soon a new registration socket shows up in the node status
// file, and how long 200 plugins appearing at once take to register.
//
//   bazel run -c opt //test/benchmarks:kubeletclient_benchmark [-- --plugins=200]
//
// kubeletclient runs as a real process. The plugins are registration servers in this process
// (answering GetInfo, CSIRegistration and NotifyRegistrationStatus) and one CSI Node service
// answering NodeGetInfo, each on its own unix socket; a plugin "appears" when its socket is
// renamed into the watched directory, and is "registered" when the status file names it.
#include <signal.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "api/csi/csi.grpc.pb.h"
#include "api/csiregistration/csiregistration.grpc.pb.h"
#include "api/pluginregistration/pluginregistration.grpc.pb.h"
#include "gflags/gflags.h"
#include "grpcpp/grpcpp.h"
#include "test/util/poll.h"
#include "test/util/subprocess.h"
#include "test/util/temp_dir.h"

DEFINE_int32(plugins, 200, "Plugins for each of the two measurements.");

namespace ndr {
namespace {

using ::ndr::testing::ReadFile;
using ::ndr::testing::Runfile;
using ::ndr::testing::Subprocess;
using ::ndr::testing::TempDir;

class Plugin final : public pluginregistration::Registration::Service,
                     public csiregistration::CSIRegistration::Service {
 public:
  Plugin(std::string name, std::string endpoint, const std::string& bind_path)
      : name_(std::move(name)), endpoint_(std::move(endpoint)) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + bind_path, grpc::InsecureServerCredentials());
    builder.RegisterService(static_cast<pluginregistration::Registration::Service*>(this));
    builder.RegisterService(static_cast<csiregistration::CSIRegistration::Service*>(this));
    builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 1);
    server_ = builder.BuildAndStart();
  }
  ~Plugin() override { server_->Shutdown(std::chrono::system_clock::now()); }
  grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                       pluginregistration::PluginInfo* info) override {
    info->set_type("CSIPlugin");
    info->set_name(name_);
    info->set_endpoint(endpoint_);
    info->add_supported_versions("1.0.0");
    return grpc::Status::OK;
  }
  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*,
                                        const pluginregistration::RegistrationStatus*,
                                        pluginregistration::RegistrationStatusResponse*) override {
    return grpc::Status::OK;
  }
  grpc::Status GetCSIDriverInfo(grpc::ServerContext*, const csiregistration::CSIDriverInfoRequest*,
                                csiregistration::CSIDriverInfo* info) override {
    info->set_csi_endpoint(endpoint_);
    return grpc::Status::OK;
  }

 private:
  const std::string name_, endpoint_;
  std::unique_ptr<grpc::Server> server_;
};

class Node final : public csi::v1::Node::Service {
  grpc::Status NodeGetInfo(grpc::ServerContext*, const csi::v1::NodeGetInfoRequest*,
                           csi::v1::NodeGetInfoResponse* response) override {
    response->set_node_id("bench-node");
    return grpc::Status::OK;
  }
};

// Waits (on inotify events for the status file) until `done(contents)` holds; false after 60 s.
bool WaitForStatus(int inotify_fd, const std::string& path,
                   const std::function<bool(const std::string&)>& done) {
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  alignas(inotify_event) char buffer[4096];
  while (absl::Now() < deadline) {
    std::string contents;
    if (ReadFile(path, &contents) && done(contents)) return true;
    pollfd p = {inotify_fd, POLLIN, 0};
    if (poll(&p, 1, 100) > 0) (void)!read(inotify_fd, buffer, sizeof(buffer));
  }
  return false;
}

double Percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))];
}

int Run() {
  TempDir dir("kbench");
  const std::string reg = dir.Join("reg"), staging = dir.Join("reg/.staging");
  mkdir(reg.c_str(), 0755);
  mkdir(staging.c_str(), 0755);
  const std::string status = dir.Join("status.json"), endpoint = dir.Join("node.sock");
  Node node;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + endpoint, grpc::InsecureServerCredentials());
  builder.RegisterService(&node);
  auto node_server = builder.BuildAndStart();

  Subprocess client({Runfile("kubeletclient/kubeletclient"), "watch",
                     "--plugin-registry-dir=" + reg, "--node-status-file=" + status,
                     "--node-name=bench"},
                    dir.Join("client.log"));
  int fd = inotify_init1(IN_NONBLOCK);
  inotify_add_watch(fd, dir.path().c_str(), IN_MOVED_TO | IN_CLOSE_WRITE);
  if (!WaitForStatus(fd, status, [](const std::string&) { return true; })) {
    std::cerr << "kubeletclient did not start:\n" << client.Log();
    return 1;
  }

  // One at a time: creation to registration, each measured on its own.
  std::vector<std::unique_ptr<Plugin>> plugins;
  std::vector<double> latency_ms;
  for (int i = 0; i < FLAGS_plugins; ++i) {
    const std::string name = absl::StrCat("one", i, ".example.com");
    const std::string staged = absl::StrCat(staging, "/", i, ".sock");
    plugins.push_back(std::make_unique<Plugin>(name, endpoint, staged));
    const std::string needle = absl::StrCat("\"", name, "\": {");
    const absl::Time created = absl::Now();
    rename(staged.c_str(), absl::StrCat(reg, "/one", i, "-reg.sock").c_str());
    if (!WaitForStatus(fd, status, [&](const std::string& s) {
          return s.find(needle) != std::string::npos;
        })) {
      std::cerr << name << " never registered:\n" << client.Log();
      return 1;
    }
    latency_ms.push_back(absl::ToDoubleMilliseconds(absl::Now() - created));
  }

  // All at once: servers ready at private names, then renamed in as fast as possible.
  std::vector<std::unique_ptr<Plugin>> burst;
  for (int i = 0; i < FLAGS_plugins; ++i) {
    burst.push_back(std::make_unique<Plugin>(absl::StrCat("burst", i, ".example.com"), endpoint,
                                             absl::StrCat(staging, "/b", i, ".sock")));
  }
  const std::string last = absl::StrCat("\"burst", FLAGS_plugins - 1, ".example.com\": {");
  const absl::Time start = absl::Now();
  for (int i = 0; i < FLAGS_plugins; ++i) {
    rename(absl::StrCat(staging, "/b", i, ".sock").c_str(),
           absl::StrCat(reg, "/burst", i, "-reg.sock").c_str());
  }
  const size_t expected = 2 * FLAGS_plugins;
  if (!WaitForStatus(fd, status, [&](const std::string& s) {
        size_t count = 0;
        for (size_t at = 0; (at = s.find("\"registrationSocket\"", at)) != std::string::npos;
             ++at) {
          ++count;
        }
        return count == expected;
      })) {
    std::cerr << "the burst did not register:\n" << client.Log();
    return 1;
  }
  const double burst_ms = absl::ToDoubleMilliseconds(absl::Now() - start);

  utsname u;
  uname(&u);
  std::cout << "kubeletclient benchmark, " << sysconf(_SC_NPROCESSORS_ONLN) << " cores, Linux "
            << u.release << "\n\n";
  std::cout << absl::StrFormat("| %-58s | %-12s |\n|%s|%s|\n", "figure", "value",
                               std::string(60, '-'), std::string(14, '-'));
  auto row = [](const std::string& k, const std::string& v) {
    std::cout << absl::StrFormat("| %-58s | %-12s |\n", k, v);
  };
  row(absl::StrCat("socket created -> in status file, p50 of ", FLAGS_plugins),
      absl::StrFormat("%.2f ms", Percentile(latency_ms, 0.5)));
  row(absl::StrCat("socket created -> in status file, p99 of ", FLAGS_plugins),
      absl::StrFormat("%.2f ms", Percentile(latency_ms, 0.99)));
  row(absl::StrCat("socket created -> in status file, max of ", FLAGS_plugins),
      absl::StrFormat("%.2f ms", *std::max_element(latency_ms.begin(), latency_ms.end())));
  row(absl::StrCat(FLAGS_plugins, " plugins appearing at once -> all in status file"),
      absl::StrFormat("%.0f ms", burst_ms));
  client.Signal(SIGTERM);
  client.Wait(absl::Seconds(30));
  close(fd);
  return 0;
}

}  // namespace
}  // namespace ndr

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  return ndr::Run();
}
