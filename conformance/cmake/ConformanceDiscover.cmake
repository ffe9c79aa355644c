# Run by ctest (TEST_INCLUDE_FILES) before any test: asks mm-conformance which (case, backend)
# pairs exist over the configured data and registers one test per pair. Inputs:
# MM_CONFORMANCE_EXE, MM_CONFORMANCE_ONNX_DATA ("<unset>" for the default roots),
# MM_CONFORMANCE_REQUIRE_OFFICIAL (ON: add conformance.official_corpus), MM_ISA_VARIANTS
# (ONEDNN_MAX_CPU_ISA values under which the onednn tests run once more, label isa),
# MM_CONFORMANCE_BACKEND_LIB_ARGS ("--backend-lib;PATH;..." for every plugin),
# MM_CONFORMANCE_ONE_TEST_PER_BACKEND (ON: the cases outside the catalogues as one test per backend,
# conformance.cases.<backend>, instead of one per case and backend).

if(NOT EXISTS "${MM_CONFORMANCE_EXE}")
  add_test(conformance.NOT_BUILT "${CMAKE_COMMAND}" -E echo
           "mm-conformance is not built: ${MM_CONFORMANCE_EXE}")
  set_tests_properties(conformance.NOT_BUILT PROPERTIES LABELS conformance WILL_FAIL TRUE)
  return()
endif()

# The same MM_ONNX_DATA for discovery and for every test; ctest's own environment is restored.
if(MM_CONFORMANCE_ONNX_DATA STREQUAL "<unset>")
  set(mm_env_modification "MM_ONNX_DATA=unset:")
else()
  set(mm_env_modification "MM_ONNX_DATA=set:${MM_CONFORMANCE_ONNX_DATA}")
endif()
# Only the configured plugins: a MM_BACKEND_LIBS in ctest's environment does not leak in.
list(APPEND mm_env_modification "MM_BACKEND_LIBS=unset:")
# OpenMP threads (oneDNN, Eigen backend) spin while idle by default; for tiny node tests on a busy
# machine that spinning dominates the run. Passive waiting unless the caller chose otherwise.
if(NOT DEFINED ENV{OMP_WAIT_POLICY})
  list(APPEND mm_env_modification "OMP_WAIT_POLICY=set:passive")
endif()
set(mm_saved_defined FALSE)
if(DEFINED ENV{MM_ONNX_DATA})
  set(mm_saved_defined TRUE)
  set(mm_saved_value "$ENV{MM_ONNX_DATA}")
endif()
if(MM_CONFORMANCE_ONNX_DATA STREQUAL "<unset>")
  unset(ENV{MM_ONNX_DATA})
else()
  set(ENV{MM_ONNX_DATA} "${MM_CONFORMANCE_ONNX_DATA}")
endif()
set(mm_saved_libs_defined FALSE)
if(DEFINED ENV{MM_BACKEND_LIBS})
  set(mm_saved_libs_defined TRUE)
  set(mm_saved_libs "$ENV{MM_BACKEND_LIBS}")
  unset(ENV{MM_BACKEND_LIBS})
endif()
# The built-in backends' tests, then the plugins' (--backend-lib alone lists only its plugins).
execute_process(COMMAND "${MM_CONFORMANCE_EXE}" --list-tests
                OUTPUT_VARIABLE mm_list ERROR_VARIABLE mm_error RESULT_VARIABLE mm_result
                TIMEOUT 60)
if(mm_result EQUAL 0 AND MM_CONFORMANCE_BACKEND_LIB_ARGS)
  execute_process(COMMAND "${MM_CONFORMANCE_EXE}" --list-tests ${MM_CONFORMANCE_BACKEND_LIB_ARGS}
                  OUTPUT_VARIABLE mm_plugin_list ERROR_VARIABLE mm_error
                  RESULT_VARIABLE mm_result TIMEOUT 60)
  string(APPEND mm_list "${mm_plugin_list}")
endif()
if(mm_saved_libs_defined)
  set(ENV{MM_BACKEND_LIBS} "${mm_saved_libs}")
endif()
if(mm_saved_defined)
  set(ENV{MM_ONNX_DATA} "${mm_saved_value}")
else()
  unset(ENV{MM_ONNX_DATA})
endif()

if(NOT mm_result EQUAL 0)
  string(REPLACE "\n" " " mm_error "${mm_error}")
  add_test(conformance.DISCOVERY_FAILED "${CMAKE_COMMAND}" -E echo
           "mm-conformance --list-tests failed (${mm_result}): ${mm_error}")
  set_tests_properties(conformance.DISCOVERY_FAILED PROPERTIES LABELS conformance WILL_FAIL TRUE)
  return()
endif()

# One test <name> running mm-conformance with <selection...> on one backend; for onednn once more
# per ISA of MM_ISA_VARIANTS (<name>.isa_<isa>, labels conformance and isa).
function(mm_add_conformance_test mm_name mm_backend)
  add_test("${mm_name}" "${MM_CONFORMANCE_EXE}" ${ARGN} --backend "${mm_backend}"
           --skip-exit-code 77 ${MM_CONFORMANCE_BACKEND_LIB_ARGS})
  set_tests_properties("${mm_name}" PROPERTIES LABELS conformance SKIP_RETURN_CODE 77
                       ENVIRONMENT_MODIFICATION "${mm_env_modification}")
  if(mm_backend STREQUAL "onednn")
    foreach(mm_isa IN LISTS MM_ISA_VARIANTS)
      string(TOLOWER "${mm_isa}" mm_suffix)
      add_test("${mm_name}.isa_${mm_suffix}" "${MM_CONFORMANCE_EXE}" ${ARGN}
               --backend "${mm_backend}" --skip-exit-code 77)
      set_tests_properties("${mm_name}.isa_${mm_suffix}" PROPERTIES
                           LABELS "conformance;isa" SKIP_RETURN_CODE 77
                           ENVIRONMENT_MODIFICATION
                           "${mm_env_modification};ONEDNN_MAX_CPU_ISA=set:${mm_isa}")
    endforeach()
  endif()
endfunction()

# The shape-class catalogue (built-in cases mm_shape_*, a few hundred tiny ones) is one test per
# backend, conformance.shape_classes.<backend>: a process per case and backend would cost minutes.
# The family's built-in catalogue (mm_family_<op><version>_*, 702 cases) likewise is one test per
# operator and backend, conformance.family_<op>.<backend> (gemm, matmulinteger, qlinearmatmul).
string(REPLACE "\n" ";" mm_lines "${mm_list}")
set(mm_shape_backends "")
set(mm_family_tests "")
set(mm_case_backends "")
foreach(mm_line IN LISTS mm_lines)
  if(mm_line STREQUAL "")
    continue()
  endif()
  string(REPLACE "\t" ";" mm_fields "${mm_line}")
  list(GET mm_fields 0 mm_case)
  list(GET mm_fields 1 mm_backend)
  if(mm_case MATCHES "^mm_shape_")
    list(APPEND mm_shape_backends "${mm_backend}")
    continue()
  endif()
  if(mm_case MATCHES "^mm_family_([a-z]+)[0-9]+_")
    list(APPEND mm_family_tests "${CMAKE_MATCH_1}:${mm_backend}")
    continue()
  endif()
  if(MM_CONFORMANCE_ONE_TEST_PER_BACKEND)
    list(APPEND mm_case_backends "${mm_backend}")
    continue()
  endif()
  mm_add_conformance_test("conformance.${mm_case}.${mm_backend}" "${mm_backend}"
                          --case "${mm_case}")
endforeach()
list(REMOVE_DUPLICATES mm_case_backends)
foreach(mm_backend IN LISTS mm_case_backends)
  mm_add_conformance_test("conformance.cases.${mm_backend}" "${mm_backend}"
                          --exclude "^mm_(shape|family)_")
endforeach()
list(REMOVE_DUPLICATES mm_shape_backends)
foreach(mm_backend IN LISTS mm_shape_backends)
  mm_add_conformance_test("conformance.shape_classes.${mm_backend}" "${mm_backend}"
                          --filter "^mm_shape_")
endforeach()
list(REMOVE_DUPLICATES mm_family_tests)
foreach(mm_pair IN LISTS mm_family_tests)
  string(REPLACE ":" ";" mm_pair "${mm_pair}")
  list(GET mm_pair 0 mm_op)
  list(GET mm_pair 1 mm_backend)
  mm_add_conformance_test("conformance.family_${mm_op}.${mm_backend}" "${mm_backend}"
                          --filter "^mm_family_${mm_op}[0-9]+_")
endforeach()

if(MM_CONFORMANCE_REQUIRE_OFFICIAL)
  add_test(conformance.official_corpus "${MM_CONFORMANCE_EXE}" --list --require-official)
  set_tests_properties(conformance.official_corpus PROPERTIES LABELS conformance
                       ENVIRONMENT_MODIFICATION "${mm_env_modification}")
endif()
