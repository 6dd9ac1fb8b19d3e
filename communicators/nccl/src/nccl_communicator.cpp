// liboctet_nccl: an octet_communicator over NCCL on a CUDA stream
// (octet/octet_nccl.h states the contract; nccl_checks.hpp the argument
// rules, applied before any CUDA call).
#include <cuda_runtime.h>
#include <nccl.h>
#include <octet/octet_nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <thread>

#include "nccl_checks.hpp"
#include "nccl_errors.hpp"

namespace octet_nccl {

thread_local std::string g_message;

octet_status failed(octet_status status, const std::string& message) {
  g_message = message;
  return status;
}

namespace {

static_assert(sizeof(octet_nccl_unique_id) == sizeof(ncclUniqueId), "octet_nccl_unique_id is ncclUniqueId");

constexpr double kDefaultTimeoutSeconds = 300.0;

octet_status cuda_failed(const char* entry, const char* call, cudaError_t error) {
  return failed(OCTET_STATUS_BACKEND_ERROR, std::string("octet_nccl: ") + entry + ": " + call + " failed: " +
                                                cudaGetErrorName(error) + ": " + cudaGetErrorString(error));
}

octet_status nccl_failed(ncclComm_t comm, const char* entry, const char* call, ncclResult_t result) {
  std::string text = std::string("octet_nccl: ") + entry + ": " + call + " failed: " + ncclGetErrorString(result);
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && *last != '\0') text += std::string(" (") + last + ")";
  return failed(OCTET_STATUS_BACKEND_ERROR, text);
}

// The communicator's state (user_data).
struct NcclState {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int device = 0;
  int size = 1;
  float* amax_buffer = nullptr;  // device floats of allreduce_max
  size_t amax_capacity = 0;
  double timeout_seconds = kDefaultTimeoutSeconds;  // 0: none
  bool aborted = false;                             // ncclCommAbort was called
};

// A collective in flight: its event and what names it in a timeout.
struct Pending {
  cudaEvent_t event = nullptr;
  const char* call = "";
  const char* entry = "";
  size_t bytes = 0;
};

// Makes the communicator's device current for a scope, then restores the
// caller's.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    error_ = cudaSetDevice(device);
  }
  ~DeviceScope() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  cudaError_t error() const { return error_; }

 private:
  int previous_ = -1;
  cudaError_t error_ = cudaSuccess;
};

class Clock {
 public:
  explicit Clock(double timeout) : timeout_(timeout), start_(std::chrono::steady_clock::now()) {}
  bool expired() const {
    return timeout_ > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() >= timeout_;
  }
  // Short sleeps growing to 1 ms, so a waiting process leaves the core to others.
  void pause() {
    std::this_thread::sleep_for(pause_);
    if (pause_ < std::chrono::microseconds(1000)) pause_ *= 2;
  }

 private:
  double timeout_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::microseconds pause_{1};
};

// Aborts the NCCL communicator once (a failure or timeout): every later
// entry answers BACKEND_ERROR.
void abort_comm(NcclState& s) {
  if (s.comm != nullptr) ncclCommAbort(s.comm);
  s.comm = nullptr;
  s.aborted = true;
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", seconds);
  return text;
}

octet_status timed_out(NcclState& s, const char* entry, const char* call, size_t bytes) {
  abort_comm(s);
  return failed(OCTET_STATUS_BACKEND_ERROR,
                std::string("octet_nccl: ") + entry + " (" + call + ", " + std::to_string(bytes) +
                    " bytes sent by this process) did not complete within the timeout of " +
                    seconds_text(s.timeout_seconds) +
                    " s: another process stopped taking part (it failed, hangs or left the step); the NCCL "
                    "communicator was aborted (ncclCommAbort), so destroy it and end the processes (timeout: "
                    "OCTET_NCCL_TIMEOUT_SECONDS or octet_nccl_communicator_set_timeout)");
}

// After a call on the non-blocking communicator: waits while NCCL reports
// ncclInProgress, at most the timeout.
octet_status settle(NcclState& s, const char* entry, const char* call, ncclResult_t result, size_t bytes) {
  Clock clock(s.timeout_seconds);
  while (result == ncclInProgress) {
    if (clock.expired()) return timed_out(s, entry, call, bytes);
    clock.pause();
    if (ncclCommGetAsyncError(s.comm, &result) != ncclSuccess) break;
  }
  if (result != ncclSuccess) {
    const octet_status st = nccl_failed(s.comm, entry, call, result);
    abort_comm(s);
    return st;
  }
  return OCTET_STATUS_SUCCESS;
}

// Waits for p's event: done, a NCCL error, or the timeout.
octet_status complete(NcclState& s, const Pending& p) {
  Clock clock(s.timeout_seconds);
  while (true) {
    const cudaError_t e = cudaEventQuery(p.event);
    if (e == cudaSuccess) return OCTET_STATUS_SUCCESS;
    if (e != cudaErrorNotReady) return cuda_failed(p.entry, "cudaEventQuery", e);
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(s.comm, &async);
    if (async != ncclSuccess && async != ncclInProgress) {
      const octet_status st = nccl_failed(s.comm, p.entry, p.call, async);
      abort_comm(s);
      return st;
    }
    if (clock.expired()) return timed_out(s, p.entry, p.call, p.bytes);
    clock.pause();
  }
}

// The state of an entry's user_data; NULL (with the message) if unusable.
NcclState* state_of(void* user_data, const char* entry) {
  auto* s = static_cast<NcclState*>(user_data);
  if (s == nullptr) {
    failed(OCTET_STATUS_INVALID_ARGUMENT,
           std::string("octet_nccl: ") + entry + ": user_data is NULL (not made by octet_nccl_communicator_init)");
    return nullptr;
  }
  if (s->aborted) {
    failed(OCTET_STATUS_BACKEND_ERROR, std::string("octet_nccl: ") + entry +
                                           ": the communicator was aborted after a failure or timeout; destroy it");
    return nullptr;
  }
  return s;
}

octet_status invalid(const std::string& message) { return failed(OCTET_STATUS_INVALID_ARGUMENT, message); }

octet_status check_pointer(const char* entry, const char* name, const void* pointer, size_t count, int device) {
  BufferKind kind = BufferKind::unregistered_host;
  int buffer_device = -1;
  if (pointer != nullptr) {
    cudaPointerAttributes a{};
    const cudaError_t e = cudaPointerGetAttributes(&a, pointer);
    if (e != cudaSuccess) return cuda_failed(entry, "cudaPointerGetAttributes", e);
    switch (a.type) {
      case cudaMemoryTypeDevice:
        kind = BufferKind::device;
        break;
      case cudaMemoryTypeManaged:
        kind = BufferKind::managed;
        break;
      case cudaMemoryTypeHost:
        kind = BufferKind::registered_host;
        break;
      default:
        kind = BufferKind::unregistered_host;
    }
    buffer_device = a.device;
  }
  const std::string m = check_buffer(entry, name, pointer, count, kind, buffer_device, device);
  return m.empty() ? OCTET_STATUS_SUCCESS : invalid(m);
}

ncclDataType_t nccl_type(int32_t dtype) {
  switch (dtype) {
    case OCTET_DTYPE_BF16:
      return ncclBfloat16;
    case OCTET_DTYPE_FP16:
      return ncclFloat16;
    default:
      return ncclFloat32;
  }
}

ncclRedOp_t nccl_op(int32_t op) { return op == OCTET_REDUCE_MAX ? ncclMax : ncclSum; }

// Records the event after a started collective and hands the request out.
octet_status record(NcclState& s, const char* entry, const char* call, size_t bytes, void** request) {
  auto* p = new (std::nothrow) Pending;
  if (p == nullptr)
    return failed(OCTET_STATUS_OUT_OF_MEMORY, std::string("octet_nccl: ") + entry + ": no memory for a request");
  p->call = call;
  p->entry = entry;
  p->bytes = bytes;
  cudaError_t e = cudaEventCreateWithFlags(&p->event, cudaEventDisableTiming);
  if (e == cudaSuccess) e = cudaEventRecord(p->event, s.stream);
  if (e != cudaSuccess) {
    // The collective is queued but cannot be waited for: the communicator is unusable.
    if (p->event != nullptr) cudaEventDestroy(p->event);
    delete p;
    abort_comm(s);
    return cuda_failed(entry, "cudaEventRecord", e);
  }
  *request = p;
  return OCTET_STATUS_SUCCESS;
}

extern "C" octet_status nccl_allreduce_max(float* values, size_t count, void* user_data) {
  const char* entry = "allreduce_max";
  NcclState* s = state_of(user_data, entry);
  if (s == nullptr) return user_data == nullptr ? OCTET_STATUS_INVALID_ARGUMENT : OCTET_STATUS_BACKEND_ERROR;
  if (count == 0) return OCTET_STATUS_SUCCESS;
  if (values == nullptr) return invalid("octet_nccl: allreduce_max: argument 'values' is NULL");
  const std::string m = check_count(entry, count, sizeof(float), 1);
  if (!m.empty()) return invalid(m);
  DeviceScope scope(s->device);
  if (scope.error() != cudaSuccess) return cuda_failed(entry, "cudaSetDevice", scope.error());
  if (count > s->amax_capacity) {
    cudaFree(s->amax_buffer);
    s->amax_buffer = nullptr;
    s->amax_capacity = 0;
    const cudaError_t e = cudaMalloc(&s->amax_buffer, count * sizeof(float));
    if (e != cudaSuccess) return cuda_failed(entry, "cudaMalloc", e);
    s->amax_capacity = count;
  }
  const size_t bytes = count * sizeof(float);
  cudaError_t e = cudaMemcpyAsync(s->amax_buffer, values, bytes, cudaMemcpyHostToDevice, s->stream);
  if (e != cudaSuccess) return cuda_failed(entry, "cudaMemcpyAsync", e);
  const ncclResult_t r = ncclAllReduce(s->amax_buffer, s->amax_buffer, count, ncclFloat32, ncclMax, s->comm, s->stream);
  if (octet_status st = settle(*s, entry, "ncclAllReduce", r, bytes)) return st;
  // Wait for the collective (with the timeout) before copying back: a copy
  // to pageable host memory would block until the stream reaches it.
  void* request = nullptr;
  if (octet_status st = record(*s, entry, "ncclAllReduce", bytes, &request)) return st;
  auto* p = static_cast<Pending*>(request);
  const octet_status st = complete(*s, *p);
  cudaEventDestroy(p->event);
  delete p;
  if (st != OCTET_STATUS_SUCCESS) return st;
  // The stream is idle now: the copy on it waits for nothing else.
  e = cudaMemcpyAsync(values, s->amax_buffer, bytes, cudaMemcpyDeviceToHost, s->stream);
  if (e == cudaSuccess) e = cudaStreamSynchronize(s->stream);
  if (e != cudaSuccess) return cuda_failed(entry, "cudaMemcpyAsync", e);
  return OCTET_STATUS_SUCCESS;
}

extern "C" octet_status nccl_allreduce(const void* send, void* recv, size_t count, int32_t dtype, int32_t op,
                                       void** request, void* user_data) {
  const char* entry = "allreduce";
  NcclState* s = state_of(user_data, entry);
  if (s == nullptr) return user_data == nullptr ? OCTET_STATUS_INVALID_ARGUMENT : OCTET_STATUS_BACKEND_ERROR;
  if (request == nullptr) return invalid("octet_nccl: allreduce: argument 'request' is NULL");
  std::string m = check_reduction(entry, dtype, op);
  if (m.empty()) m = check_count(entry, count, element_bytes(dtype), 1);
  if (!m.empty()) return invalid(m);
  DeviceScope scope(s->device);
  if (scope.error() != cudaSuccess) return cuda_failed(entry, "cudaSetDevice", scope.error());
  if (octet_status st = check_pointer(entry, "send", send, count, s->device)) return st;
  if (octet_status st = check_pointer(entry, "recv", recv, count, s->device)) return st;
  const size_t bytes = count * element_bytes(dtype);
  const ncclResult_t r = ncclAllReduce(send, recv, count, nccl_type(dtype), nccl_op(op), s->comm, s->stream);
  if (octet_status st = settle(*s, entry, "ncclAllReduce", r, bytes)) return st;
  return record(*s, entry, "ncclAllReduce", bytes, request);
}

extern "C" octet_status nccl_allgather(const void* send, void* recv, size_t send_count, int32_t dtype, void** request,
                                       void* user_data) {
  const char* entry = "allgather";
  NcclState* s = state_of(user_data, entry);
  if (s == nullptr) return user_data == nullptr ? OCTET_STATUS_INVALID_ARGUMENT : OCTET_STATUS_BACKEND_ERROR;
  if (request == nullptr) return invalid("octet_nccl: allgather: argument 'request' is NULL");
  const size_t size = element_bytes(dtype);
  if (size == 0) return invalid(std::string("octet_nccl: allgather: unknown dtype ") + std::to_string(dtype));
  const std::string m = check_count(entry, send_count, size, s->size);
  if (!m.empty()) return invalid(m);
  DeviceScope scope(s->device);
  if (scope.error() != cudaSuccess) return cuda_failed(entry, "cudaSetDevice", scope.error());
  if (octet_status st = check_pointer(entry, "send", send, send_count, s->device)) return st;
  if (octet_status st = check_pointer(entry, "recv", recv, send_count, s->device)) return st;
  const size_t bytes = send_count * size;
  const ncclResult_t r = ncclAllGather(send, recv, bytes, ncclUint8, s->comm, s->stream);
  if (octet_status st = settle(*s, entry, "ncclAllGather", r, bytes)) return st;
  return record(*s, entry, "ncclAllGather", bytes, request);
}

extern "C" octet_status nccl_reduce_scatter(const void* send, void* recv, size_t recv_count, int32_t dtype, int32_t op,
                                            void** request, void* user_data) {
  const char* entry = "reduce_scatter";
  NcclState* s = state_of(user_data, entry);
  if (s == nullptr) return user_data == nullptr ? OCTET_STATUS_INVALID_ARGUMENT : OCTET_STATUS_BACKEND_ERROR;
  if (request == nullptr) return invalid("octet_nccl: reduce_scatter: argument 'request' is NULL");
  std::string m = check_reduction(entry, dtype, op);
  if (m.empty()) m = check_count(entry, recv_count, element_bytes(dtype), s->size);
  if (!m.empty()) return invalid(m);
  DeviceScope scope(s->device);
  if (scope.error() != cudaSuccess) return cuda_failed(entry, "cudaSetDevice", scope.error());
  if (octet_status st = check_pointer(entry, "send", send, recv_count, s->device)) return st;
  if (octet_status st = check_pointer(entry, "recv", recv, recv_count, s->device)) return st;
  const size_t bytes = recv_count * size_t(s->size) * element_bytes(dtype);
  const ncclResult_t r = ncclReduceScatter(send, recv, recv_count, nccl_type(dtype), nccl_op(op), s->comm, s->stream);
  if (octet_status st = settle(*s, entry, "ncclReduceScatter", r, bytes)) return st;
  return record(*s, entry, "ncclReduceScatter", bytes, request);
}

extern "C" octet_status nccl_wait(void* request, void* user_data) {
  auto* p = static_cast<Pending*>(request);
  if (p == nullptr) return invalid("octet_nccl: wait: argument 'request' is NULL");
  auto* s = static_cast<NcclState*>(user_data);
  octet_status st = OCTET_STATUS_SUCCESS;
  if (s == nullptr) {
    st = invalid("octet_nccl: wait: user_data is NULL (not made by octet_nccl_communicator_init)");
  } else if (s->aborted) {
    st = failed(OCTET_STATUS_BACKEND_ERROR, std::string("octet_nccl: wait (") + p->entry +
                                                "): the communicator was aborted after a failure or timeout");
  } else {
    DeviceScope scope(s->device);
    st = scope.error() != cudaSuccess ? cuda_failed("wait", "cudaSetDevice", scope.error()) : complete(*s, *p);
  }
  // Waited for exactly once: the event goes whatever the outcome (after an
  // abort nothing more runs on the stream).
  cudaEventDestroy(p->event);
  delete p;
  return st;
}

void free_state(NcclState* s) {
  if (s == nullptr) return;
  DeviceScope scope(s->device);
  if (s->comm != nullptr) {
    ncclResult_t r = ncclCommFinalize(s->comm);
    Clock clock(s->timeout_seconds);
    while (r == ncclInProgress && !clock.expired()) {
      clock.pause();
      if (ncclCommGetAsyncError(s->comm, &r) != ncclSuccess) break;
    }
    if (r == ncclSuccess)
      ncclCommDestroy(s->comm);
    else
      abort_comm(*s);  // a collective still in flight, or finalize failed
  }
  if (s->stream != nullptr) cudaStreamDestroy(s->stream);
  cudaFree(s->amax_buffer);
  delete s;
}

}  // namespace

bool made_here(const octet_communicator* communicator) {
  return communicator != nullptr && communicator->allreduce_max == &nccl_allreduce_max;
}

}  // namespace octet_nccl

using namespace octet_nccl;

extern "C" {

OCTET_NCCL_API octet_status octet_nccl_get_unique_id(octet_nccl_unique_id* id) {
  if (id == nullptr) return invalid("octet_nccl: argument 'id' is NULL");
  ncclUniqueId u;
  const ncclResult_t r = ncclGetUniqueId(&u);
  if (r != ncclSuccess) return nccl_failed(nullptr, "get_unique_id", "ncclGetUniqueId", r);
  std::memcpy(id->internal, u.internal, sizeof u.internal);
  return OCTET_STATUS_SUCCESS;
}

OCTET_NCCL_API octet_status octet_nccl_communicator_init_sized(const octet_nccl_unique_id* id, int rank, int size,
                                                               int device, octet_communicator* communicator,
                                                               size_t struct_size) {
  std::string m = check_init(id, rank, size, device, communicator, struct_size);
  double timeout = kDefaultTimeoutSeconds;
  if (m.empty()) m = timeout_from_text(std::getenv("OCTET_NCCL_TIMEOUT_SECONDS"), &timeout);
  if (!m.empty()) return invalid(m);

  int devices = 0;
  const cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess) return cuda_failed("init", "cudaGetDeviceCount", e);
  if (devices == 0) return failed(OCTET_STATUS_BACKEND_ERROR, "octet_nccl: init: no CUDA device");
  if (device >= devices)
    return invalid("octet_nccl: argument 'device' (" + std::to_string(device) + ") must be < the " +
                   std::to_string(devices) + " CUDA devices");

  auto* s = new (std::nothrow) NcclState;
  if (s == nullptr) return failed(OCTET_STATUS_OUT_OF_MEMORY, "octet_nccl: no memory for the communicator's state");
  s->device = device;
  s->size = size;
  s->timeout_seconds = timeout;
  {
    DeviceScope scope(device);
    if (scope.error() != cudaSuccess) {
      delete s;
      return cuda_failed("init", "cudaSetDevice", scope.error());
    }
    const cudaError_t se = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking);
    if (se != cudaSuccess) {
      free_state(s);
      return cuda_failed("init", "cudaStreamCreateWithFlags", se);
    }
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclUniqueId u;
    std::memcpy(u.internal, id->internal, sizeof u.internal);
    const ncclResult_t r = ncclCommInitRankConfig(&s->comm, size, u, rank, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
      const octet_status st = nccl_failed(s->comm, "init", "ncclCommInitRankConfig", r);
      abort_comm(*s);
      free_state(s);
      return st;
    }
    if (octet_status st = settle(*s, "init", "ncclCommInitRankConfig", r, 0)) {
      free_state(s);
      return st;
    }
  }
  octet_communicator c{};
  c.struct_size = sizeof(c) < struct_size ? sizeof(c) : struct_size;
  c.allreduce_max = &nccl_allreduce_max;
  c.user_data = s;
  c.rank = rank;
  c.size = size;
  c.memory_kinds = OCTET_COMM_DEVICE_MEMORY;
  c.allreduce = &nccl_allreduce;
  c.allgather = &nccl_allgather;
  c.reduce_scatter = &nccl_reduce_scatter;
  c.wait = &nccl_wait;
  std::memcpy(communicator, &c, c.struct_size);
  return OCTET_STATUS_SUCCESS;
}

OCTET_NCCL_API octet_status octet_nccl_communicator_set_timeout(octet_communicator* communicator, double seconds) {
  if (!made_here(communicator))
    return invalid("octet_nccl: argument 'communicator' was not made by octet_nccl_communicator_init");
  const std::string m = check_timeout(seconds);
  if (!m.empty()) return invalid(m);
  static_cast<NcclState*>(communicator->user_data)->timeout_seconds = seconds;
  return OCTET_STATUS_SUCCESS;
}

OCTET_NCCL_API void octet_nccl_communicator_destroy(octet_communicator* communicator) {
  if (!made_here(communicator)) return;
  free_state(static_cast<NcclState*>(communicator->user_data));
  const size_t size = communicator->struct_size;
  std::memset(communicator, 0, size < sizeof(*communicator) ? size : sizeof(*communicator));
  communicator->struct_size = size;
}

OCTET_NCCL_API const char* octet_nccl_last_error_message(void) { return g_message.c_str(); }

}  // extern "C"
