// `octet audit`: hands over to `python3 -m octet.audit` (api/python/octet/audit),
// with the same arguments; the Python command's exit status is ours.
#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <octet/octet.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "commands.hpp"

namespace octet_cli {
namespace {

// Imports octet.audit's entry point, or says what is missing (exit 1).
constexpr const char* kBootstrap =
    "import sys\n"
    "try:\n"
    "    from octet.audit.main import main\n"
    "except ImportError as e:\n"
    "    sys.exit('octet audit: the Python package octet.audit is not importable (' + str(e) + '): install '\n"
    "             'Octet\\'s Python package (pip install <octet checkout>) or set PYTHONPATH to <octet>/api/python')\n"
    "sys.exit(main(sys.argv[1:]))\n";

bool is_directory(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The Python package loads the liboctet this binary runs on.
void export_library_path() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&octet_library_version), &info) == 0 || info.dli_fname == nullptr) return;
  char resolved[PATH_MAX];
  if (realpath(info.dli_fname, resolved) != nullptr) setenv("OCTET_LIBRARY", resolved, 0);
}

// From a build tree, the package is the checkout's api/python.
void export_source_package() {
#ifdef OCTET_PYTHON_SOURCE_DIR
  const std::string dir = OCTET_PYTHON_SOURCE_DIR;
  if (std::getenv("OCTET_AUDIT_NO_SOURCE_PATH") != nullptr || !is_directory(dir + "/octet/audit")) return;
  const char* old = std::getenv("PYTHONPATH");
  const std::string path = old != nullptr && *old != '\0' ? dir + ":" + old : dir;
  setenv("PYTHONPATH", path.c_str(), 1);
#endif
}

}  // namespace

int run_audit(const std::vector<std::string>& args) {
  export_library_path();
  export_source_package();
  const char* env_python = std::getenv("OCTET_PYTHON");
  const std::string python = env_python != nullptr && *env_python != '\0' ? env_python : "python3";
  std::vector<std::string> words = {python, "-c", kBootstrap};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  execvp(python.c_str(), argv.data());
  std::fprintf(stderr,
               "octet audit: cannot run %s (%s): the audit is the Python command python3 -m octet.audit; install "
               "Python 3 with numpy, or set OCTET_PYTHON to the interpreter\n",
               python.c_str(), std::strerror(errno));
  return kExitFailure;
}

}  // namespace octet_cli
