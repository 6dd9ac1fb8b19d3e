/* A user's program, built against an installed Octet: prints the library
 * version, creates a reference context, and optionally loads a plugin given
 * on the command line (or only names a backend that discovery must find)
 * and creates a context on it. Exit status 0 = success. */
#include <stdio.h>

#include <octet/octet.h>

static int failed(const char* what, octet_status status) {
  fprintf(stderr, "consumer: %s failed: %s: %s\n", what, octet_status_name(status),
          octet_last_error_message());
  return 1;
}

static int use_backend(const char* name) {
  octet_context_options options = {0};
  octet_context* context = NULL;
  octet_backend_info info = {0};
  octet_status status;
  options.struct_size = sizeof options;
  options.backend = name;
  status = octet_context_create(&options, &context);
  if (status != OCTET_STATUS_SUCCESS) return failed("octet_context_create", status);
  info.struct_size = sizeof info;
  status = octet_context_get_info(context, &info);
  if (status == OCTET_STATUS_SUCCESS) printf("context on %s: %s\n", info.name, info.device);
  octet_context_destroy(context);
  return status == OCTET_STATUS_SUCCESS ? 0 : failed("octet_context_get_info", status);
}

int main(int argc, char** argv) {
  const octet_version version = octet_library_version();
  printf("octet %u.%u.%u\n", (unsigned)version.major, (unsigned)version.minor,
         (unsigned)version.patch);
  if (use_backend("reference") != 0) return 1;
  if (argc == 2) {
    /* argv[1]: a backend that discovery alone must find. */
    if (use_backend(argv[1]) != 0) return 1;
  } else if (argc > 2) {
    /* argv[1]: a plugin file; argv[2]: the backend name it should register. */
    const octet_status status = octet_backend_load(argv[1]);
    if (status != OCTET_STATUS_SUCCESS) return failed("octet_backend_load", status);
    if (use_backend(argv[2]) != 0) return 1;
  }
  return 0;
}
