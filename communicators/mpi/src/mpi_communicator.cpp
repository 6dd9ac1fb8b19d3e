// liboctet_mpi: an octet_communicator over MPI non-blocking collectives
// (octet/octet_mpi.h states the contract).
#include <octet/octet_mpi.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>

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

struct MpiState {
  MPI_Comm comm = MPI_COMM_NULL;  // the duplicate
  MPI_Op bf16_sum = MPI_OP_NULL, bf16_max = MPI_OP_NULL, fp16_sum = MPI_OP_NULL, fp16_max = MPI_OP_NULL;
};

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
int gathered_bytes(int32_t dtype) {
  switch (dtype) {
    case OCTET_DTYPE_FP32:
      return 4;
    case OCTET_DTYPE_BF16:
    case OCTET_DTYPE_FP16:
      return 2;
    case OCTET_DTYPE_E4M3:
    case OCTET_DTYPE_E5M2:
    case OCTET_DTYPE_E8M0:
      return 1;
    default:
      return 0;
  }
}

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
octet_status started(int rc, MPI_Request* request, void** out, const char* call) {
  if (rc != MPI_SUCCESS) {
    delete request;
    return mpi_failed(rc, call);
  }
  *out = request;
  return OCTET_STATUS_SUCCESS;
}

extern "C" octet_status mpi_allreduce_max(float* values, size_t count, void* user_data) {
  auto* s = static_cast<MpiState*>(user_data);
  if (octet_status st = check_count(count, "allreduce_max")) return st;
  const int rc = MPI_Allreduce(MPI_IN_PLACE, values, int(count), MPI_FLOAT, MPI_MAX, s->comm);
  return rc == MPI_SUCCESS ? OCTET_STATUS_SUCCESS : mpi_failed(rc, "MPI_Allreduce");
}

extern "C" octet_status mpi_allreduce(const void* send, void* recv, size_t count, int32_t dtype, int32_t op,
                                      void** request, void* user_data) {
  auto* s = static_cast<MpiState*>(user_data);
  if (octet_status st = check_count(count, "allreduce")) return st;
  MPI_Datatype type;
  MPI_Op mpi_op;
  if (!reduction(*s, dtype, op, &type, &mpi_op)) return bad_reduction("allreduce", dtype, op);
  auto* r = new (std::nothrow) MPI_Request;
  if (r == nullptr) return failed(OCTET_STATUS_OUT_OF_MEMORY, "octet_mpi: allreduce: no memory for a request");
  const void* source = send == recv ? MPI_IN_PLACE : send;
  return started(MPI_Iallreduce(source, recv, int(count), type, mpi_op, s->comm, r), r, request, "MPI_Iallreduce");
}

extern "C" octet_status mpi_allgather(const void* send, void* recv, size_t send_count, int32_t dtype, void** request,
                                      void* user_data) {
  auto* s = static_cast<MpiState*>(user_data);
  const int bytes = gathered_bytes(dtype);
  if (bytes == 0)
    return failed(OCTET_STATUS_INVALID_ARGUMENT,
                  std::string("octet_mpi: allgather: unknown dtype ") + std::to_string(dtype));
  if (send_count > size_t(INT_MAX) / size_t(bytes)) return check_count(size_t(INT_MAX) + 1, "allgather");
  auto* r = new (std::nothrow) MPI_Request;
  if (r == nullptr) return failed(OCTET_STATUS_OUT_OF_MEMORY, "octet_mpi: allgather: no memory for a request");
  const int n = int(send_count) * bytes;
  return started(MPI_Iallgather(send, n, MPI_BYTE, recv, n, MPI_BYTE, s->comm, r), r, request, "MPI_Iallgather");
}

extern "C" octet_status mpi_reduce_scatter(const void* send, void* recv, size_t recv_count, int32_t dtype, int32_t op,
                                           void** request, void* user_data) {
  auto* s = static_cast<MpiState*>(user_data);
  if (octet_status st = check_count(recv_count, "reduce_scatter")) return st;
  MPI_Datatype type;
  MPI_Op mpi_op;
  if (!reduction(*s, dtype, op, &type, &mpi_op)) return bad_reduction("reduce_scatter", dtype, op);
  auto* r = new (std::nothrow) MPI_Request;
  if (r == nullptr) return failed(OCTET_STATUS_OUT_OF_MEMORY, "octet_mpi: reduce_scatter: no memory for a request");
  return started(MPI_Ireduce_scatter_block(send, recv, int(recv_count), type, mpi_op, s->comm, r), r, request,
                 "MPI_Ireduce_scatter_block");
}

extern "C" octet_status mpi_wait(void* request, void*) {
  auto* r = static_cast<MPI_Request*>(request);
  if (r == nullptr) return failed(OCTET_STATUS_INVALID_ARGUMENT, "octet_mpi: wait: the request is NULL");
  const int rc = MPI_Wait(r, MPI_STATUS_IGNORE);
  delete r;
  return rc == MPI_SUCCESS ? OCTET_STATUS_SUCCESS : mpi_failed(rc, "MPI_Wait");
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
  auto* s = new (std::nothrow) MpiState;
  if (s == nullptr) return failed(OCTET_STATUS_OUT_OF_MEMORY, "octet_mpi: no memory for the communicator's state");
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

OCTET_MPI_API const char* octet_mpi_last_error_message(void) { return g_message.c_str(); }

}  // extern "C"
