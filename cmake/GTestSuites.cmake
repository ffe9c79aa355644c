# Run by ctest before any test (TEST_INCLUDE_FILES, written by mm_gtests in the top CMakeLists.txt):
# lists the gtest cases of one executable and registers one ctest test per gtest suite,
# <suite><suffix>, that runs the suite's cases in one process. gtest names every failing case in
# the test's output. Inputs: MM_GTEST_EXE, MM_GTEST_SUFFIX, MM_GTEST_FILTER (a gtest filter; empty:
# every case), MM_GTEST_LABEL, MM_GTEST_ENVIRONMENT (VAR=value or empty),
# MM_GTEST_ENVIRONMENT_MODIFICATION (VAR=set:value or empty), MM_GTEST_CACHE (the registration
# written for the executable as last built; listed again when the executable, these inputs
# (MM_GTEST_INPUTS, the file that sets them) or this script is newer).

if(NOT EXISTS "${MM_GTEST_EXE}")
  get_filename_component(mm_gtest_name "${MM_GTEST_EXE}" NAME)
  add_test("${mm_gtest_name}${MM_GTEST_SUFFIX}.NOT_BUILT" "${CMAKE_COMMAND}" -E echo
           "not built: ${MM_GTEST_EXE}")
  set_tests_properties("${mm_gtest_name}${MM_GTEST_SUFFIX}.NOT_BUILT" PROPERTIES
                       LABELS "${MM_GTEST_LABEL}" WILL_FAIL TRUE)
  return()
endif()

if(NOT EXISTS "${MM_GTEST_CACHE}" OR "${MM_GTEST_EXE}" IS_NEWER_THAN "${MM_GTEST_CACHE}" OR
   "${MM_GTEST_INPUTS}" IS_NEWER_THAN "${MM_GTEST_CACHE}" OR
   "${CMAKE_CURRENT_LIST_FILE}" IS_NEWER_THAN "${MM_GTEST_CACHE}")
  set(mm_gtest_filter_arg "")
  if(NOT MM_GTEST_FILTER STREQUAL "" AND NOT MM_GTEST_FILTER STREQUAL "*")
    set(mm_gtest_filter_arg "--gtest_filter=${MM_GTEST_FILTER}")
  endif()
  execute_process(COMMAND "${MM_GTEST_EXE}" --gtest_list_tests ${mm_gtest_filter_arg}
                  OUTPUT_VARIABLE mm_gtest_out ERROR_VARIABLE mm_gtest_err
                  RESULT_VARIABLE mm_gtest_result TIMEOUT 60)
  if(NOT mm_gtest_result EQUAL 0)
    get_filename_component(mm_gtest_name "${MM_GTEST_EXE}" NAME)
    string(REPLACE "\n" " " mm_gtest_err "${mm_gtest_err}")
    add_test("${mm_gtest_name}${MM_GTEST_SUFFIX}.DISCOVERY_FAILED" "${CMAKE_COMMAND}" -E echo
             "${MM_GTEST_EXE} --gtest_list_tests failed (${mm_gtest_result}): ${mm_gtest_err}")
    set_tests_properties("${mm_gtest_name}${MM_GTEST_SUFFIX}.DISCOVERY_FAILED" PROPERTIES
                         LABELS "${MM_GTEST_LABEL}" WILL_FAIL TRUE)
    return()
  endif()
  # Parameter comments ("  # GetParam() = ...") may hold any character; names never do.
  string(REGEX REPLACE "  # [^\n]*" "" mm_gtest_out "${mm_gtest_out}")
  string(REPLACE ";" "" mm_gtest_out "${mm_gtest_out}")
  string(REPLACE "\n" ";" mm_gtest_lines "${mm_gtest_out}")
  # A suite whose cases are all selected runs as Suite.*; under a filter, by its cases' names.
  set(mm_gtest_explicit FALSE)
  if(NOT mm_gtest_filter_arg STREQUAL "")
    set(mm_gtest_explicit TRUE)
  endif()
  set(mm_gtest_script "")
  set(mm_gtest_suite "")
  set(mm_gtest_cases "")
  # One add_test per suite, written when the next suite starts and after the last line.
  macro(mm_gtest_flush)
    if(NOT mm_gtest_suite STREQUAL "" AND NOT mm_gtest_cases STREQUAL "")
      if(mm_gtest_explicit)
        string(REPLACE ";" ":" mm_gtest_selection "${mm_gtest_cases}")
      else()
        set(mm_gtest_selection "${mm_gtest_suite}.*")
      endif()
      set(mm_gtest_test "${mm_gtest_suite}${MM_GTEST_SUFFIX}")
      string(APPEND mm_gtest_script
             "add_test([==[${mm_gtest_test}]==] [==[${MM_GTEST_EXE}]==] "
             "[==[--gtest_filter=${mm_gtest_selection}]==])\n"
             "set_tests_properties([==[${mm_gtest_test}]==] PROPERTIES "
             "LABELS [==[${MM_GTEST_LABEL}]==])\n")
      if(NOT MM_GTEST_ENVIRONMENT STREQUAL "")
        string(APPEND mm_gtest_script "set_tests_properties([==[${mm_gtest_test}]==] PROPERTIES "
               "ENVIRONMENT [==[${MM_GTEST_ENVIRONMENT}]==])\n")
      endif()
      if(NOT MM_GTEST_ENVIRONMENT_MODIFICATION STREQUAL "")
        string(APPEND mm_gtest_script "set_tests_properties([==[${mm_gtest_test}]==] PROPERTIES "
               "ENVIRONMENT_MODIFICATION [==[${MM_GTEST_ENVIRONMENT_MODIFICATION}]==])\n")
      endif()
    endif()
    set(mm_gtest_cases "")
  endmacro()
  foreach(mm_gtest_line IN LISTS mm_gtest_lines)
    if(mm_gtest_line MATCHES "^([A-Za-z_][A-Za-z0-9_/]*)\\.$")
      mm_gtest_flush()
      set(mm_gtest_suite "${CMAKE_MATCH_1}")
    elseif(mm_gtest_line MATCHES "^  ([A-Za-z_][A-Za-z0-9_/]*)$" AND NOT mm_gtest_suite STREQUAL "")
      set(mm_gtest_case "${CMAKE_MATCH_1}")
      # gtest runs no DISABLED_ case unless asked to; a suite of only those is not registered.
      if(NOT mm_gtest_case MATCHES "^DISABLED_" AND NOT mm_gtest_suite MATCHES "^DISABLED_")
        list(APPEND mm_gtest_cases "${mm_gtest_suite}.${mm_gtest_case}")
      endif()
    endif()
  endforeach()
  mm_gtest_flush()
  file(WRITE "${MM_GTEST_CACHE}" "${mm_gtest_script}")
endif()
include("${MM_GTEST_CACHE}")
