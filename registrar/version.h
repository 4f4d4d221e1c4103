#ifndef NDR_REGISTRAR_VERSION_H_
#define NDR_REGISTRAR_VERSION_H_

namespace ndr::registrar {

// Printed by --version. The major version follows the Go registrar's flag and behaviour
// compatibility (v2); the rest is this implementation's own.
inline constexpr char kVersion[] = "v2.17.0-ndr.1";

}  // namespace ndr::registrar

#endif  // NDR_REGISTRAR_VERSION_H_
