// A program for sbom_test: prints a line; built a second time with zlib linked in (the
// sbom_probe_zlib target), so that the two SBOMs differ by exactly that library.
#include <cstdio>

#ifdef NDR_PROBE_ZLIB
#include <zlib.h>
#endif

int main() {
#ifdef NDR_PROBE_ZLIB
  std::printf("zlib %s\n", zlibVersion());
#else
  std::printf("no zlib\n");
#endif
  return 0;
}
