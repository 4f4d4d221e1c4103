#include "kubeletclient/cli/probe.h"

#include <iostream>

#include "absl/status/statusor.h"
#include "gflags/gflags.h"
#include "kubeletclient/cli/shared_flags.h"
#include "kubeletclient/probe.h"

DEFINE_bool(notify, false,
            "probe: end the handshake as kubelet does, with NotifyRegistrationStatus. Off, the "
            "probe is read-only (GetInfo and the driver's NodeGetInfo) and only says what it "
            "would have sent: a registrar that is told it is registered counts it and stops "
            "offering its socket.");

namespace ndr::kubelet::cli {
namespace {

int Run() {
  absl::StatusOr<Handshake> handshake = HandshakeFromFlags("probe");
  if (!handshake.ok()) return Fail(handshake.status().message());
  if (FLAGS_registration_socket.empty()) return Fail("probe: --registration-socket is required");
  ProbeOutcome outcome =
      kubelet::Probe(FLAGS_registration_socket, handshake->timeouts, handshake->csi,
                     FLAGS_notify ? RegistrationVerdict::kSend : RegistrationVerdict::kWithhold);
  std::cout << outcome.json;
  return outcome.registered ? 0 : 1;
}

}  // namespace

Command Probe() {
  return {"probe",
          "kubeletclient probe --registration-socket=SOCKET [--notify] [--kubelet-version=1.N] "
          "[--ask-csi-registration]",
          WithHandshakeFlags({"registration_socket", "notify"}), &Run};
}

}  // namespace ndr::kubelet::cli
