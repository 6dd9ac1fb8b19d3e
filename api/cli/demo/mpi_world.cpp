#include "demo/mpi_world.hpp"

#include <dlfcn.h>

#include <filesystem>
#include <string>

namespace octet_cli {
namespace demo {

namespace {

// liboctet_mpi beside the liboctet this program runs with ("" if unknown).
std::string beside_liboctet() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&octet_library_version), &info) == 0 || info.dli_fname == nullptr) return "";
  return (std::filesystem::path(info.dli_fname).parent_path() / "liboctet_mpi.so.1").string();
}

}  // namespace

bool MpiWorld::open(std::string* error) {
  const std::string beside = beside_liboctet();
  std::string tried;
  // RTLD_GLOBAL: Open MPI's own plugins resolve MPI symbols from libmpi.
  if (!beside.empty() && std::filesystem::exists(beside)) {
    handle_ = dlopen(beside.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (handle_ == nullptr) tried = beside + ": " + dlerror();
  }
  if (handle_ == nullptr) {
    handle_ = dlopen("liboctet_mpi.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (handle_ == nullptr) tried += (tried.empty() ? "" : "; ") + std::string(dlerror());
  }
  if (handle_ == nullptr) {
    *error = "--distributed needs liboctet_mpi, which was not found (" + tried +
             "): build Octet with -DOCTET_WITH_MPI=ON where MPI is installed (Debian: libopenmpi-dev openmpi-bin) and "
             "run under mpirun";
    return false;
  }
  init_ = reinterpret_cast<octet_mpi_communicator_init_world_sized_fn>(
      dlsym(handle_, "octet_mpi_communicator_init_world_sized"));
  set_timeout_ =
      reinterpret_cast<octet_mpi_communicator_set_timeout_fn>(dlsym(handle_, "octet_mpi_communicator_set_timeout"));
  finalize_ = reinterpret_cast<octet_mpi_communicator_finalize_world_fn>(
      dlsym(handle_, "octet_mpi_communicator_finalize_world"));
  last_error_ = reinterpret_cast<octet_mpi_last_error_message_fn>(dlsym(handle_, "octet_mpi_last_error_message"));
  if (!init_ || !set_timeout_ || !finalize_ || !last_error_) {
    *error =
        "the liboctet_mpi found lacks octet_mpi_communicator_init_world_sized and the other calls of "
        "octet_mpi_world.h: it is older than this octet";
    return false;
  }
  if (init_(&comm_, sizeof comm_) != OCTET_STATUS_SUCCESS) {
    *error = "liboctet_mpi could not set up MPI: " + last_error();
    return false;
  }
  initialised_ = true;
  return true;
}

void MpiWorld::close(bool failed) {
  if (initialised_) finalize_(&comm_, failed ? 1 : 0);
  initialised_ = false;
  // The library stays loaded: MPI cannot be loaded twice in a process.
}

bool MpiWorld::set_timeout(double seconds, std::string* error) {
  if (set_timeout_(&comm_, seconds) == OCTET_STATUS_SUCCESS) return true;
  *error = last_error();
  return false;
}

std::string MpiWorld::last_error() const { return last_error_ ? last_error_() : ""; }

}  // namespace demo
}  // namespace octet_cli
