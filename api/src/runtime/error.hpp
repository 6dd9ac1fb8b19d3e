// Status + thread-local message plumbing shared by every C entry point.
#pragma once

#include <octet/octet.h>
#include <octet/octet_float_mode.hpp>

#include <cstddef>
#include <exception>
#include <limits>
#include <memory>
#include <new>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace octet::core {

// Carries a status and a message from deep inside the core to the C boundary.
class Failure : public std::exception {
 public:
  Failure(octet_status status, std::string message)
      : status_(status), message_(std::move(message)) {}
  octet_status status() const noexcept { return status_; }
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  octet_status status_;
  std::string message_;
};

void set_last_error(octet_status status, const std::string& message);
void clear_last_error();

template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

template <typename... Parts>
[[noreturn]] void fail(octet_status status, const Parts&... parts) {
  throw Failure(status, concat(parts...));
}

// `count` value-initialized T in host memory that the core needs for `what`
// (a staging copy, an amax history): OUT_OF_MEMORY naming the bytes asked
// when they cannot be had. Every host allocation whose size follows the
// caller's shapes goes through here or through a Buffer.
template <typename T>
std::vector<T> host_array(size_t count, const char* what) {
  if (count > std::numeric_limits<size_t>::max() / sizeof(T))
    fail(OCTET_STATUS_OUT_OF_MEMORY, "cannot allocate ", count, " x ", sizeof(T), " bytes of host memory for ", what,
         ": the size overflows size_t");
  try {
    return std::vector<T>(count);
  } catch (const std::bad_alloc&) {
    fail(OCTET_STATUS_OUT_OF_MEMORY, "cannot allocate ", count * sizeof(T), " bytes of host memory for ", what);
  }
}

template <typename... Parts>
void require(bool condition, const Parts&... parts) {
  if (!condition) fail(OCTET_STATUS_INVALID_ARGUMENT, parts...);
}

struct ContextState;

// One running C entry point on this thread: its name, and the contexts it
// holds (enter_context in context.hpp), released when it returns; the
// thread runs in the default floating-point mode (octet_float_mode.hpp)
// until then. Nested scopes (a callback that calls Octet) chain through
// `outer`.
class CallScope {
 public:
  explicit CallScope(const char* function) noexcept;
  ~CallScope();
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

  // A context the call holds, and the function that lets go of it
  // (leave_context, set by enter_context): ~CallScope calls it, last held
  // first, without knowing what holding a context means.
  struct HeldContext {
    ContextState* context = nullptr;
    void (*leave)(ContextState&) noexcept = nullptr;
    // Its owner: a call may drop the last other reference to a context it
    // holds (a quantizer's resident state moving to another context), and
    // the context must outlive the release in ~CallScope.
    std::shared_ptr<ContextState> keep;
  };

  static constexpr int kMaxContexts = 4;
  // The default floating-point mode on this thread for the call (a no-op
  // inside an outer call, which has set it already).
  DefaultFloatMode float_mode;
  const char* function;
  CallScope* outer;
  HeldContext held[kMaxContexts];
  int held_count = 0;
};

// The innermost running entry point of this thread, or NULL.
CallScope* current_call() noexcept;

// Runs the body of a C entry point: exceptions become a status plus message.
// Success leaves the message alone: it always describes the last failure.
template <typename Body>
octet_status guarded(const char* function, Body&& body) noexcept {
  CallScope scope(function);
  try {
    body();
    return OCTET_STATUS_SUCCESS;
  } catch (const Failure& failure) {
    set_last_error(failure.status(), concat(function, ": ", failure.what()));
    return failure.status();
  } catch (const std::bad_alloc&) {
    // Sized allocations name their bytes (host_array, Buffer); what is left
    // is the call's own bookkeeping (handles, names, small state).
    set_last_error(OCTET_STATUS_OUT_OF_MEMORY,
                   concat(function, ": out of host memory for the call's bookkeeping (a small allocation)"));
    return OCTET_STATUS_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_last_error(OCTET_STATUS_INTERNAL, concat(function, ": internal error: ", e.what()));
    return OCTET_STATUS_INTERNAL;
  } catch (...) {
    set_last_error(OCTET_STATUS_INTERNAL, concat(function, ": internal error"));
    return OCTET_STATUS_INTERNAL;
  }
}

}  // namespace octet::core
