// Linked into each cpu test program that ctest runs with a forced path
// (tests/cpu_backend/CMakeLists.txt): skips all of its tests when this CPU
// lacks the path forced, naming the ISA, or when the path forced is the
// CPU's default one (forced_path.hpp). The device strings come from the
// plugin's own table, opened here with dlopen; the default one from a
// child process without the forcing variables (the plugin reads them once).
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <octet/octet_backend.h>

#include <cstdlib>
#include <string>

#include "forced_path.hpp"

namespace cpu_test {
namespace {

std::string plugin_device() {
  void* handle = dlopen(OCTET_CPU_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return "";
  auto entry = reinterpret_cast<octet_backend_entry_fn>(dlsym(handle, OCTET_BACKEND_ENTRY_SYMBOL));
  const octet_backend_api* api = nullptr;
  std::string device;
  if (entry != nullptr && entry(OCTET_PLUGIN_ABI_MAJOR, OCTET_PLUGIN_ABI_MINOR, &api) == OCTET_STATUS_SUCCESS) {
    octet_host_services host{};
    host.struct_size = sizeof host;
    host.abi_major = OCTET_PLUGIN_ABI_MAJOR;
    host.abi_minor = OCTET_PLUGIN_ABI_MINOR;
    host.report_error = [](void*, int32_t, const char*) {};
    octet_backend_caps caps{};
    caps.struct_size = sizeof caps;
    if (api->initialize(&host, &caps) == OCTET_STATUS_SUCCESS && caps.device != nullptr) device = caps.device;
    if (api->shutdown) api->shutdown();
  }
  dlclose(handle);
  return device;
}

// plugin_device() as the CPU's defaults give it: in a child process (forked
// before this one loads the plugin or starts a thread), with the forcing
// variables removed; "" when that fails.
std::string default_plugin_device() {
  int fds[2];
  if (pipe(fds) != 0) return "";
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return "";
  }
  if (pid == 0) {
    close(fds[0]);
    for (const char* name : {"OCTET_CPU_ISA", "OCTET_CPU_FP8_GEMM", "OCTET_CPU_DISABLE_SIMD"}) unsetenv(name);
    const std::string device = plugin_device();
    const char* p = device.data();
    std::size_t left = device.size();
    while (left > 0) {
      const ssize_t n = write(fds[1], p, left);
      if (n <= 0) break;
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string device;
  char buffer[256];
  ssize_t n;
  while ((n = read(fds[0], buffer, sizeof buffer)) > 0) device.append(buffer, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? device : "";
}

const bool registered = (skip_all_when_forced_path_adds_nothing(plugin_device, default_plugin_device), true);

}  // namespace
}  // namespace cpu_test
