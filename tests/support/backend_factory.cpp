#include "backend_factory.hpp"

#include <dlfcn.h>

#include <mutex>

namespace octet::test {

octet_backend_entry_fn open_plugin_entry(const std::string& path, std::string* error) {
  // One handle per process: the plugins keep process-wide state (OpenMP
  // teams, a Kokkos runtime started once), as they do in the core.
  static std::mutex mutex;
  static std::map<std::string, octet_backend_entry_fn> opened;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = opened.find(path);
  if (it != opened.end()) return it->second;
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    *error = "cannot open " + path + ": " + dlerror();
    return nullptr;
  }
  auto entry = reinterpret_cast<octet_backend_entry_fn>(dlsym(handle, OCTET_BACKEND_ENTRY_SYMBOL));
  if (entry == nullptr) {
    *error = path + " has no " + OCTET_BACKEND_ENTRY_SYMBOL;
    return nullptr;
  }
  opened[path] = entry;
  return entry;
}

BackendFactory plugin_backend(std::string name, std::string path) {
  BackendFactory factory;
  factory.name = std::move(name);
  factory.entry = [path](std::string*) -> octet_backend_entry_fn {
    std::string error;
    const octet_backend_entry_fn entry = open_plugin_entry(path, &error);
    if (entry == nullptr) ADD_FAILURE() << error;
    return entry;
  };
  return factory;
}

BackendFactory unbuilt_backend(std::string name, std::string why) {
  BackendFactory factory;
  factory.name = std::move(name);
  factory.entry = [why](std::string* unavailable) -> octet_backend_entry_fn {
    *unavailable = why;
    return nullptr;
  };
  return factory;
}

std::string backend_param_name(const ::testing::TestParamInfo<BackendFactory>& info) { return info.param.name; }

}  // namespace octet::test
