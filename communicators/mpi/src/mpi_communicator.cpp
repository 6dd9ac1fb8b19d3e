// liboctet_mpi: an octet_communicator over MPI non-blocking collectives
// (octet/octet_mpi.h states the contract).
#include <octet/octet_mpi.h>

#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <thread>

namespace {

thread_local std::string g_message;

octet_status failed(octet_status status, const std::string& message) {
  g_message = message;
  return status;
}

octet_status mpi_failed(int rc, const char* call) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(rc, text, &length);
  return failed(OCTET_STATUS_BACKEND_ERROR, std::string("octet_mpi: ") + call + " failed: " + text);
}

// FP16 and BF16 reductions: each pair decoded to FP32, combined, rounded back.
template <float (*Decode)(uint16_t), uint16_t (*Encode)(float), bool Max>
void combine16(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    const float x = Decode(a[i]), y = Decode(b[i]);
    b[i] = Encode(Max ? (std::isnan(x) || std::isnan(y) ? NAN : std::fmax(x, y)) : x + y);
  }
}

constexpr double kDefaultTimeoutSeconds = 300.0;

struct MpiState {
  MPI_Comm comm = MPI_COMM_NULL;  // the duplicate
  MPI_Op bf16_sum = MPI_OP_NULL, bf16_max = MPI_OP_NULL, fp16_sum = MPI_OP_NULL, fp16_max = MPI_OP_NULL;
  double timeout_seconds = kDefaultTimeoutSeconds;  // 0: none
  bool finalize_mpi = false;                        // init_world initialised MPI
};

// A collective in flight: its request and what names it in a timeout.
struct Pending {
  MPI_Request request = MPI_REQUEST_NULL;
  const char* call = "";   // the MPI call
  const char* entry = "";  // the communicator entry
  size_t bytes = 0;        // this process's send buffer
};

// Waits for `p` by MPI_Test, at most the state's timeout (short sleeps
// growing to 1 ms between tests, so a waiting process leaves the core to
// others). A timeout leaves the collective in flight (MPI cannot cancel it).
octet_status complete(const MpiState& s, Pending& p) {
  using clock = std::chrono::steady_clock;
  const auto start = clock::now();
  auto pause = std::chrono::microseconds(1);
  while (true) {
    int done = 0;
    const int rc = MPI_Test(&p.request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return mpi_failed(rc, p.call);
    if (done) return OCTET_STATUS_SUCCESS;
    const double waited = std::chrono::duration<double>(clock::now() - start).count();
    if (s.timeout_seconds > 0 && waited >= s.timeout_seconds) {
      char seconds[32];
      std::snprintf(seconds, sizeof seconds, "%g", s.timeout_seconds);
      return failed(OCTET_STATUS_BACKEND_ERROR,
                    std::string("octet_mpi: ") + p.entry + " (" + p.call + ", " + std::to_string(p.bytes) +
                        " bytes sent by this process) did not complete within the timeout of " + seconds +
                        " s: another process stopped taking part (it failed, hangs or left the step); the "
                        "collective stays in flight, so end the processes (timeout: OCTET_MPI_TIMEOUT_SECONDS "
                        "or octet_mpi_communicator_set_timeout)");
    }
    std::this_thread::sleep_for(pause);
    if (pause < std::chrono::microseconds(1000)) pause *= 2;
  }
}

// Reads OCTET_MPI_TIMEOUT_SECONDS; false if it is set but not a number >= 0.
bool timeout_from_environment(double* seconds) {
  const char* text = std::getenv("OCTET_MPI_TIMEOUT_SECONDS");
  if (text == nullptr || *text == '\0') return true;
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (*end != '\0' || !std::isfinite(v) || v < 0) return false;
  *seconds = v;
  return true;
}

// The MPI datatype and op of a reduction; false if Octet's dtype or op has none.
bool reduction(const MpiState& s, int32_t dtype, int32_t op, MPI_Datatype* type, MPI_Op* mpi_op) {
  if (op != OCTET_REDUCE_SUM && op != OCTET_REDUCE_MAX) return false;
  const bool sum = op == OCTET_REDUCE_SUM;
  switch (dtype) {
    case OCTET_DTYPE_FP32:
      *type = MPI_FLOAT;
      *mpi_op = sum ? MPI_SUM : MPI_MAX;
      return true;
    case OCTET_DTYPE_BF16:
      *type = MPI_UINT16_T;
      *mpi_op = sum ? s.bf16_sum : s.bf16_max;
      return true;
    case OCTET_DTYPE_FP16:
      *type = MPI_UINT16_T;
      *mpi_op = sum ? s.fp16_sum : s.fp16_max;
      return true;
    default:
      return false;
  }
}

// Element size of a dtype gathered as bytes; 0 if unknown.
int gathered_bytes(int32_t dtype) { return static_cast<int>(octet_dtype_size(static_cast<octet_dtype>(dtype))); }

octet_status check_count(size_t count, const char* entry) {
  if (count > size_t(INT_MAX))
    return failed(OCTET_STATUS_INVALID_ARGUMENT, std::string("octet_mpi: ") + entry + ": count " +
                                                     std::to_string(count) + " exceeds INT_MAX (MPI 3.1 counts)");
  return OCTET_STATUS_SUCCESS;
}

octet_status bad_reduction(const char* entry, int32_t dtype, int32_t op) {
  return failed(OCTET_STATUS_INVALID_ARGUMENT, std::string("octet_mpi: ") + entry + ": dtype " +
                                                   octet_dtype_name(dtype) + " with op " + std::to_string(op) +
                                                   " has no reduction (FP32, BF16, FP16 with SUM or MAX)");
}

// A request the core holds between a start and its wait.
octet_status started(int rc, Pending* pending, void** out) {
  if (rc != MPI_SUCCESS) {
    const char* call = pending->call;
    delete pending;
    return mpi_failed(rc, call);
  }
  *out = pending;
  return OCTET_STATUS_SUCCESS;
}

Pending* new_pending(const char* call, const char* entry, size_t bytes) {
  auto* p = new (std::nothrow) Pending;
  if (p == nullptr) {
    failed(OCTET_STATUS_OUT_OF_MEMORY, std::string("octet_mpi: ") + entry + ": no memory for a request");
    return nullptr;
  }
  p->call = call;
  p->entry = entry;
  p->bytes = bytes;
  return p;
}

extern "C" octet_status mpi_allreduce_max(float* values, size_t count, void* user_data) {
  auto* s = static_cast<MpiState*>(user_data);
  if (octet_status st = check_count(count, "allreduce_max")) return st;
  Pending p;
  p.call = "MPI_Iallreduce";
  p.entry = "allreduce_max";
  p.bytes = count * sizeof(float);
  const int rc = MPI_Iallreduce(MPI_IN_PLACE, values, int(count), MPI_FLOAT, MPI_MAX, s->comm, &p.request);
  if (rc != MPI_SUCCESS) return mpi_failed(rc, "MPI_Iallreduce");
  return complete(*s, p);
}

extern "C" octet_status mpi_allreduce(const void* send, void* recv, size_t count, int32_t dtype, int32_t op,
                                      void** request, void* user_data) {
  auto* s = static_cast<MpiState*>(user_data);
  if (octet_status st = check_count(count, "allreduce")) return st;
  MPI_Datatype type;
  MPI_Op mpi_op;
  if (!reduction(*s, dtype, op, &type, &mpi_op)) return bad_reduction("allreduce", dtype, op);
  Pending* p = new_pending("MPI_Iallreduce", "allreduce", count * size_t(gathered_bytes(dtype)));
  if (p == nullptr) return OCTET_STATUS_OUT_OF_MEMORY;
  const void* source = send == recv ? MPI_IN_PLACE : send;
  return started(MPI_Iallreduce(source, recv, int(count), type, mpi_op, s->comm, &p->request), p, request);
}

extern "C" octet_status mpi_allgather(const void* send, void* recv, size_t send_count, int32_t dtype, void** request,
                                      void* user_data) {
  auto* s = static_cast<MpiState*>(user_data);
  const int bytes = gathered_bytes(dtype);
  if (bytes == 0)
    return failed(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string("octet_mpi: allgather: unknown dtype ") + std::to_string(dtype));
  if (send_count > size_t(INT_MAX) / size_t(bytes)) return check_count(size_t(INT_MAX) + 1, "allgather");
  const int n = int(send_count) * bytes;
  Pending* p = new_pending("MPI_Iallgather", "allgather", size_t(n));
  if (p == nullptr) return OCTET_STATUS_OUT_OF_MEMORY;
  return started(MPI_Iallgather(send, n, MPI_BYTE, recv, n, MPI_BYTE, s->comm, &p->request), p, request);
}

extern "C" octet_status mpi_reduce_scatter(const void* send, void* recv, size_t recv_count, int32_t dtype, int32_t op,
                                           void** request, void* user_data) {
  auto* s = static_cast<MpiState*>(user_data);
  if (octet_status st = check_count(recv_count, "reduce_scatter")) return st;
  MPI_Datatype type;
  MPI_Op mpi_op;
  if (!reduction(*s, dtype, op, &type, &mpi_op)) return bad_reduction("reduce_scatter", dtype, op);
  int size = 0;
  MPI_Comm_size(s->comm, &size);
  Pending* p = new_pending("MPI_Ireduce_scatter_block", "reduce_scatter",
                           recv_count * size_t(size) * size_t(gathered_bytes(dtype)));
  if (p == nullptr) return OCTET_STATUS_OUT_OF_MEMORY;
  return started(MPI_Ireduce_scatter_block(send, recv, int(recv_count), type, mpi_op, s->comm, &p->request), p,
                 request);
}

extern "C" octet_status mpi_wait(void* request, void* user_data) {
  auto* p = static_cast<Pending*>(request);
  if (p == nullptr) return failed(OCTET_STATUS_INVALID_ARGUMENT, "octet_mpi: wait: the request is NULL");
  const octet_status st = complete(*static_cast<MpiState*>(user_data), *p);
  // A collective still in flight keeps its request (MPI may yet write it).
  if (p->request == MPI_REQUEST_NULL) delete p;
  return st;
}

void free_state(MpiState* s) {
  for (MPI_Op* op : {&s->bf16_sum, &s->bf16_max, &s->fp16_sum, &s->fp16_max})
    if (*op != MPI_OP_NULL) MPI_Op_free(op);
  if (s->comm != MPI_COMM_NULL) MPI_Comm_free(&s->comm);
  delete s;
}

}  // namespace

extern "C" {

OCTET_MPI_API octet_status octet_mpi_communicator_init_sized(MPI_Comm comm, octet_communicator* communicator,
                                                             size_t struct_size) {
  if (communicator == nullptr)
    return failed(OCTET_STATUS_INVALID_ARGUMENT, "octet_mpi: argument 'communicator' is NULL");
  if (struct_size < offsetof(octet_communicator, wait) + sizeof(communicator->wait))
    return failed(OCTET_STATUS_INVALID_ARGUMENT, "octet_mpi: argument 'struct_size' (" + std::to_string(struct_size) +
                                                     ") does not hold the users' ABI 1.7 octet_communicator (" +
                                                     std::to_string(sizeof(octet_communicator)) + " bytes)");
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    return failed(OCTET_STATUS_INVALID_ARGUMENT,
                  "octet_mpi: MPI is not initialised (call MPI_Init first) or was "
                  "finalised");
  if (comm == MPI_COMM_NULL)
    return failed(OCTET_STATUS_INVALID_ARGUMENT, "octet_mpi: argument 'comm' is MPI_COMM_NULL");
  double timeout = kDefaultTimeoutSeconds;
  if (!timeout_from_environment(&timeout))
    return failed(OCTET_STATUS_INVALID_ARGUMENT, std::string("octet_mpi: OCTET_MPI_TIMEOUT_SECONDS ('") +
                                                     std::getenv("OCTET_MPI_TIMEOUT_SECONDS") +
                                                     "') must be a number of seconds >= 0 (0: no timeout)");
  auto* s = new (std::nothrow) MpiState;
  if (s == nullptr) return failed(OCTET_STATUS_OUT_OF_MEMORY, "octet_mpi: no memory for the communicator's state");
  s->timeout_seconds = timeout;
  int rc = MPI_Comm_dup(comm, &s->comm);
  if (rc != MPI_SUCCESS) {
    free_state(s);
    return mpi_failed(rc, "MPI_Comm_dup");
  }
  MPI_Comm_set_errhandler(s->comm, MPI_ERRORS_RETURN);
  struct {
    MPI_User_function* fn;
    MPI_Op* op;
  } ops[] = {
      {&combine16<octet_bf16_decode, octet_bf16_encode, false>, &s->bf16_sum},
      {&combine16<octet_bf16_decode, octet_bf16_encode, true>, &s->bf16_max},
      {&combine16<octet_fp16_decode, octet_fp16_encode, false>, &s->fp16_sum},
      {&combine16<octet_fp16_decode, octet_fp16_encode, true>, &s->fp16_max},
  };
  for (auto& o : ops) {
    rc = MPI_Op_create(o.fn, 1, o.op);
    if (rc != MPI_SUCCESS) {
      free_state(s);
      return mpi_failed(rc, "MPI_Op_create");
    }
  }
  int rank = 0, size = 0;
  MPI_Comm_rank(s->comm, &rank);
  MPI_Comm_size(s->comm, &size);

  octet_communicator c{};
  c.struct_size = sizeof(c) < struct_size ? sizeof(c) : struct_size;
  c.allreduce_max = &mpi_allreduce_max;
  c.user_data = s;
  c.rank = rank;
  c.size = size;
  c.memory_kinds = OCTET_COMM_HOST_MEMORY;
  c.allreduce = &mpi_allreduce;
  c.allgather = &mpi_allgather;
  c.reduce_scatter = &mpi_reduce_scatter;
  c.wait = &mpi_wait;
  std::memcpy(communicator, &c, c.struct_size);
  return OCTET_STATUS_SUCCESS;
}

OCTET_MPI_API void octet_mpi_communicator_destroy(octet_communicator* communicator) {
  if (communicator == nullptr || communicator->allreduce_max != &mpi_allreduce_max) return;
  free_state(static_cast<MpiState*>(communicator->user_data));
  const size_t size = communicator->struct_size;
  std::memset(communicator, 0, size < sizeof(*communicator) ? size : sizeof(*communicator));
  communicator->struct_size = size;
}

OCTET_MPI_API octet_status octet_mpi_communicator_init_world_sized(octet_communicator* communicator,
                                                                   size_t struct_size) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized)
    return failed(OCTET_STATUS_INVALID_ARGUMENT, "octet_mpi: MPI was finalised: it cannot be initialised again");
  bool started_mpi = false;
  if (!initialized) {
    int provided = 0;
    const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) return mpi_failed(rc, "MPI_Init_thread");
    started_mpi = true;
  }
  const octet_status st = octet_mpi_communicator_init_sized(MPI_COMM_WORLD, communicator, struct_size);
  if (st != OCTET_STATUS_SUCCESS) {
    if (started_mpi) MPI_Finalize();
    return st;
  }
  static_cast<MpiState*>(communicator->user_data)->finalize_mpi = started_mpi;
  return OCTET_STATUS_SUCCESS;
}

OCTET_MPI_API octet_status octet_mpi_communicator_set_timeout(octet_communicator* communicator, double seconds) {
  if (communicator == nullptr || communicator->allreduce_max != &mpi_allreduce_max)
    return failed(OCTET_STATUS_INVALID_ARGUMENT,
                  "octet_mpi: argument 'communicator' was not made by octet_mpi_communicator_init");
  if (!std::isfinite(seconds) || seconds < 0)
    return failed(OCTET_STATUS_INVALID_ARGUMENT, "octet_mpi: argument 'seconds' (" + std::to_string(seconds) +
                                                     ") must be finite and >= 0 (0: no timeout)");
  static_cast<MpiState*>(communicator->user_data)->timeout_seconds = seconds;
  return OCTET_STATUS_SUCCESS;
}

OCTET_MPI_API void octet_mpi_communicator_finalize_world(octet_communicator* communicator, int failed_run) {
  if (failed_run) return;
  bool finalize = false;
  if (communicator != nullptr && communicator->allreduce_max == &mpi_allreduce_max)
    finalize = static_cast<MpiState*>(communicator->user_data)->finalize_mpi;
  octet_mpi_communicator_destroy(communicator);
  if (finalize) MPI_Finalize();
}

OCTET_MPI_API const char* octet_mpi_last_error_message(void) { return g_message.c_str(); }

}  // extern "C"
