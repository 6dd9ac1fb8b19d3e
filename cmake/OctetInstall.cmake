# Install and export: liboctet, its public headers, the `octet` CLI, a CMake
# package (find_package(Octet CONFIG) -> Octet::octet, octet_add_backend();
# COMPONENTS mpi -> Octet::octet_mpi where liboctet_mpi was built),
# a pkg-config file, the empty backends folder the core searches, and the
# template backend's sources for third parties to copy.
#
# Included by the top-level CMakeLists.txt after every subdirectory, so all
# targets exist here.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(OCTET_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/Octet)
# The core looks for plugins in <dir of liboctet>/octet/backends.
set(OCTET_INSTALL_BACKENDS_DIR ${CMAKE_INSTALL_LIBDIR}/${OCTET_BACKENDS_SUBDIR})

install(TARGETS octet EXPORT OctetTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
          COMPONENT runtime
          NAMELINK_COMPONENT development
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(octet_public_headers
  ${PROJECT_SOURCE_DIR}/api/include/octet/octet.h
  ${PROJECT_SOURCE_DIR}/api/include/octet/octet_types.h
  ${PROJECT_SOURCE_DIR}/api/include/octet/octet_backend.h
  ${PROJECT_SOURCE_DIR}/api/include/octet/octet_plugin.hpp
  ${PROJECT_SOURCE_DIR}/api/include/octet/octet_float_mode.hpp
  ${PROJECT_SOURCE_DIR}/api/include/octet/octet_dlpack.h
  ${PROJECT_SOURCE_DIR}/api/include/octet/octet_random.h)
if(EXISTS ${PROJECT_SOURCE_DIR}/api/include/octet/octet.hpp)
  list(APPEND octet_public_headers ${PROJECT_SOURCE_DIR}/api/include/octet/octet.hpp)
endif()
install(FILES ${octet_public_headers}
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/octet COMPONENT development)

if(TARGET octet_cli)
  install(TARGETS octet_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
  # `octet conformance`'s fault-injection shim, found beside liboctet.
  install(TARGETS octet_fault_shim LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/octet/conformance
          COMPONENT runtime)
endif()

# The backends folder exists even when no backend is installed, so users see
# where plugins go. Installing an empty folder's contents creates it.
set(octet_empty_dir ${CMAKE_CURRENT_BINARY_DIR}/octet_install_empty_dir)
file(MAKE_DIRECTORY ${octet_empty_dir})
install(DIRECTORY ${octet_empty_dir}/
  DESTINATION ${OCTET_INSTALL_BACKENDS_DIR} COMPONENT runtime)

# --- CMake package -----------------------------------------------------------
install(EXPORT OctetTargets
  NAMESPACE Octet::
  FILE OctetTargets.cmake
  DESTINATION ${OCTET_INSTALL_CMAKEDIR}
  COMPONENT development)
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/OctetConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/OctetConfig.cmake
  INSTALL_DESTINATION ${OCTET_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR OCTET_INSTALL_BACKENDS_DIR)
write_basic_package_version_file(
  ${CMAKE_CURRENT_BINARY_DIR}/OctetConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMajorVersion)
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/OctetConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/OctetConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/OctetAddBackend.cmake
  DESTINATION ${OCTET_INSTALL_CMAKEDIR}
  COMPONENT development)

# --- The MPI communicator (component `mpi`) ------------------------------------
# Its own export set: a consumer that asks for the component gets
# Octet::octet_mpi and finds MPI (OctetConfig.cmake); others never need MPI.
if(TARGET octet_mpi)
  install(TARGETS octet_mpi EXPORT OctetMpiTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
            COMPONENT runtime
            NAMELINK_COMPONENT development
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(FILES ${PROJECT_SOURCE_DIR}/communicators/mpi/include/octet/octet_mpi.h
                ${PROJECT_SOURCE_DIR}/communicators/mpi/include/octet/octet_mpi_world.h
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/octet COMPONENT development)
  install(EXPORT OctetMpiTargets
    NAMESPACE Octet::
    FILE OctetMpiTargets.cmake
    DESTINATION ${OCTET_INSTALL_CMAKEDIR}
    COMPONENT development)
endif()

# --- The NCCL communicator (component `nccl`) ----------------------------------
# Its own export set, as mpi's: CUDA and NCCL stay private to the shared
# library (octet_nccl.h includes neither); with the MPI bootstrap in it,
# octet_nccl_mpi.h includes mpi.h, so the package finds MPI for it.
if(TARGET octet_nccl)
  install(TARGETS octet_nccl EXPORT OctetNcclTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
            COMPONENT runtime
            NAMELINK_COMPONENT development
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  set(octet_nccl_headers ${PROJECT_SOURCE_DIR}/communicators/nccl/include/octet/octet_nccl.h)
  if(OCTET_NCCL_WITH_MPI)
    list(APPEND octet_nccl_headers ${PROJECT_SOURCE_DIR}/communicators/nccl/include/octet/octet_nccl_mpi.h)
  endif()
  install(FILES ${octet_nccl_headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/octet COMPONENT development)
  install(EXPORT OctetNcclTargets
    NAMESPACE Octet::
    FILE OctetNcclTargets.cmake
    DESTINATION ${OCTET_INSTALL_CMAKEDIR}
    COMPONENT development)
endif()

# --- pkg-config ----------------------------------------------------------------
# Relocatable: the prefix is found from the .pc file's own place, so a tree
# installed with `cmake --install --prefix` anywhere stays usable.
set(octet_pkgconfig_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(OCTET_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(OCTET_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH octet_pc_up "/root/${octet_pkgconfig_dir}" "/root")
  string(REGEX REPLACE "/$" "" octet_pc_up "${octet_pc_up}")
  set(OCTET_PC_PREFIX "\${pcfiledir}/${octet_pc_up}")
  set(OCTET_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(OCTET_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(OCTET_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/octet.pc.in ${CMAKE_CURRENT_BINARY_DIR}/octet.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/octet.pc
  DESTINATION ${octet_pkgconfig_dir} COMPONENT development)

# --- The template backend, as sources to copy -----------------------------------
if(EXISTS ${PROJECT_SOURCE_DIR}/plugins/template/CMakeLists.txt)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/plugins/template/
    DESTINATION ${CMAKE_INSTALL_DATADIR}/octet/template
    COMPONENT development)
endif()
