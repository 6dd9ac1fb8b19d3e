#include "runtime/error.hpp"

namespace octet::core {
namespace {
thread_local std::string last_error_message;
}

void set_last_error(octet_status, const std::string& message) {
  try {
    last_error_message = message;
  } catch (...) {
    // Keep whatever was there: reporting must never throw.
  }
}

void clear_last_error() { last_error_message.clear(); }

namespace {
thread_local CallScope* innermost_call = nullptr;
}

CallScope::CallScope(const char* name) noexcept : function(name), outer(innermost_call) { innermost_call = this; }

CallScope::~CallScope() {
  for (int i = held_count - 1; i >= 0; --i) held[i].leave(*held[i].context);
  innermost_call = outer;
}

CallScope* current_call() noexcept { return innermost_call; }

}  // namespace octet::core

extern "C" OCTET_API const char* octet_last_error_message(void) {
  return octet::core::last_error_message.c_str();
}
