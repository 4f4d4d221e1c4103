#include "registrar/path_hints.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/go_duration.h"

namespace ndr::registrar {
namespace {

// "A, B or C" of `suffix` under each common kubelet root.
std::string UnderCommonRoots(absl::string_view suffix) {
  std::vector<std::string> paths;
  for (const char* root : kCommonKubeletRoots) paths.push_back(absl::StrCat(root, suffix));
  return absl::StrCat(absl::StrJoin(paths.begin(), paths.end() - 1, ", "), " or ", paths.back());
}

}  // namespace

std::string UnwatchedRegistryHint(const std::string& registration_dir, absl::Duration waited) {
  return absl::StrCat(
      "Kubelet has not asked the registration socket for its info (no GetInfo) within ",
      FormatGoDuration(waited),
      ": kubelet is most likely not watching the directory it is in. --plugin-registration-path=",
      registration_dir,
      " must be where kubelet's plugin registry on the host is mounted into this container: "
      "<kubelet root>/plugins_registry, i.e. ",
      UnderCommonRoots("/plugins_registry"),
      " (the kubelet root is kubelet's --root-dir; check the hostPath of that volume)");
}

std::optional<UnreachableDriver> KubeletCouldNotDial(absl::string_view refusal) {
  constexpr absl::string_view kDial = "dial unix ";
  const size_t at = refusal.find(kDial);
  if (at == absl::string_view::npos) return std::nullopt;
  absl::string_view rest = refusal.substr(at + kDial.size());
  const size_t colon = rest.find(": ");
  if (colon == absl::string_view::npos || colon == 0) return std::nullopt;
  UnreachableDriver unreachable;
  unreachable.path = std::string(rest.substr(0, colon));
  // The cause ends where gRPC's quoted description does.
  absl::string_view cause = rest.substr(colon + 2);
  cause = cause.substr(0, cause.find_first_of("\"\\"));
  unreachable.cause = std::string(cause);
  return unreachable;
}

std::string UnreachableDriverHint(const UnreachableDriver& unreachable, const std::string& endpoint,
                                  const std::string& csi_address, const std::string& driver) {
  return absl::StrCat(
      "Kubelet could not reach the driver at --kubelet-registration-path=", endpoint,
      unreachable.path == endpoint ? "" : absl::StrCat(" (it dialled ", unreachable.path, ")"),
      ": ", unreachable.cause,
      ". That flag must be the driver socket's path on the host, where kubelet runs, not in this "
      "container (here the driver answers at --csi-address=",
      csi_address, "); usually <kubelet root>/plugins/", driver, "/csi.sock, i.e. ",
      UnderCommonRoots(absl::StrCat("/plugins/", driver, "/csi.sock")),
      ", with that host directory mounted at the directory of --csi-address");
}

}  // namespace ndr::registrar
