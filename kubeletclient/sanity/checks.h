// Every check of `kubeletclient sanity`, by name: its group, the kubelet functions it stands for
// and one line of what it does. The order within a group is the order the checks run in; the
// groups' code uses these lists (judge.h), and `kubeletclient sanity --list` prints them.
#ifndef NDR_KUBELETCLIENT_SANITY_CHECKS_H_
#define NDR_KUBELETCLIENT_SANITY_CHECKS_H_

#include <ostream>
#include <string>
#include <vector>

namespace ndr::kubelet::sanity {

enum class CheckGroup {
  kRegistration,  // registration/<name>
  kVolume,        // <mode>/<name> (<mode>/<handle>/<name> with several handles)
  kEphemeral,     // inline/<name>, generic-ephemeral/<name>
  kController,    // controller/<name>, <mode>/<name>, generic-ephemeral/<name>
};

struct CheckInfo {
  CheckGroup group;
  const char* name;     // within its group, e.g. "restart-replay"
  const char* kubelet;  // what kubelet does that it stands for: file and function
  const char* does;     // what is sent, and what passes
};

// All of them, group by group, each group in the order its checks run.
const std::vector<CheckInfo>& AllChecks();

// The names of `group`'s checks, in order.
std::vector<std::string> CheckNames(CheckGroup group);

// The list `--list` prints: a line per check, its name as reported (with <mode> for
// filesystem and block), its group, what it does and the kubelet functions.
void ListChecks(std::ostream& out);

}  // namespace ndr::kubelet::sanity

#endif  // NDR_KUBELETCLIENT_SANITY_CHECKS_H_
