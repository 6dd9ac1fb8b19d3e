/* Octet's MPI communicator: an octet_communicator (octet.h, users' ABI 1.7)
 * whose collectives are MPI non-blocking collectives on a duplicate of the
 * caller's MPI communicator (docs/distributed.md).
 *
 * Library liboctet_mpi, built when MPI is found (-DOCTET_WITH_MPI=ON);
 * CMake: find_package(Octet CONFIG COMPONENTS mpi), target Octet::octet_mpi.
 *
 *   octet_communicator comm;
 *   octet_mpi_communicator_init(MPI_COMM_WORLD, &comm);   after MPI_Init
 *   octet_context_set_communicator(ctx, &comm);
 *   ...
 *   octet_context_set_communicator(ctx, NULL);             or destroy ctx
 *   octet_mpi_communicator_destroy(&comm);                 before MPI_Finalize
 *
 * The entries: allreduce_max = MPI_Iallreduce(MPI_IN_PLACE, MAX) on host
 * floats; allreduce = MPI_Iallreduce; allgather = MPI_Iallgather;
 * reduce_scatter = MPI_Ireduce_scatter_block; wait = MPI_Test until done
 * or the timeout. FP32 is
 * MPI_FLOAT with MPI_SUM / MPI_MAX; BF16 and FP16 reduce with MPI_Ops of
 * this library (each pair of elements decoded to FP32, combined, rounded
 * back to nearest even); gathers move any dtype as bytes. memory_kinds is
 * OCTET_COMM_HOST_MEMORY; with a CUDA-aware MPI the caller may add
 * OCTET_COMM_DEVICE_MEMORY. Counts above INT_MAX elements are
 * INVALID_ARGUMENT (MPI 3.1 counts are int). A failing MPI call returns
 * BACKEND_ERROR, and octet_mpi_last_error_message() says which call and
 * MPI's error string. The duplicate communicator returns MPI errors
 * (MPI_ERRORS_RETURN) instead of aborting. Every entry gives up after the
 * communicator's timeout (octet_mpi_world.h) with BACKEND_ERROR. */
#ifndef OCTET_MPI_H
#define OCTET_MPI_H

#include <mpi.h>
#include <octet/octet.h>
#include <octet/octet_mpi_world.h> /* MPI_COMM_WORLD without mpi.h, timeouts */
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Fills *communicator (min(struct_size, the library's size) bytes, with
 * struct_size set to that) for `comm`, which it duplicates: rank and size
 * are the caller's in comm. INVALID_ARGUMENT for a NULL communicator, a
 * struct_size too small for the 1.7 fields, MPI_COMM_NULL or MPI not
 * initialised; BACKEND_ERROR if MPI fails. Call the macro, which passes
 * sizeof(*communicator). */
OCTET_MPI_API octet_status octet_mpi_communicator_init_sized(MPI_Comm comm, octet_communicator* communicator,
                                                             size_t struct_size);
#define octet_mpi_communicator_init(comm, communicator) \
  octet_mpi_communicator_init_sized((comm), (communicator), sizeof(*(communicator)))

/* Frees what init made (the duplicate communicator, the MPI_Ops) and zeroes
 * the struct's entries. Call it once no context uses the communicator and no
 * collective is in flight, before MPI_Finalize. NULL, or a struct not made
 * by init, does nothing. */
OCTET_MPI_API void octet_mpi_communicator_destroy(octet_communicator* communicator);

#ifdef __cplusplus
}
#endif

#endif /* OCTET_MPI_H */
