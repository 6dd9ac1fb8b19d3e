/* liboctet_nccl's MPI bootstrap, in the library when it was built with MPI
 * (-DOCTET_WITH_MPI=ON and an MPI C library found; CMake: the variable
 * OCTET_NCCL_WITH_MPI of the package, and the compile definition
 * OCTET_NCCL_HAS_MPI=1 on Octet::octet_nccl). */
#ifndef OCTET_NCCL_MPI_H
#define OCTET_NCCL_MPI_H

#include <mpi.h>
#include <octet/octet_nccl.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every process of `comm` calls it: rank 0 makes the NCCL unique id
 * (octet_nccl_get_unique_id), MPI_Bcast gives it to all, and each calls
 * octet_nccl_communicator_init with its rank and size in comm and `device`.
 * INVALID_ARGUMENT for MPI not initialised or comm MPI_COMM_NULL, and as
 * init; BACKEND_ERROR if MPI fails. If rank 0 cannot make the id, every
 * rank returns BACKEND_ERROR (the id's broadcast carries the failure). */
OCTET_NCCL_API octet_status octet_nccl_communicator_init_mpi_sized(MPI_Comm comm, int device,
                                                                   octet_communicator* communicator,
                                                                   size_t struct_size);
#define octet_nccl_communicator_init_mpi(comm, device, communicator) \
  octet_nccl_communicator_init_mpi_sized((comm), (device), (communicator), sizeof(*(communicator)))

#ifdef __cplusplus
}
#endif

#endif /* OCTET_NCCL_MPI_H */
