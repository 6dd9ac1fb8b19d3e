# octet_add_pytest(NAME <test> DIRECTORY <dir or file> [ARGS <pytest args>...] [ENVIRONMENT <k=v>...])
# Registers `python3 -m pytest -rs` over <dir> as one ctest test (-rs: the
# summary lists every skipped test with its reason, e.g. the optional
# package it needs), with the interpreter first on PATH (the one `python3`
# runs, where CI installed numpy and pytest), not necessarily the system's. OCTET_LIBRARY (the built
# liboctet) and an empty OCTET_BACKEND_PATH are always in the environment.
# Without a Python 3 interpreter it warns and registers nothing.
function(octet_add_pytest)
  cmake_parse_arguments(ARG "" "NAME;DIRECTORY" "ARGS;ENVIRONMENT" ${ARGN})
  find_program(OCTET_PYTHON3 NAMES python3)
  if(OCTET_PYTHON3)
    set(Python3_EXECUTABLE ${OCTET_PYTHON3})
  endif()
  find_package(Python3 COMPONENTS Interpreter)
  if(NOT Python3_FOUND)
    message(WARNING "No Python 3 interpreter: ${ARG_NAME} is not registered")
    return()
  endif()
  add_test(NAME ${ARG_NAME}
    COMMAND ${Python3_EXECUTABLE} -m pytest -q -rs -p no:cacheprovider ${ARG_ARGS} ${ARG_DIRECTORY})
  set_tests_properties(${ARG_NAME} PROPERTIES
    ENVIRONMENT "OCTET_LIBRARY=$<TARGET_FILE:octet>;OCTET_BACKEND_PATH=;${ARG_ENVIRONMENT}")
endfunction()
