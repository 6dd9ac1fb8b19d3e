#include "host_errors.hpp"

namespace octet::ref {
namespace {

// Written once by initialize() before any kernel runs (octet_backend.h:
// initialize is called once, by one thread), read afterwards.
plugin::Host g_host;

}  // namespace

const plugin::Host& host() { return g_host; }

void remember_host_services(const octet_host_services* host) { g_host.remember(host); }

}  // namespace octet::ref
