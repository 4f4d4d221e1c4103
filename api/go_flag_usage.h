// --help as Go programs print it: the command line of the Go node-driver-registrar and of kubelet
// is parsed by Go's flag package, whose PrintDefaults users know. gflags would list every flag of
// every library linked in (gflags' own, with build paths), so the programs here answer
// --help with this instead: a usage line, then the flags they name, in the order given, each as
//
//     -name type
//     	description (default value)
//
// where the type is a `back-quoted` word of the description (flag.UnquoteUsage), else "string",
// "int", "duration" (a string flag whose default is a Go duration with its unit), or nothing for
// a bool, and the default is left out when it is the zero value, as Go does.
// Reads gflags' registry; thread-compatible.
#ifndef NDR_API_GO_FLAG_USAGE_H_
#define NDR_API_GO_FLAG_USAGE_H_

#include <string>
#include <vector>

namespace ndr {

// Whether the command line asks for help: -h, -help or --help (Go's spellings), before any
// "--" that ends the flags.
bool HelpRequested(int argc, char** argv);

// A group of flags under a heading ("" for none).
struct FlagSection {
  std::string heading;
  std::vector<std::string> flags;  // gflags names, with underscores
};

// The usage text: `usage` (its own lines, e.g. "Usage of csi-node-driver-registrar:"), then each
// section. A flag that is not defined is a programming error (CHECK).
std::string GoFlagUsage(const std::string& usage, const std::vector<FlagSection>& sections);

// Component-base's logging flags that every program here takes (logging/logging.h), for the
// last section of every --help.
std::vector<std::string> LoggingFlagNames();

}  // namespace ndr

#endif  // NDR_API_GO_FLAG_USAGE_H_
