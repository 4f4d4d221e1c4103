#ifndef NDR_REGISTRAR_VERSION_H_
#define NDR_REGISTRAR_VERSION_H_

namespace ndr::registrar {

// The Go node-driver-registrar release whose flags and behaviour this registrar matches, for
// --version and the start-up log. This registrar's own version is version/version.h's.
inline constexpr char kGoRegistrarRelease[] = "v2.17.0";

}  // namespace ndr::registrar

#endif  // NDR_REGISTRAR_VERSION_H_
