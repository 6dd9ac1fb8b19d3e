# find_package(Kokkos) plus a repair of its imported target: Debian's
# libtrilinos-kokkos-dev (Kokkos 3.4 from Trilinos 13.2) computes the
# include directory of Kokkos::kokkos from the wrong prefix (/usr/lib/include)
# while Kokkos_INCLUDE_DIRS is right (/usr/include/trilinos). Include
# directories that do not exist are replaced with Kokkos_INCLUDE_DIRS; a
# correct Kokkos installation (any other) is left as it is.
# Included by backends/kokkos and tests/kokkos_backend (imported targets are
# visible only in the directory that found them).
find_package(Kokkos REQUIRED)
get_target_property(_octet_kokkos_dirs Kokkos::kokkos INTERFACE_INCLUDE_DIRECTORIES)
if(_octet_kokkos_dirs)
  set(_octet_kokkos_fixed)
  set(_octet_kokkos_missing FALSE)
  foreach(_dir IN LISTS _octet_kokkos_dirs)
    if(_dir MATCHES "^\\$<" OR EXISTS "${_dir}")
      list(APPEND _octet_kokkos_fixed "${_dir}")
    else()
      set(_octet_kokkos_missing TRUE)
    endif()
  endforeach()
  if(_octet_kokkos_missing)
    foreach(_dir IN LISTS Kokkos_INCLUDE_DIRS)
      if(EXISTS "${_dir}")
        list(APPEND _octet_kokkos_fixed "${_dir}")
      endif()
    endforeach()
    set_target_properties(Kokkos::kokkos PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_octet_kokkos_fixed}")
  endif()
endif()
