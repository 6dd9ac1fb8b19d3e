#include "runtime/context.hpp"

#include <cstring>
#include <string>

#include "runtime/backend_info.hpp"
#include "runtime/error.hpp"
#include "runtime/versioned_struct.hpp"

namespace octet::core {

ContextState::~ContextState() {
  if (handle != nullptr && backend->api->context_destroy != nullptr) backend->api->context_destroy(handle);
}

namespace {
thread_local char thread_token;  // its address names the thread
}

void enter_context(ContextState& ctx) {
  CallScope* call = current_call();
  if (call == nullptr) return;  // not inside an entry point
  for (int i = 0; i < call->held_count; ++i)
    if (call->held[i].context == &ctx) return;
  if (call->held_count == CallScope::kMaxContexts)
    fail(OCTET_STATUS_INTERNAL, "one call holds more than ", CallScope::kMaxContexts, " contexts");
  const void* expected = nullptr;
  if (ctx.use.owner.compare_exchange_strong(expected, &thread_token, std::memory_order_acquire,
                                            std::memory_order_relaxed)) {
    ctx.use.depth = 1;
    ctx.use.call.store(call->function, std::memory_order_relaxed);
  } else if (expected == &thread_token) {
    ++ctx.use.depth;  // this thread, from inside one of its own calls
  } else {
    const char* other = ctx.use.call.load(std::memory_order_relaxed);
    fail(OCTET_STATUS_INVALID_ARGUMENT, "the context (", static_cast<const void*>(&ctx), ") is in use by ",
         other != nullptr ? other : "another call", " on another thread; a context, with everything created on it "
         "(tensors, layers, saved states, resident quantizer state), is used by one thread at a time");
  }
  call->held[call->held_count++] = {&ctx, &leave_context, ctx.weak_from_this().lock()};
}

void leave_context(ContextState& ctx) noexcept {
  if (--ctx.use.depth != 0) return;
  ctx.use.call.store(nullptr, std::memory_order_relaxed);
  ctx.use.owner.store(nullptr, std::memory_order_release);
}

ContextState& context_arg(const octet_context* context, const char* name) {
  require_live_handle(context, HandleKind::Context, name);
  ContextState& ctx = *context->state;
  enter_context(ctx);
  return ctx;
}

void require_entry(const ContextState& ctx, bool present, const char* name) {
  if (!present)
    fail(OCTET_STATUS_UNSUPPORTED, "backend '", ctx.backend->name, "' does not provide the entry point '",
         name, "'");
}

namespace {

// A profile only takes capabilities away, so it never promises what the
// backend cannot do.
octet_backend_caps apply_profile(const Backend& backend, int32_t profile) {
  octet_backend_caps caps = backend.caps;
  switch (profile) {
    case OCTET_PROFILE_NATIVE:
      break;
    case OCTET_PROFILE_HOPPER_LIKE:
      if (!(caps.fp8_gemm_layouts & OCTET_GEMM_LAYOUT_TN))
        fail(OCTET_STATUS_UNSUPPORTED, "backend '", backend.name,
             "' cannot present the hopper-like profile: it does not run the TN FP8 GEMM layout");
      caps.native_columnwise = 0;
      caps.fp8_gemm_layouts = OCTET_GEMM_LAYOUT_TN;
      break;
    case OCTET_PROFILE_BLACKWELL_LIKE:
      if (!caps.native_columnwise || (caps.fp8_gemm_layouts & OCTET_GEMM_LAYOUT_ALL) != OCTET_GEMM_LAYOUT_ALL)
        fail(OCTET_STATUS_UNSUPPORTED, "backend '", backend.name,
             "' cannot present the blackwell-like profile: it lacks native columnwise access or an FP8 "
             "GEMM layout");
      break;
    default:
      fail(OCTET_STATUS_INVALID_ARGUMENT, "options->capability_profile (", profile,
           ") must be OCTET_PROFILE_NATIVE, OCTET_PROFILE_HOPPER_LIKE or OCTET_PROFILE_BLACKWELL_LIKE");
  }
  return caps;
}

}  // namespace
}  // namespace octet::core

using namespace octet::core;

extern "C" {

OCTET_API octet_status octet_context_create(const octet_context_options* options, octet_context** context) {
  return guarded("octet_context_create", [&] {
    require(context != nullptr, "argument 'context' is NULL");
    octet_context_options o = read_versioned(options, octet_context_options{}, "options");
    std::string requested = o.backend != nullptr ? o.backend : "auto";
    std::shared_ptr<const Backend> backend =
        requested == "auto" ? Registry::instance().best_available() : Registry::instance().find(requested);
    if (backend == nullptr) {
      std::string names;
      for (const auto& b : Registry::instance().backends()) names += (names.empty() ? "" : ", ") + b->name;
      fail(OCTET_STATUS_NOT_FOUND, "options->backend '", requested, "' is not a registered backend (registered: ",
           names, ")");
    }
    if (!backend->available)
      fail(OCTET_STATUS_UNAVAILABLE, "backend '", backend->name, "' is unavailable: ", backend->unavailable_reason);

    auto state = std::make_shared<ContextState>();
    state->backend = backend;
    state->profile = o.capability_profile;
    state->caps = apply_profile(*backend, o.capability_profile);
    clear_backend_message();
    check_backend_status(*backend, "context_create", backend->api->context_create(o.stream, &state->handle));
    *context = new octet_context{std::move(state)};
  });
}

OCTET_API octet_status octet_context_options_init(octet_context_options* options) {
  return guarded("octet_context_options_init", [&] {
    require(options != nullptr, "argument 'options' is NULL");
    *options = octet_context_options{};
    options->struct_size = sizeof(*options);
  });
}

OCTET_API void octet_context_destroy(octet_context* context) {
  if (context == nullptr) return;
  std::shared_ptr<ContextState> keep;  // outlives the call's hold on the context
  guarded("octet_context_destroy", [&] {
    ContextState& ctx = context_arg(context);
    keep = context->state;
    // No scope can end once the handle is gone: dropping the scopes' list of
    // quantizers breaks the cycle context -> quantizer -> resident state ->
    // context, so the context dies with its last tensor.
    ctx.autocast_used.clear();
    ctx.autocast_stack.clear();
    delete context;
  });
}

OCTET_API octet_status octet_context_get_info(const octet_context* context, octet_backend_info* info) {
  return guarded("octet_context_get_info", [&] {
    const ContextState& ctx = context_arg(context);
    require_struct(info, info ? info->struct_size : 0, "info");
    fill_backend_info(*ctx.backend, ctx.caps, info);
  });
}

OCTET_API octet_status octet_context_get_memory_stats(const octet_context* context, octet_memory_stats* stats) {
  return guarded("octet_context_get_memory_stats", [&] {
    context_arg(context);
    write_versioned(context->state->memory.snapshot(), stats, "stats");
  });
}

OCTET_API octet_status octet_context_reset_peak_memory(octet_context* context) {
  return guarded("octet_context_reset_peak_memory", [&] { context_arg(context).memory.reset_peaks(); });
}

OCTET_API octet_status octet_context_synchronize(octet_context* context) {
  return guarded("octet_context_synchronize", [&] {
    const ContextState& ctx = context_arg(context);
    if (ctx.api().synchronize == nullptr) return;  // a synchronous backend
    call_backend(ctx, "synchronize", [&] { return ctx.api().synchronize(ctx.handle); });
  });
}

}  // extern "C"
