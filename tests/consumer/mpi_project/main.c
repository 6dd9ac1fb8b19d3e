/* Builds against the installed octet/octet_mpi.h and liboctet_mpi, makes a
 * communicator over MPI_COMM_WORLD (one process) and all-gathers a tensor
 * through it: the gathered tensor is the input (size 1). */
#include <octet/octet_mpi.h>
#include <stdio.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  octet_communicator comm;
  int failed = octet_mpi_communicator_init(MPI_COMM_WORLD, &comm) != OCTET_STATUS_SUCCESS;
  octet_context* ctx = NULL;
  octet_tensor *in = NULL, *out = NULL;
  float x[4] = {1.0f, -2.0f, 3.5f, 0.25f}, y[4] = {0};
  octet_tensor_desc d = {0};
  d.struct_size = sizeof d;
  d.dtype = OCTET_DTYPE_FP32;
  d.ndim = 2;
  d.shape[0] = 2;
  d.shape[1] = 2;
  failed = failed || octet_context_create(NULL, &ctx) != OCTET_STATUS_SUCCESS ||
           octet_context_set_communicator(ctx, &comm) != OCTET_STATUS_SUCCESS ||
           octet_tensor_create(ctx, &d, &in) != OCTET_STATUS_SUCCESS ||
           octet_tensor_create(ctx, &d, &out) != OCTET_STATUS_SUCCESS ||
           octet_tensor_copy_from_host(in, OCTET_COMPONENT_DATA, x, sizeof x) != OCTET_STATUS_SUCCESS ||
           octet_allgather(ctx, in, out) != OCTET_STATUS_SUCCESS ||
           octet_tensor_copy_to_host(out, OCTET_COMPONENT_DATA, y, sizeof y) != OCTET_STATUS_SUCCESS;
  for (int i = 0; i < 4 && !failed; ++i) failed = y[i] != x[i];
  if (failed)
    fprintf(stderr, "octet_mpi consumer failed: %s / %s\n", octet_last_error_message(), octet_mpi_last_error_message());
  printf("octet_mpi consumer: %s over %d process\n", failed ? "FAILED" : "gathered", comm.size);
  octet_tensor_destroy(in);
  octet_tensor_destroy(out);
  octet_context_destroy(ctx);
  octet_mpi_communicator_destroy(&comm);
  MPI_Finalize();
  return failed;
}
