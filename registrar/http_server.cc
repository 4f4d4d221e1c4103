#include "registrar/http_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/thread.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mutex>

#include "absl/strings/str_cat.h"

namespace ndr::registrar {
namespace {

// A listening, non-blocking TCP socket on host:port, or an error naming the address.
absl::StatusOr<int> Listen(const std::string& host, int port) {
  const std::string shown = absl::StrCat(host.find(':') != std::string::npos ? "[" + host + "]" : host,
                                         ":", port);
  sockaddr_storage storage = {};
  socklen_t length = 0;
  int family = AF_INET;
  const std::string numeric = host == "localhost" ? "127.0.0.1" : host;
  if (numeric.empty() || numeric.find(':') != std::string::npos) {
    family = AF_INET6;
    auto* a = reinterpret_cast<sockaddr_in6*>(&storage);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(port);
    a->sin6_addr = in6addr_any;
    if (!numeric.empty() && inet_pton(AF_INET6, numeric.c_str(), &a->sin6_addr) != 1) {
      return absl::InvalidArgumentError(absl::StrCat("listen ", shown, ": not an IPv6 address"));
    }
    length = sizeof(*a);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&storage);
    a->sin_family = AF_INET;
    a->sin_port = htons(port);
    if (inet_pton(AF_INET, numeric.c_str(), &a->sin_addr) != 1) {
      return absl::InvalidArgumentError(absl::StrCat("listen ", shown, ": not an IPv4 address"));
    }
    length = sizeof(*a);
  }
  int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 && host.empty()) return Listen("0.0.0.0", port);  // No IPv6 in this network.
  if (fd < 0) return absl::InternalError(absl::StrCat("listen ", shown, ": ", strerror(errno)));
  int one = 1, zero = 0;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (family == AF_INET6 && host.empty()) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));  // IPv4 too.
  }
  if (bind(fd, reinterpret_cast<sockaddr*>(&storage), length) != 0 || listen(fd, 16) != 0) {
    const int err = errno;
    close(fd);
    if (host.empty() && err == EADDRNOTAVAIL) return Listen("0.0.0.0", port);
    return absl::UnavailableError(absl::StrCat("listen ", shown, ": ", strerror(err)));
  }
  return fd;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& host, int port,
                                                              Handler handler) {
  static std::once_flag threads_once;
  std::call_once(threads_once, [] { evthread_use_pthreads(); });

  absl::StatusOr<int> fd = Listen(host, port);
  if (!fd.ok()) return fd.status();
  std::unique_ptr<HttpServer> server(new HttpServer());
  server->handler_ = std::move(handler);
  server->fd_ = *fd;
  sockaddr_storage bound = {};
  socklen_t bound_length = sizeof(bound);
  getsockname(*fd, reinterpret_cast<sockaddr*>(&bound), &bound_length);
  server->port_ = ntohs(bound.ss_family == AF_INET6
                            ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  server->base_ = event_base_new();
  server->http_ = server->base_ ? evhttp_new(server->base_) : nullptr;
  if (server->http_ == nullptr ||
      evhttp_accept_socket_with_handle(server->http_, server->fd_) == nullptr) {
    return absl::InternalError("libevent could not set up the HTTP server");
  }
  server->fd_ = -1;  // evhttp owns it now.
  evhttp_set_allowed_methods(server->http_, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
  evhttp_set_gencb(server->http_, &HttpServer::OnRequest, server.get());
  evhttp_set_timeout(server->http_, 10);
  evhttp_set_max_headers_size(server->http_, 16 * 1024);
  evhttp_set_max_body_size(server->http_, 0);
  event_base* base = server->base_;
  server->thread_ = std::thread([base] { event_base_dispatch(base); });
  return server;
}

HttpServer::~HttpServer() {
  if (base_ != nullptr) event_base_loopbreak(base_);
  if (thread_.joinable()) thread_.join();
  if (http_ != nullptr) evhttp_free(http_);
  if (base_ != nullptr) event_base_free(base_);
  if (fd_ >= 0) close(fd_);
}

void HttpServer::OnRequest(evhttp_request* request, void* self) {
  auto* server = static_cast<HttpServer*>(self);
  const evhttp_uri* uri = evhttp_request_get_evhttp_uri(request);
  const char* path = uri != nullptr ? evhttp_uri_get_path(uri) : nullptr;
  HttpResponse response = server->handler_(path != nullptr ? path : "/");
  evbuffer* body = evbuffer_new();
  evbuffer_add(body, response.body.data(), response.body.size());
  evhttp_add_header(evhttp_request_get_output_headers(request), "Content-Type",
                    response.content_type.c_str());
  evhttp_send_reply(request, response.code, nullptr, body);
  evbuffer_free(body);
}

}  // namespace ndr::registrar
