// liboctet_nccl's MPI bootstrap (octet/octet_nccl_mpi.h): rank 0's NCCL
// unique id broadcast over MPI.
#include <octet/octet_nccl_mpi.h>

#include <cstring>
#include <string>

#include "nccl_errors.hpp"

using octet_nccl::failed;

extern "C" OCTET_NCCL_API octet_status octet_nccl_communicator_init_mpi_sized(MPI_Comm comm, int device,
                                                                              octet_communicator* communicator,
                                                                              size_t struct_size) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    return failed(OCTET_STATUS_INVALID_ARGUMENT,
                  "octet_nccl: MPI is not initialised (call MPI_Init first) or was finalised");
  if (comm == MPI_COMM_NULL)
    return failed(OCTET_STATUS_INVALID_ARGUMENT, "octet_nccl: argument 'comm' is MPI_COMM_NULL");
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // The id, then one byte saying whether rank 0 made it: every rank learns
  // of a failure from the same broadcast and none waits in NCCL's init.
  unsigned char message[sizeof(octet_nccl_unique_id) + 1] = {};
  std::string made_error;
  if (rank == 0) {
    octet_nccl_unique_id id;
    const octet_status st = octet_nccl_get_unique_id(&id);
    if (st == OCTET_STATUS_SUCCESS) {
      std::memcpy(message, id.internal, sizeof id.internal);
      message[sizeof id.internal] = 1;
    } else {
      made_error = octet_nccl_last_error_message();
    }
  }
  const int rc = MPI_Bcast(message, int(sizeof message), MPI_BYTE, 0, comm);
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING] = {};
    int length = 0;
    MPI_Error_string(rc, text, &length);
    return failed(OCTET_STATUS_BACKEND_ERROR, std::string("octet_nccl: init_mpi: MPI_Bcast failed: ") + text);
  }
  if (message[sizeof(octet_nccl_unique_id)] != 1)
    return failed(OCTET_STATUS_BACKEND_ERROR, "octet_nccl: init_mpi: rank 0 could not make the NCCL unique id" +
                                                  (made_error.empty() ? std::string() : ": " + made_error));
  octet_nccl_unique_id id;
  std::memcpy(id.internal, message, sizeof id.internal);
  return octet_nccl_communicator_init_sized(&id, rank, size, device, communicator, struct_size);
}
