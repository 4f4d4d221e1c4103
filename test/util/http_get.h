// A minimal HTTP/1.0 GET to 127.0.0.1, for tests that read a registrar's /healthz and /metrics.
#ifndef NDR_TEST_UTIL_HTTP_GET_H_
#define NDR_TEST_UTIL_HTTP_GET_H_

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

namespace ndr::testing {

// GET `path` from 127.0.0.1:`port`; returns the status code and fills `body`, or -1 when there
// is no answer or it is not HTTP.
inline int HttpGet(int port, const std::string& path, std::string* body) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  const std::string request = "GET " + path + " HTTP/1.0\r\nHost: localhost\r\n\r\n";
  (void)!write(fd, request.data(), request.size());
  std::string response;
  char buffer[4096];
  for (ssize_t n; (n = read(fd, buffer, sizeof(buffer))) > 0;) response.append(buffer, n);
  close(fd);
  const size_t space = response.find(' ');
  const size_t header_end = response.find("\r\n\r\n");
  if (space == std::string::npos || header_end == std::string::npos) return -1;
  *body = response.substr(header_end + 4);
  return atoi(response.c_str() + space + 1);
}

}  // namespace ndr::testing

#endif  // NDR_TEST_UTIL_HTTP_GET_H_
