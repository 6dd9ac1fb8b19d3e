# Which first-party backends this configure builds.
#
# Each of OCTET_WITH_ONEDNN (the cpu backend), OCTET_WITH_KOKKOS,
# OCTET_WITH_CUDA and OCTET_WITH_OPENCL (the plugins/opencl example) takes ON, OFF or AUTO (the default):
#   AUTO  build the backend when its dependencies are found, else skip it
#         with a message naming what to install; never a failed configure;
#   ON    build it; a missing dependency fails the configure, naming it;
#   OFF   do not build it.
# After this file the variable holds ON or OFF, and one status line per
# backend says "built" or "skipped" and why.
include_guard(GLOBAL)

# octet_backend_choice(<VAR> <backend> <found> <built-detail> <missing-detail>)
# Resolves <VAR> (ON/OFF/AUTO) given whether the dependencies were <found>,
# and prints the backend's line.
function(octet_backend_choice var backend found built_detail missing_detail)
  string(TOUPPER "${${var}}" choice)
  if(choice STREQUAL "OFF" OR choice STREQUAL "FALSE" OR choice STREQUAL "0" OR choice STREQUAL "NO")
    message(STATUS "Octet backend ${backend}: skipped (${var}=OFF)")
    set(${var} OFF PARENT_SCOPE)
  elseif(found)
    message(STATUS "Octet backend ${backend}: built (${built_detail})")
    set(${var} ON PARENT_SCOPE)
  elseif(choice STREQUAL "AUTO")
    message(STATUS "Octet backend ${backend}: skipped: ${missing_detail}")
    set(${var} OFF PARENT_SCOPE)
  else()
    message(FATAL_ERROR "${var}=${${var}} but the ${backend} backend cannot be built: "
                        "${missing_detail} (or configure with -D${var}=AUTO to skip it)")
  endif()
endfunction()

# Should <VAR> be probed at all? (OFF: no find_package, so nothing is required.)
function(octet_backend_wanted var out)
  string(TOUPPER "${${var}}" choice)
  if(choice STREQUAL "OFF" OR choice STREQUAL "FALSE" OR choice STREQUAL "0" OR choice STREQUAL "NO")
    set(${out} FALSE PARENT_SCOPE)
  else()
    set(${out} TRUE PARENT_SCOPE)
  endif()
endfunction()

message(STATUS "Octet backend reference: built (embedded in liboctet, always)")

# cpu: oneDNN (Debian: libdnnl-dev; its CMake package needs OpenCL's,
# Debian: ocl-icd-opencl-dev) and OpenMP (libgomp comes with g++).
octet_backend_wanted(OCTET_WITH_ONEDNN want)
if(want)
  find_package(dnnl CONFIG QUIET)
  find_package(OpenMP QUIET COMPONENTS CXX)
  set(found FALSE)
  if(dnnl_FOUND AND OpenMP_CXX_FOUND)
    set(found TRUE)
  endif()
  if(NOT dnnl_FOUND AND dnnl_DIR)
    set(why "oneDNN's CMake package in ${dnnl_DIR} failed to load (it needs OpenCL's: install ocl-icd-opencl-dev)")
  elseif(NOT dnnl_FOUND)
    set(why "oneDNN not found (install libdnnl-dev and ocl-icd-opencl-dev)")
  else()
    set(why "the C++ compiler has no OpenMP")
  endif()
  octet_backend_choice(OCTET_WITH_ONEDNN cpu "${found}"
    "oneDNN ${dnnl_VERSION}, OpenMP ${OpenMP_CXX_VERSION}" "${why}")
else()
  octet_backend_choice(OCTET_WITH_ONEDNN cpu FALSE "" "")
endif()

# kokkos: a Kokkos installation with its CMake package (Debian:
# libtrilinos-kokkos-dev), and the backend's sources in this tree.
octet_backend_wanted(OCTET_WITH_KOKKOS want)
if(want)
  set(found FALSE)
  if(NOT EXISTS "${CMAKE_CURRENT_SOURCE_DIR}/backends/kokkos/CMakeLists.txt")
    set(why "backends/kokkos is not in this source tree")
  else()
    find_package(Kokkos CONFIG QUIET)
    if(Kokkos_FOUND)
      set(found TRUE)
    else()
      set(why "Kokkos not found (install libtrilinos-kokkos-dev, or pass -DKokkos_ROOT=<install>)")
    endif()
  endif()
  octet_backend_choice(OCTET_WITH_KOKKOS kokkos "${found}" "Kokkos ${Kokkos_VERSION}" "${why}")
else()
  octet_backend_choice(OCTET_WITH_KOKKOS kokkos FALSE "" "")
endif()

# cuda: a CUDA compiler (CMAKE_CUDA_COMPILER, CUDACXX or nvcc on PATH) and the
# toolkit's cuBLASLt. With no GPU the backend is still built; it then reports
# itself unavailable, with the reason, at run time.
octet_backend_wanted(OCTET_WITH_CUDA want)
if(want)
  include(CheckLanguage)
  check_language(CUDA)
  set(found FALSE)
  if(CMAKE_CUDA_COMPILER)
    find_package(CUDAToolkit QUIET)
    if(CUDAToolkit_FOUND AND TARGET CUDA::cublasLt)
      set(found TRUE)
    else()
      set(why "the CUDA toolkit's cuBLASLt was not found next to ${CMAKE_CUDA_COMPILER}")
    endif()
  else()
    set(why "no CUDA compiler found (install the CUDA toolkit; pass "
            "-DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc if nvcc is not on PATH)")
    string(CONCAT why ${why})
  endif()
  octet_backend_choice(OCTET_WITH_CUDA cuda "${found}"
    "CUDA ${CUDAToolkit_VERSION}, ${CMAKE_CUDA_COMPILER}" "${why}")
else()
  octet_backend_choice(OCTET_WITH_CUDA cuda FALSE "" "")
endif()

# opencl (the example plugin in plugins/opencl): OpenCL's headers and ICD
# loader (Debian: opencl-c-headers, ocl-icd-opencl-dev). It runs on any
# OpenCL device with IEEE FP32 (CI: PoCL's CPU device, pocl-opencl-icd); with
# none it is still built and reports itself unavailable at run time.
octet_backend_wanted(OCTET_WITH_OPENCL want)
if(want)
  find_package(OpenCL QUIET)
  octet_backend_choice(OCTET_WITH_OPENCL opencl "${OpenCL_FOUND}" "OpenCL ${OpenCL_VERSION_STRING}"
    "OpenCL headers or ICD loader not found (install opencl-c-headers and ocl-icd-opencl-dev)")
else()
  octet_backend_choice(OCTET_WITH_OPENCL opencl FALSE "" "")
endif()
