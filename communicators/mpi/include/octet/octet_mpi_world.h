/* liboctet_mpi without mpi.h: the calls a program needs when it loads
 * liboctet_mpi at run time (dlopen) and never includes mpi.h or links MPI
 * itself, as `octet demo --distributed` does (docs/distributed.md). The
 * communicator is over MPI_COMM_WORLD; octet_mpi.h includes this header.
 *
 *   octet_communicator comm;
 *   octet_mpi_communicator_init_world(&comm);     MPI_Init if not yet done
 *   octet_mpi_communicator_set_timeout(&comm, 30.0);
 *   octet_context_set_communicator(ctx, &comm);
 *   ...
 *   octet_mpi_communicator_finalize_world(&comm, failed);
 *
 * Timeouts: every entry of a communicator of this library waits for its
 * collective at most `timeout` seconds (default 300; the environment
 * variable OCTET_MPI_TIMEOUT_SECONDS, read at init, or
 * octet_mpi_communicator_set_timeout; 0 waits for ever). A collective that
 * has not completed by then (a process stopped taking part: it failed,
 * hangs or took another path) makes the entry return BACKEND_ERROR with a
 * message naming the MPI call, the collective and the timeout. The
 * collective stays in flight (MPI cannot cancel one): its buffers and the
 * communicator must not be used again; end the processes. */
#ifndef OCTET_MPI_WORLD_H
#define OCTET_MPI_WORLD_H

#include <octet/octet.h>
#include <stddef.h>

#if defined(_WIN32)
#define OCTET_MPI_API __declspec(dllexport)
#else
#define OCTET_MPI_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* octet_mpi_communicator_init(MPI_COMM_WORLD, communicator), after
 * MPI_Init_thread(MPI_THREAD_FUNNELED) if MPI is not initialised yet (then
 * finalize_world finalises it). INVALID_ARGUMENT if MPI was finalised or
 * OCTET_MPI_TIMEOUT_SECONDS is not a number >= 0; else as init. */
OCTET_MPI_API octet_status octet_mpi_communicator_init_world_sized(octet_communicator* communicator,
                                                                   size_t struct_size);
#define octet_mpi_communicator_init_world(communicator) \
  octet_mpi_communicator_init_world_sized((communicator), sizeof(*(communicator)))

/* The timeout of every collective of `communicator` (made by this
 * library), in seconds: finite and >= 0, 0 for none. INVALID_ARGUMENT
 * otherwise, or for a struct this library did not make. */
OCTET_MPI_API octet_status octet_mpi_communicator_set_timeout(octet_communicator* communicator, double seconds);

/* Ends what init_world began. failed = 0: destroys the communicator, then
 * MPI_Finalize if init_world initialised MPI. failed != 0 (a collective
 * failed or timed out, so one may still be in flight and other processes
 * may never reach MPI_Finalize): neither; the caller exits with an error
 * status and mpirun ends the job. */
OCTET_MPI_API void octet_mpi_communicator_finalize_world(octet_communicator* communicator, int failed);

/* The message of this thread's last failure of this library (init, or an
 * entry called by the core); "" if none. Valid until the next failure. */
OCTET_MPI_API const char* octet_mpi_last_error_message(void);

/* The types of these calls, for dlsym. */
typedef octet_status (*octet_mpi_communicator_init_world_sized_fn)(octet_communicator*, size_t);
typedef octet_status (*octet_mpi_communicator_set_timeout_fn)(octet_communicator*, double);
typedef void (*octet_mpi_communicator_finalize_world_fn)(octet_communicator*, int);
typedef const char* (*octet_mpi_last_error_message_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* OCTET_MPI_WORLD_H */
