// A small HTTP server for /healthz and /metrics, on libevent's evhttp.
//
// libevent (Debian's libevent-dev) is used rather than cpp-httplib because Debian ships
// cpp-httplib only as a shared library built with OpenSSL and brotli, and the registrar is a
// fully static binary. The server runs its own thread; handlers run there one at a time. Its
// event loop sleeps in epoll without a timeout, so an idle server costs no CPU.
#ifndef NDR_REGISTRAR_HTTP_SERVER_H_
#define NDR_REGISTRAR_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

struct event_base;
struct evhttp;
struct evhttp_request;

namespace ndr::registrar {

struct HttpResponse {
  int code = 200;
  std::string body;
  std::string content_type = "text/plain; charset=utf-8";
};

class HttpServer {
 public:
  // Called for every GET with the request's path (no query string).
  using Handler = std::function<HttpResponse(const std::string& path)>;

  // Listens on host:port; an empty host means all interfaces (IPv6 and IPv4 where possible).
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const std::string& host, int port,
                                                           Handler handler);
  ~HttpServer();  // Stops the loop and joins the thread.

  int port() const { return port_; }

 private:
  HttpServer() = default;
  static void OnRequest(::evhttp_request* request, void* self);

  Handler handler_;
  struct event_base* base_ = nullptr;
  struct evhttp* http_ = nullptr;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

}  // namespace ndr::registrar

#endif  // NDR_REGISTRAR_HTTP_SERVER_H_
