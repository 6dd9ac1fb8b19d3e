// liboctet_nccl on N ranks under mpiexec (one node, rank r on CUDA device
// r), bootstrapped by octet_nccl_communicator_init_mpi: every entry against
// the host's own computation over all ranks (nccl_collectives.hpp). With
// fewer CUDA devices than ranks (none on CI), every rank exits 77, which
// ctest reports as skipped, after rank 0 prints why.
#include <cuda_runtime.h>
#include <mpi.h>
#include <octet/octet_nccl_mpi.h>

#include <cstdio>
#include <string>
#include <vector>

#include "nccl_collectives.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) count = 0;
  int fewest = 0;
  MPI_Allreduce(&count, &fewest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (fewest < size) {
    if (rank == 0)
      std::printf("SKIPPED: %d ranks need %d CUDA devices; found %d (%s)\n", size, size, fewest,
                  e != cudaSuccess ? (std::string("cudaGetDeviceCount failed: ") + cudaGetErrorString(e)).c_str()
                                   : "cudaGetDeviceCount");
    MPI_Finalize();
    return 77;
  }
  octet_communicator comm{};
  int failures = 0;
  if (octet_nccl_communicator_init_mpi(MPI_COMM_WORLD, rank, &comm) != OCTET_STATUS_SUCCESS) {
    std::fprintf(stderr, "[rank %d] init_mpi: %s\n", rank, octet_nccl_last_error_message());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  octet_nccl_communicator_set_timeout(&comm, 60.0);
  if (comm.rank != rank || comm.size != size) {
    std::fprintf(stderr, "[rank %d] rank/size %d/%d, expected %d/%d\n", rank, comm.rank, comm.size, rank, size);
    ++failures;
  }
  std::vector<std::string> lines;
  nccl_test::run_collectives(comm, rank, size, &lines);
  for (const std::string& line : lines) std::fprintf(stderr, "%s\n", line.c_str());
  failures += int(lines.size());
  octet_nccl_communicator_destroy(&comm);
  int total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%s: %d failures on %d ranks\n", total == 0 ? "PASSED" : "FAILED", total, size);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
