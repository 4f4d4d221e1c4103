#include "kubeletclient/cli/command.h"

#include <iostream>

namespace ndr::kubelet::cli {

int Fail(absl::string_view message) {
  std::cerr << "kubeletclient: " << message << std::endl;
  return 1;
}

}  // namespace ndr::kubelet::cli
