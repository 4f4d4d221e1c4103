#include "api/go_errno.h"

#include <string.h>

#include <cctype>

namespace ndr {

std::string GoErrnoText(int err) {
  std::string text = strerror(err);
  if (!text.empty()) text[0] = static_cast<char>(tolower(static_cast<unsigned char>(text[0])));
  return text;
}

}  // namespace ndr
