# Installs the build into a fresh prefix and uses it the ways a downstream
# developer would: find_package(Octet) from a CMake project, pkg-config with
# a plain `cc`, an out-of-tree backend plugin built from the installed
# template with octet_add_backend(), and (where liboctet_mpi was built) a
# project using the component `mpi`. Any failing step fails the test.
#
# cmake -DOCTET_BUILD_DIR=... -DCONSUMER_SOURCE_DIR=... -DWORK_DIR=...
#       -DOCTET_VERSION=... -DINSTALL_LIBDIR=... -DINSTALL_BINDIR=...
#       -DINSTALL_INCLUDEDIR=... -DINSTALL_DATADIR=... -DC_COMPILER=...
#       -DGENERATOR=... [-DEXPECT_MPI=1 -DMPI_CONSUMER_SOURCE_DIR=...] -P consumer_test.cmake
cmake_minimum_required(VERSION 3.20)

foreach(var OCTET_BUILD_DIR CONSUMER_SOURCE_DIR WORK_DIR OCTET_VERSION INSTALL_LIBDIR
            INSTALL_BINDIR INSTALL_INCLUDEDIR INSTALL_DATADIR C_COMPILER GENERATOR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "consumer_test.cmake: -D${var}=... is required")
  endif()
endforeach()

# Runs a command; stops the test with its output when it fails. The output
# is returned in ${out_var} (when given) for further checks.
function(step description)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "" "OUTPUT_VARIABLE" "COMMAND")
  execute_process(COMMAND ${ARG_COMMAND}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " shown "${ARG_COMMAND}")
    message(FATAL_ERROR "FAILED: ${description}\n  command: ${shown}\n  exit: ${rc}\n"
                        "  stdout:\n${out}\n  stderr:\n${err}")
  endif()
  message(STATUS "ok: ${description}")
  if(ARG_OUTPUT_VARIABLE)
    set(${ARG_OUTPUT_VARIABLE} "${out}" PARENT_SCOPE)
  endif()
endfunction()

function(expect_contains description text needle)
  string(FIND "${text}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "FAILED: ${description}: expected '${needle}' in:\n${text}")
  endif()
  message(STATUS "ok: ${description}")
endfunction()

function(expect_exists path)
  if(NOT EXISTS "${path}")
    message(FATAL_ERROR "FAILED: installed tree lacks ${path}")
  endif()
endfunction()

# Discovery must see only what this test puts in front of it.
unset(ENV{OCTET_BACKEND_PATH})

set(prefix "${WORK_DIR}/prefix")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(libdir "${prefix}/${INSTALL_LIBDIR}")

# --- 1. install --------------------------------------------------------------
step("install the build into ${prefix}"
  COMMAND "${CMAKE_COMMAND}" --install "${OCTET_BUILD_DIR}" --prefix "${prefix}")
foreach(file
    "${prefix}/${INSTALL_INCLUDEDIR}/octet/octet.h"
    "${prefix}/${INSTALL_INCLUDEDIR}/octet/octet_types.h"
    "${prefix}/${INSTALL_INCLUDEDIR}/octet/octet_backend.h"
    "${prefix}/${INSTALL_INCLUDEDIR}/octet/octet_random.h"
    "${prefix}/${INSTALL_INCLUDEDIR}/octet/octet_plugin.hpp"
    "${prefix}/${INSTALL_INCLUDEDIR}/octet/octet_float_mode.hpp"
    "${libdir}/liboctet.so"
    "${libdir}/liboctet.so.1"
    "${libdir}/cmake/Octet/OctetConfig.cmake"
    "${libdir}/cmake/Octet/OctetConfigVersion.cmake"
    "${libdir}/cmake/Octet/OctetTargets.cmake"
    "${libdir}/cmake/Octet/OctetAddBackend.cmake"
    "${libdir}/pkgconfig/octet.pc"
    "${prefix}/${INSTALL_DATADIR}/octet/template/CMakeLists.txt")
  expect_exists("${file}")
endforeach()
if(NOT IS_DIRECTORY "${libdir}/octet/backends")
  message(FATAL_ERROR "FAILED: installed tree lacks the folder ${libdir}/octet/backends")
endif()
message(STATUS "ok: installed files and the backends folder are in place")

# --- 2. find_package(Octet) from a CMake project --------------------------------
set(cmake_build "${WORK_DIR}/consumer-cmake")
step("configure the consumer with find_package(Octet)"
  COMMAND "${CMAKE_COMMAND}" -S "${CONSUMER_SOURCE_DIR}" -B "${cmake_build}" -G "${GENERATOR}"
          "-DCMAKE_C_COMPILER=${C_COMPILER}" "-DCMAKE_PREFIX_PATH=${prefix}"
          -DCMAKE_BUILD_TYPE=Release)
step("build the consumer" COMMAND "${CMAKE_COMMAND}" --build "${cmake_build}")
step("run the consumer" COMMAND "${cmake_build}/octet_consumer" OUTPUT_VARIABLE out)
expect_contains("consumer prints the library version" "${out}" "octet ${OCTET_VERSION}")
expect_contains("consumer creates a reference context" "${out}" "context on reference")

# --- 3. pkg-config + cc ---------------------------------------------------------
find_program(PKG_CONFIG_EXECUTABLE pkg-config REQUIRED)
set(ENV{PKG_CONFIG_PATH} "${libdir}/pkgconfig")
step("pkg-config knows the version"
  COMMAND "${PKG_CONFIG_EXECUTABLE}" --modversion octet OUTPUT_VARIABLE pc_version)
string(STRIP "${pc_version}" pc_version)
if(NOT pc_version STREQUAL OCTET_VERSION)
  message(FATAL_ERROR "FAILED: pkg-config says version '${pc_version}', expected '${OCTET_VERSION}'")
endif()
step("pkg-config gives flags"
  COMMAND "${PKG_CONFIG_EXECUTABLE}" --cflags --libs octet OUTPUT_VARIABLE pc_flags)
string(STRIP "${pc_flags}" pc_flags)
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
expect_contains("pkg-config links -loctet" "${pc_flags}" "-loctet")
set(pc_program "${WORK_DIR}/consumer-pkgconfig")
step("compile the consumer with cc and pkg-config's flags"
  COMMAND "${C_COMPILER}" -std=c99 -Wall -Werror "${CONSUMER_SOURCE_DIR}/main.c" ${pc_flags}
          "-Wl,-rpath,${libdir}" -o "${pc_program}")
step("run the pkg-config consumer" COMMAND "${pc_program}" OUTPUT_VARIABLE out)
expect_contains("pkg-config consumer prints the library version" "${out}" "octet ${OCTET_VERSION}")

# --- 4. an out-of-tree backend from the installed template ---------------------------
set(template_build "${WORK_DIR}/template-build")
step("configure the installed template out of tree"
  COMMAND "${CMAKE_COMMAND}" -S "${prefix}/${INSTALL_DATADIR}/octet/template"
          -B "${template_build}" -G "${GENERATOR}" "-DCMAKE_C_COMPILER=${C_COMPILER}"
          "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_BUILD_TYPE=Release)
step("build the template out of tree" COMMAND "${CMAKE_COMMAND}" --build "${template_build}")
set(plugin "${template_build}/liboctet_backend_template.so")
expect_exists("${plugin}")

find_program(NM_EXECUTABLE nm)
if(NM_EXECUTABLE)
  step("list the plugin's exported symbols"
    COMMAND "${NM_EXECUTABLE}" -D --defined-only "${plugin}" OUTPUT_VARIABLE symbols)
  string(REGEX REPLACE "[^\n]* ([^ \n]+)\n" "\\1;" exported "${symbols}")
  list(REMOVE_ITEM exported "")
  if(NOT exported STREQUAL "octet_backend_entry")
    message(FATAL_ERROR "FAILED: the plugin must export only octet_backend_entry, it exports: ${exported}")
  endif()
  message(STATUS "ok: the plugin exports only octet_backend_entry")
endif()

step("the consumer loads the out-of-tree plugin and creates a context on it"
  COMMAND "${cmake_build}/octet_consumer" "${plugin}" template OUTPUT_VARIABLE out)
expect_contains("context on the template" "${out}" "context on template: host CPU (template)")

# Dropped into the installed backends folder, the plugin is found by
# discovery alone (no OCTET_BACKEND_PATH, no explicit load).
file(COPY "${plugin}" DESTINATION "${libdir}/octet/backends")
step("discovery finds a plugin in the installed backends folder"
  COMMAND "${cmake_build}/octet_consumer" template OUTPUT_VARIABLE out)
expect_contains("context on the discovered template" "${out}" "context on template")
file(REMOVE "${libdir}/octet/backends/liboctet_backend_template.so")

# --- 5. the MPI communicator (component `mpi`), where it was built ---------------
if(EXPECT_MPI)
  expect_exists("${prefix}/${INSTALL_INCLUDEDIR}/octet/octet_mpi.h")
  expect_exists("${libdir}/cmake/Octet/OctetMpiTargets.cmake")
  set(mpi_build "${WORK_DIR}/consumer-mpi")
  step("configure an MPI consumer with find_package(Octet COMPONENTS mpi)"
    COMMAND "${CMAKE_COMMAND}" -S "${MPI_CONSUMER_SOURCE_DIR}" -B "${mpi_build}" -G "${GENERATOR}"
            "-DCMAKE_C_COMPILER=${C_COMPILER}" "-DCMAKE_PREFIX_PATH=${prefix}" -DCMAKE_BUILD_TYPE=Release)
  step("build the MPI consumer" COMMAND "${CMAKE_COMMAND}" --build "${mpi_build}")
  # One process, started without mpiexec (MPI's singleton init); Open MPI
  # refuses root unless told.
  set(ENV{OMPI_ALLOW_RUN_AS_ROOT} 1)
  set(ENV{OMPI_ALLOW_RUN_AS_ROOT_CONFIRM} 1)
  step("run the MPI consumer" COMMAND "${mpi_build}/octet_mpi_consumer" OUTPUT_VARIABLE out)
  expect_contains("the installed liboctet_mpi gathers" "${out}" "octet_mpi consumer: gathered over 1 process")
elseif(EXISTS "${libdir}/cmake/Octet/OctetMpiTargets.cmake")
  message(FATAL_ERROR "FAILED: liboctet_mpi was not built but its CMake targets were installed")
endif()

set(cli "${prefix}/${INSTALL_BINDIR}/octet")
if(EXISTS "${cli}")
  set(ENV{OCTET_BACKEND_PATH} "${template_build}")
  step("the installed CLI validates the out-of-tree plugin"
    COMMAND "${cli}" validate --backend template OUTPUT_VARIABLE out)
  unset(ENV{OCTET_BACKEND_PATH})
  expect_contains("validate reports no failure" "${out}" " 0 failed")
  # `octet conformance` is part of the installed CLI (docs/conformance.md):
  # the out-of-tree template, given as a file, passes every section.
  step("the installed CLI's conformance passes the out-of-tree plugin"
    COMMAND "${cli}" conformance "${plugin}" --fuzz-inputs 100 OUTPUT_VARIABLE out)
  expect_contains("conformance passes" "${out}" "verdict: PASS")
  expect_contains("conformance ran section (a) on the file" "${out}" "[PASS] plugin_abi")
  expect_contains("conformance found its installed fault shim" "${out}" "[PASS] fault_injection")
endif()

message(STATUS "consumer test passed")
