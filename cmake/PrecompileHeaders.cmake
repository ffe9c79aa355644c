# Precompiled headers for the unity build (MM_PRECOMPILE_HEADERS, on with MM_UNITY_BUILD): with
# MM_UNITY_BUILD each target is one unit or a few, and each unit parses GoogleTest's, JSON's and the
# standard library's headers again. A precompiled header per target would cost about what it saves
# (a target is one unit); instead each group of targets compiled with the same options shares one,
# made by an owner target of the group's options alone (mm_pch_<group>) and reused
# (REUSE_FROM).
#
# A precompiled header is used only with the options it was made with: g++ ignores one that does
# not match (-Winvalid-pch, which CMake adds, says so; an error here), clang stops with an error (a
# language option such as -fopenmp or -O, a sanitizer, or a macro defined on its command line that
# the user's lacks). So a group is what sets those options here:
#  - test executable (mm_gtests: MM_TEST_COMPILE_OPTIONS) or not;
#  - linking OpenMP (-fopenmp) or not;
#  - the libFuzzer coverage instrumentation (MM_FUZZ_COVERAGE) or not;
# and a target joins only if its options are its group's: it is a static library, an object
# library or an executable (not position-independent: shared libraries and plugins, the per-ISA
# kernels), with C++ sources only, compiled with mm::options (the language level, the sanitizers),
# linking no target that adds compile options beyond those of mm::options, OpenMP and GoogleTest
# (the owners' own links), and with no options of its own but warnings (and the tests' options).
# Its own definitions are fine: the header's come from the owner's command line, which has none.
# Sources with options of their own (-ffp-contract=off, -O3) keep the header: both compilers
# accept it with those.

# Headers most of mm's units include: everyone's (the standard library's most used), a test's
# (GoogleTest, gMock). JSON only with clang, which reads from a precompiled header only what a unit
# uses: g++ loads it whole, and JSON's part cost the units that do not include it (most) more than
# it saved the others.
set(MM_PCH_HEADERS <algorithm> <atomic> <chrono> <cmath> <cstddef> <cstdint> <cstdio> <cstdlib>
    <cstring> <filesystem> <fstream> <functional> <limits> <map> <memory> <optional> <set>
    <sstream> <string> <string_view> <utility> <vector>)
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  list(APPEND MM_PCH_HEADERS <nlohmann/json.hpp>)
endif()
set(MM_PCH_TEST_HEADERS <gtest/gtest.h> <gmock/gmock.h>)

# The targets TARGET's compile options come from: those it links (not $<LINK_ONLY:...>) and, on,
# those their interfaces link, into OUT (aliases resolved). OUT_UNKNOWN: TRUE when a link item is a
# generator expression this cannot read (the target then keeps its headers as they are).
function(mm_pch_compile_links out out_unknown target)
  get_target_property(pending ${target} LINK_LIBRARIES)
  set(seen "")
  set(unknown FALSE)
  while(pending)
    list(POP_FRONT pending item)
    if(item MATCHES "^\\$<LINK_ONLY:" OR item MATCHES "^-")
      continue()
    endif()
    if(item MATCHES "\\$<")
      set(unknown TRUE)
      continue()
    endif()
    if(NOT TARGET "${item}")
      continue()
    endif()
    get_target_property(aliased "${item}" ALIASED_TARGET)
    if(aliased)
      set(item "${aliased}")
    endif()
    if(item IN_LIST seen)
      continue()
    endif()
    list(APPEND seen "${item}")
    get_target_property(more "${item}" INTERFACE_LINK_LIBRARIES)
    if(more)
      list(APPEND pending ${more})
    endif()
  endwhile()
  set(${out} "${seen}" PARENT_SCOPE)
  set(${out_unknown} ${unknown} PARENT_SCOPE)
endfunction()

# The group of TARGET into OUT (test_omp, lib, lib_omp_coverage, ...), or "" when TARGET cannot
# share a precompiled header (the conditions above).
function(mm_pch_group out target)
  set(${out} "" PARENT_SCOPE)
  get_target_property(type ${target} TYPE)
  get_target_property(imported ${target} IMPORTED)
  get_target_property(pic ${target} POSITION_INDEPENDENT_CODE)
  if(NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|OBJECT_LIBRARY)$" OR imported OR pic)
    return()
  endif()
  get_target_property(sources ${target} SOURCES)
  set(cxx FALSE)
  foreach(source IN LISTS sources)
    if(source MATCHES "\\.c$")
      return()
    elseif(source MATCHES "\\.(cc|cpp|cxx)$")
      set(cxx TRUE)
    endif()
  endforeach()
  if(NOT cxx)
    return()
  endif()
  get_target_property(test ${target} MM_TEST_CONFIGURED)
  if(test AND NOT MM_BUILD_TESTS)
    return()
  endif()
  set(options_genex "$<TARGET_PROPERTY:mm_options,INTERFACE_COMPILE_OPTIONS>")
  set(with_options FALSE)
  get_target_property(own ${target} COMPILE_OPTIONS)
  if(NOT own)
    set(own "")
  endif()
  foreach(option IN LISTS own)
    if(option STREQUAL options_genex)
      set(with_options TRUE)
    elseif(NOT option MATCHES "^-W" AND NOT (test AND option IN_LIST MM_TEST_COMPILE_OPTIONS))
      return()
    endif()
  endforeach()
  mm_pch_compile_links(links unknown ${target})
  if(unknown)
    return()
  endif()
  set(openmp FALSE)
  foreach(link IN LISTS links)
    if(link STREQUAL "mm_options")
      set(with_options TRUE)
    elseif(link STREQUAL "OpenMP::OpenMP_CXX")
      set(openmp TRUE)
    endif()
    # The owners' own links: their options are the group's.
    if(link MATCHES "^(mm_options|OpenMP::OpenMP_CXX|GTest::g(test|mock)(_main)?)$")
      continue()
    endif()
    get_target_property(options ${link} INTERFACE_COMPILE_OPTIONS)
    foreach(option IN LISTS options)
      if(option AND NOT option MATCHES "^-W")
        return()
      endif()
    endforeach()
  endforeach()
  if(NOT with_options)
    return()
  endif()
  set(group lib)
  if(test)
    set(group test)
  endif()
  if(openmp)
    string(APPEND group _omp)
  endif()
  get_target_property(coverage ${target} MM_FUZZ_COVERAGE)
  if(coverage)
    string(APPEND group _coverage)
  endif()
  set(${out} ${group} PARENT_SCOPE)
endfunction()

# The owner of GROUP's header: an object library of one empty source, with the group's options and
# nothing else (no definitions of its own, which clang would ask of every user).
function(mm_pch_owner group)
  set(owner mm_pch_${group})
  set(source "${PROJECT_BINARY_DIR}/generated/pch/${owner}.cc")
  # Written only when it changes: a new time stamp would compile it again.
  file(CONFIGURE OUTPUT "${source}"
       CONTENT "// The owner of the precompiled header ${group} (cmake/PrecompileHeaders.cmake).\n")
  add_library(${owner} OBJECT "${source}")
  target_link_libraries(${owner} PRIVATE mm_options nlohmann_json::nlohmann_json)
  set(headers ${MM_PCH_HEADERS})
  if(group MATCHES "^test")
    set_target_properties(${owner} PROPERTIES MM_TEST_CONFIGURED ON)
    target_compile_options(${owner} PRIVATE ${MM_TEST_COMPILE_OPTIONS})
    target_link_libraries(${owner} PRIVATE GTest::gtest GTest::gmock)
    list(APPEND headers ${MM_PCH_TEST_HEADERS})
  endif()
  if(group MATCHES "_omp")
    target_link_libraries(${owner} PRIVATE OpenMP::OpenMP_CXX)
  endif()
  if(group MATCHES "_coverage")
    set_target_properties(${owner} PROPERTIES MM_FUZZ_COVERAGE ON)
  endif()
  target_precompile_headers(${owner} PRIVATE ${headers})
endfunction()

# Gives every target below the top folder that can share one its group's precompiled header, and
# says how many share each.
function(mm_precompile_headers)
  mm_targets_below(targets "${PROJECT_SOURCE_DIR}")
  set(groups "")
  foreach(target IN LISTS targets)
    mm_pch_group(group ${target})
    if(NOT group)
      continue()
    endif()
    if(NOT group IN_LIST groups)
      list(APPEND groups ${group})
      mm_pch_owner(${group})
      set(members_${group} "")
    endif()
    list(APPEND members_${group} ${target})
    target_precompile_headers(${target} REUSE_FROM mm_pch_${group})
    # A header g++ would not use (options that differ) is an error, not a silent slow compile.
    target_compile_options(${target} PRIVATE $<$<CXX_COMPILER_ID:GNU>:-Werror=invalid-pch>)
  endforeach()
  list(SORT groups)
  foreach(group IN LISTS groups)
    list(LENGTH members_${group} count)
    message(STATUS "Precompiled header mm_pch_${group}: ${count} targets")
  endforeach()
endfunction()
