# Whether liboctet_nccl (communicators/nccl) is built.
#
# OCTET_WITH_NCCL takes ON, OFF or AUTO (the default), as the backends'
# choices do (OctetBackendChoices.cmake):
#   AUTO  build it when the cuda backend is built (OCTET_WITH_CUDA resolved
#         ON, so a CUDA toolkit was found) and NCCL's nccl.h and libnccl are
#         found, else skip it with a message naming what is missing;
#   ON    build it; anything missing fails the configure, naming it;
#   OFF   do not build it.
# NCCL is searched in NCCL_ROOT, then beside the CUDA toolkit, then the
# system paths. After this file OCTET_WITH_NCCL holds ON or OFF, and
# OCTET_NCCL_INCLUDE_DIR / OCTET_NCCL_LIBRARY name what was found.
include_guard(GLOBAL)

string(TOUPPER "${OCTET_WITH_NCCL}" octet_nccl_choice)
if(octet_nccl_choice MATCHES "^(OFF|FALSE|0|NO)$")
  message(STATUS "Octet communicator nccl: skipped (OCTET_WITH_NCCL=OFF)")
  set(OCTET_WITH_NCCL OFF)
  return()
endif()

set(octet_nccl_found FALSE)
if(NOT OCTET_WITH_CUDA OR NOT TARGET CUDA::cudart)
  set(octet_nccl_why "it needs the CUDA toolkit (the cuda backend: -DOCTET_WITH_CUDA=ON or AUTO with "
                     "-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc)")
  string(CONCAT octet_nccl_why ${octet_nccl_why})
else()
  set(octet_nccl_hints ${NCCL_ROOT} $ENV{NCCL_ROOT} ${CUDAToolkit_LIBRARY_ROOT} ${CUDAToolkit_TARGET_DIR})
  find_path(OCTET_NCCL_INCLUDE_DIR nccl.h HINTS ${octet_nccl_hints} ${CUDAToolkit_INCLUDE_DIRS}
            PATH_SUFFIXES include)
  find_library(OCTET_NCCL_LIBRARY nccl HINTS ${octet_nccl_hints} ${CUDAToolkit_LIBRARY_DIR}
               PATH_SUFFIXES lib64 lib)
  if(OCTET_NCCL_INCLUDE_DIR AND OCTET_NCCL_LIBRARY)
    set(octet_nccl_found TRUE)
  else()
    set(octet_nccl_why "NCCL not found (nccl.h: ${OCTET_NCCL_INCLUDE_DIR}, libnccl: ${OCTET_NCCL_LIBRARY}; "
                       "install NCCL, e.g. Debian's libnccl-dev, or pass -DNCCL_ROOT=<install>)")
    string(CONCAT octet_nccl_why ${octet_nccl_why})
  endif()
endif()

if(octet_nccl_found)
  message(STATUS "Octet communicator nccl: built (${OCTET_NCCL_LIBRARY})")
  set(OCTET_WITH_NCCL ON)
elseif(octet_nccl_choice STREQUAL "AUTO")
  message(STATUS "Octet communicator nccl: skipped: ${octet_nccl_why}")
  set(OCTET_WITH_NCCL OFF)
else()
  message(FATAL_ERROR "OCTET_WITH_NCCL=${OCTET_WITH_NCCL} but liboctet_nccl cannot be built: ${octet_nccl_why} "
                      "(or configure with -DOCTET_WITH_NCCL=AUTO to skip it)")
endif()
