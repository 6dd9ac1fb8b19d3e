#include "host_errors.hpp"

#include <algorithm>
#include <cstring>

namespace octet::ref {
namespace {

// Written once by initialize() before any kernel runs (octet_backend.h:
// initialize is called once, by one thread), read afterwards.
octet_host_services g_host{};

}  // namespace

void remember_host_services(const octet_host_services* host) {
  g_host = octet_host_services{};
  if (host == nullptr) return;
  std::memcpy(&g_host, host, std::min(host->struct_size, sizeof g_host));
}

int32_t report(int32_t status, const std::string& message) {
  if (g_host.report_error != nullptr) {
    g_host.report_error(g_host.host_data, status, message.c_str());
  }
  return status;
}

}  // namespace octet::ref
