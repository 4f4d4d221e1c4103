// The registrar's watchdog over kubelet's registration, as pure decisions (registrar.cc acts on
// them).
//
// Kubelet can leave a registrar unregistered for good: when its RegisterPlugin blocks or fails,
// NotifyRegistrationStatus never comes, and kubelets before v1.36 do not try again
// (kubernetes/kubernetes#138170, #133725). The Go registrar then waits until someone restarts its
// pod. This one offers its socket again, the way kubelet notices (a fresh socket at the same
// path), when no NotifyRegistrationStatus(registered=true) came within --registration-retry-after
// of the socket being created or last offered; the waits double after each offer, up to 6
// minutes (or --registration-retry-after, if longer). A registrar that was notified is never
// disturbed.
//
// The default waits longer than kubelet may legitimately take over one registration, so that a
// registration kubelet is still working on is never offered again. That longest time is the same
// in every release from v1.26.15 to v1.37.2 (read in v1.26.15, v1.29.6, v1.31.14, v1.34.4,
// v1.35.4, v1.36.0, v1.36.3 and v1.37.2), 137.7 s plus the API server's answers:
//   - up to 1 s before the plugin manager's reconciler picks the new socket up
//     (pluginmanager/plugin_manager.go, loopSleepDuration);
//   - up to 10 s to dial it and 1 s for GetInfo (operationexecutor/operation_generator.go,
//     dialTimeoutDuration in dial; GenerateRegisterPluginFunc);
//   - up to 2 min for the driver's NodeGetInfo, dialling included (volume/csi/csi_plugin.go,
//     csiTimeout in RegisterPlugin);
//   - up to 0.682 s of InstallCSIDriver's retries of the Node and CSINode updates: for each,
//     10 + 50 + 250 ms between its four attempts, each up to 10% longer by the jitter
//     (volume/csi/nodeinfomanager/nodeinfomanager.go, updateBackoff: 4 steps from 10 ms, factor 5,
//     jitter 0.1; apimachinery wait.ExponentialBackoff sleeps only between attempts), whose API
//     calls have no deadline of kubelet's own;
//   - up to 5 s for NotifyRegistrationStatus (operation_generator.go, notifyTimeoutDuration).
// The first wait, 3 minutes, leaves 42 s for the API calls (two to six in a healthy
// registration); the second, 6 minutes, covers a re-offer that waited behind a registration in
// flight (operations on one socket path never overlap: pkg/util/goroutinemap) and then its own
// (about 4 min 40 s).
//
// What a refusal (registered=false) does is the registration lifecycle's to decide
// (registration_lifecycle.h). One that cannot be kubelet's verdict on the socket the registrar
// serves now is not taken as one:
//  - it came for a socket the registrar has since replaced (deleted and created again, or
//    offered again): the new socket gets its own verdict. Either it arrived on the old socket's
//    server, or on the new one's without the GetInfo that starts every kubelet handshake:
//    kubelet sends its verdict over the connection it asked GetInfo on, and gRPC re-dials that by
//    path when the socket behind it was replaced (pkg/kubelet/pluginmanager/operationexecutor,
//    GenerateRegisterPluginFunc: dial, GetInfo, ..., NotifyRegistrationStatus on the same client);
//  - the socket it came for is no longer at the path (someone deleted it, and kubelet failed to
//    reach it again while registering): the registrar creates it again.
// Pure functions; thread-safe.
#ifndef NDR_REGISTRAR_REGISTRATION_WATCHDOG_H_
#define NDR_REGISTRAR_REGISTRATION_WATCHDOG_H_

#include <cstdint>

#include "absl/time/time.h"

namespace ndr::registrar {

// The longest kubelet may take over one registration before it answers, by the reading above
// (without the API server's own answers).
inline constexpr absl::Duration kKubeletLongestRegistration =
    absl::Milliseconds((1 + 10 + 1 + 120 + 5) * 1000 + 682);
inline constexpr absl::Duration kDefaultRegistrationRetryAfter = absl::Minutes(3);
inline constexpr absl::Duration kMaxRegistrationRetryWait = absl::Minutes(6);

// How long to wait for registered=true after an offer, when `offers` offers of this socket went
// unanswered before it (0 for the first): `retry_after` doubled each time, up to 6 minutes (or
// `retry_after`, if that is longer). Zero `retry_after`: the watchdog is off (InfiniteDuration).
absl::Duration RegistrationWait(absl::Duration retry_after, int offers);

}  // namespace ndr::registrar

#endif  // NDR_REGISTRAR_REGISTRATION_WATCHDOG_H_
