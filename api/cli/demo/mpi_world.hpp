// `octet demo --distributed` reaches MPI only through liboctet_mpi, loaded at
// run time (dlopen): neither liboctet nor the `octet` command links MPI, and
// a build without MPI answers with a clear error instead of lacking the
// option. The declarations are octet_mpi_world.h's (no mpi.h).
#pragma once

#include <octet/octet.h>
#include <octet/octet_mpi_world.h>

#include <string>

namespace octet_cli {
namespace demo {

// MPI_COMM_WORLD as an octet_communicator, from liboctet_mpi beside liboctet
// (the build tree's lib/, or the installed libdir), else wherever the
// dynamic loader finds liboctet_mpi.so.1.
class MpiWorld {
 public:
  // Loads the library and initialises MPI; false with *error set if either
  // fails (the library's path and dlerror, or liboctet_mpi's message).
  bool open(std::string* error);
  // A failed run skips MPI_Finalize (a collective may be in flight).
  void close(bool failed);
  ~MpiWorld() { close(true); }

  octet_communicator* communicator() { return &comm_; }
  int rank() const { return comm_.rank; }
  int size() const { return comm_.size; }
  bool set_timeout(double seconds, std::string* error);
  // liboctet_mpi's last message ("" if none).
  std::string last_error() const;

 private:
  void* handle_ = nullptr;
  bool initialised_ = false;
  octet_communicator comm_{};
  octet_mpi_communicator_init_world_sized_fn init_ = nullptr;
  octet_mpi_communicator_set_timeout_fn set_timeout_ = nullptr;
  octet_mpi_communicator_finalize_world_fn finalize_ = nullptr;
  octet_mpi_last_error_message_fn last_error_ = nullptr;
};

}  // namespace demo
}  // namespace octet_cli
