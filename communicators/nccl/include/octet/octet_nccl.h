/* Octet's NCCL communicator: an octet_communicator (octet.h, users' ABI 1.7)
 * whose collectives are NCCL collectives on a CUDA stream of its own, on
 * device memory (docs/distributed.md, "NCCL: liboctet_nccl").
 *
 * Library liboctet_nccl, built when CUDA and NCCL are found
 * (-DOCTET_WITH_NCCL=AUTO, the default, or ON); CMake:
 * find_package(Octet CONFIG COMPONENTS nccl), target Octet::octet_nccl.
 * This header needs neither nccl.h nor the CUDA headers.
 *
 *   octet_nccl_unique_id id;
 *   octet_nccl_get_unique_id(&id);        on rank 0, then send id to every rank
 *   octet_communicator comm;
 *   octet_nccl_communicator_init(&id, rank, size, device, &comm);
 *   octet_context_set_communicator(ctx, &comm);   ctx on the cuda backend
 *   ...
 *   octet_context_set_communicator(ctx, NULL);    or destroy ctx
 *   octet_nccl_communicator_destroy(&comm);
 *
 * With MPI, octet_nccl_mpi.h's octet_nccl_communicator_init_mpi does the
 * first three steps over an MPI communicator.
 *
 * The entries: allreduce_max = host floats copied to a device buffer,
 * ncclAllReduce(ncclMax), copied back, waited for; allreduce =
 * ncclAllReduce (in place when send == recv); allgather = ncclAllGather of
 * bytes (any dtype); reduce_scatter = ncclReduceScatter; each records a CUDA
 * event as its request, and wait = cudaEventQuery until done, a NCCL error
 * (ncclCommGetAsyncError) or the timeout. Reductions: FP32, BF16, FP16 with
 * SUM or MAX. memory_kinds is OCTET_COMM_DEVICE_MEMORY: send and recv must
 * be device (or managed) memory of the communicator's device, checked with
 * cudaPointerGetAttributes (INVALID_ARGUMENT naming the argument).
 *
 * Failures: a bad argument is INVALID_ARGUMENT, a failing CUDA or NCCL call
 * BACKEND_ERROR; octet_nccl_last_error_message() names the entry, the
 * argument or call and the CUDA or NCCL error text.
 *
 * Timeouts (the rule of liboctet_mpi): the NCCL communicator is
 * non-blocking; every entry waits for its collective at most `timeout`
 * seconds (default 300; the environment variable
 * OCTET_NCCL_TIMEOUT_SECONDS, read at init, or
 * octet_nccl_communicator_set_timeout; 0 waits for ever). Past it the
 * communicator is aborted (ncclCommAbort), the entry returns BACKEND_ERROR
 * naming the entry, the NCCL call, the bytes and the timeout, and every
 * later entry returns BACKEND_ERROR: destroy the communicator and end the
 * processes. init waits for the other ranks under the same timeout. */
#ifndef OCTET_NCCL_H
#define OCTET_NCCL_H

#include <octet/octet.h>
#include <stddef.h>

#if defined(_WIN32)
#define OCTET_NCCL_API __declspec(dllexport)
#else
#define OCTET_NCCL_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* NCCL's ncclUniqueId (NCCL_UNIQUE_ID_BYTES = 128 bytes): made once, by one
 * process, and given to every rank before init. */
typedef struct octet_nccl_unique_id {
  char internal[128];
} octet_nccl_unique_id;

/* ncclGetUniqueId. INVALID_ARGUMENT for a NULL id; BACKEND_ERROR if NCCL
 * fails (its error text in the message). */
OCTET_NCCL_API octet_status octet_nccl_get_unique_id(octet_nccl_unique_id* id);

/* Fills *communicator (min(struct_size, the library's size) bytes, with
 * struct_size set to that) for rank `rank` of `size` ranks sharing `id`,
 * on CUDA device `device` (every rank its own device). Checked before any
 * CUDA call: communicator and id not NULL, struct_size holds the 1.7
 * fields, size >= 1, 0 <= rank < size, device >= 0, and
 * OCTET_NCCL_TIMEOUT_SECONDS (if set) a number >= 0: else
 * INVALID_ARGUMENT naming the argument. Then: no CUDA device (the CUDA
 * error text, or "no CUDA device") is BACKEND_ERROR; device >= the number
 * of devices INVALID_ARGUMENT; a failing CUDA or NCCL call, or other ranks
 * not joining within the timeout, BACKEND_ERROR. Call the macro, which
 * passes sizeof(*communicator). */
OCTET_NCCL_API octet_status octet_nccl_communicator_init_sized(const octet_nccl_unique_id* id, int rank, int size,
                                                               int device, octet_communicator* communicator,
                                                               size_t struct_size);
#define octet_nccl_communicator_init(id, rank, size, device, communicator) \
  octet_nccl_communicator_init_sized((id), (rank), (size), (device), (communicator), sizeof(*(communicator)))

/* The timeout of every collective of `communicator` (made by this
 * library), in seconds: finite and >= 0, 0 for none. INVALID_ARGUMENT
 * otherwise, or for a struct this library did not make. */
OCTET_NCCL_API octet_status octet_nccl_communicator_set_timeout(octet_communicator* communicator, double seconds);

/* Frees what init made (the NCCL communicator, the stream, the device
 * buffer) and zeroes the struct's entries. Call it once no context uses the
 * communicator; a collective still in flight (after a timeout or error) is
 * aborted. NULL, or a struct not made by init, does nothing. */
OCTET_NCCL_API void octet_nccl_communicator_destroy(octet_communicator* communicator);

/* The message of this thread's last failure of this library (init, or an
 * entry called by the core); "" if none. Valid until the next failure. */
OCTET_NCCL_API const char* octet_nccl_last_error_message(void);

#ifdef __cplusplus
}
#endif

#endif /* OCTET_NCCL_H */
