# octet_add_backend(NAME <name> SOURCES <src>... [OUTPUT_DIRECTORY <dir>])
#
# Builds a backend plugin the way the plugin ABI requires (octet_backend.h):
# a MODULE library named liboctet_backend_<name>.so (target
# octet_backend_<name>), hidden visibility, exporting only
# octet_backend_entry, compiled against Octet's public headers and never
# linked to liboctet.
#
# Works in Octet's own build (include dir from the source tree, default
# output ${OCTET_BUILD_BACKENDS_DIR}, where the core discovers it) and from
# an installed package after find_package(Octet) (include dir of the
# install, default output the current binary dir).
include_guard(GLOBAL)

# Remember where this file lives now: inside the function CMAKE_CURRENT_LIST_DIR
# is the caller's directory.
set_property(GLOBAL PROPERTY OCTET_ADD_BACKEND_MODULE_DIR "${CMAKE_CURRENT_LIST_DIR}")

function(octet_add_backend)
  cmake_parse_arguments(PARSE_ARGV 0 ARG "" "NAME;OUTPUT_DIRECTORY" "SOURCES")
  if(NOT ARG_NAME)
    message(FATAL_ERROR "octet_add_backend: NAME is required")
  endif()
  if(NOT ARG_NAME MATCHES "^[a-z0-9_]+$")
    message(FATAL_ERROR "octet_add_backend: NAME '${ARG_NAME}' must match [a-z0-9_]+ "
                        "(it is the backend's name in its table and file name)")
  endif()
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "octet_add_backend: SOURCES is required")
  endif()
  if(ARG_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "octet_add_backend: unknown arguments ${ARG_UNPARSED_ARGUMENTS}")
  endif()

  # Public headers: an installed package says where (OctetConfig.cmake sets
  # OCTET_PACKAGE_INCLUDE_DIR); in Octet's own tree they sit beside cmake/.
  get_property(module_dir GLOBAL PROPERTY OCTET_ADD_BACKEND_MODULE_DIR)
  if(DEFINED OCTET_PACKAGE_INCLUDE_DIR)
    set(include_dir "${OCTET_PACKAGE_INCLUDE_DIR}")
  elseif(EXISTS "${module_dir}/../api/include/octet/octet_backend.h")
    get_filename_component(include_dir "${module_dir}/../api/include" ABSOLUTE)
  else()
    message(FATAL_ERROR "octet_add_backend: cannot find octet_backend.h; "
                        "call find_package(Octet CONFIG REQUIRED) first")
  endif()

  if(ARG_OUTPUT_DIRECTORY)
    set(output_dir "${ARG_OUTPUT_DIRECTORY}")
  elseif(DEFINED OCTET_BUILD_BACKENDS_DIR)
    set(output_dir "${OCTET_BUILD_BACKENDS_DIR}")
  else()
    set(output_dir "${CMAKE_CURRENT_BINARY_DIR}")
  endif()

  set(target octet_backend_${ARG_NAME})
  add_library(${target} MODULE ${ARG_SOURCES})
  target_include_directories(${target} PRIVATE "${include_dir}")
  set_target_properties(${target} PROPERTIES
    PREFIX ""
    OUTPUT_NAME liboctet_backend_${ARG_NAME}
    SUFFIX ".so"
    LIBRARY_OUTPUT_DIRECTORY "${output_dir}"
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON)

  # Visibility alone leaves symbols of static libraries linked in exported;
  # the version script guarantees the one-symbol rule (ABI rule 6).
  if(CMAKE_SYSTEM_NAME STREQUAL "Linux" OR CMAKE_SYSTEM_NAME MATCHES "BSD")
    set(script "${CMAKE_CURRENT_BINARY_DIR}/${target}.exports.map")
    file(CONFIGURE OUTPUT "${script}"
         CONTENT "{\n  global: octet_backend_entry;\n  local: *;\n};\n")
    target_link_options(${target} PRIVATE "LINKER:--version-script=${script}"
                        # An unresolved symbol (a call into liboctet, say) fails the
                        # link instead of the plugin's first load.
                        "LINKER:-z,defs")
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS "${script}")
  endif()

  # A first-party backend built into Octet's backends folder is installed
  # into the installed core's backends folder, where it is discovered.
  if(DEFINED OCTET_BUILD_BACKENDS_DIR AND output_dir STREQUAL OCTET_BUILD_BACKENDS_DIR)
    include(GNUInstallDirs)
    install(TARGETS ${target}
      LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/${OCTET_BACKENDS_SUBDIR} COMPONENT runtime)
  endif()
endfunction()
