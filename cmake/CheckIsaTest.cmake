# ctest's proof that scripts/check-isa.sh can fail (run with cmake -P): plants, in a fresh
# directory WORK, an object with an AVX2 function compiled with -mavx2 and a program linking it,
# and expects the check to name that function and instruction in both; an object alone in a
# <target>_isa_avx2.dir directory, and a program whose AVX2 function is named as the kernels' are
# (mm_isa_avx2.<symbol>), pass. Inputs: CHECK (the script), CC (a C compiler), WORK.

file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}/planted" "${WORK}/kernel/planted_isa_avx2.dir" "${WORK}/named")
# A loop the compiler vectorises with ymm registers under -mavx2 (-O3).
set(add_loop "void NAME(float* y, const float* a, const float* b) {
  for (int i = 0; i < 1024; ++i) y[i] = a[i] * b[i] + y[i];
}
")
string(REPLACE "NAME" "planted_avx2_function" planted "${add_loop}")
file(WRITE "${WORK}/planted.c" "${planted}int main(void) { return 0; }\n")
# The same loop as a kernel copy's function, AVX2 by a target attribute, the rest plain x86-64.
string(REPLACE "void NAME" "__attribute__((target(\"avx2\"), noinline)) void kernel" named "${add_loop}")
file(WRITE "${WORK}/named.c" "void kernel(float* y, const float* a, const float* b) __asm__(\"mm_isa_avx2.kernel\");\n${named}static float v[1024];\nint main(void) { kernel(v, v, v); return (int)v[0]; }\n")

# Usage: run_check(EXPECTED_STATUS [OPTION...] DIR)
function(run_check expect_status)
  execute_process(COMMAND bash "${CHECK}" ${ARGN} OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE status)
  if(NOT status EQUAL expect_status)
    message(FATAL_ERROR "check-isa.sh ${ARGN}: exit ${status}, expected ${expect_status}\n${out}${err}")
  endif()
  set(check_output "${out}" PARENT_SCOPE)
endfunction()

function(compile)
  execute_process(COMMAND "${CC}" ${ARGN} RESULT_VARIABLE status ERROR_VARIABLE err)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${CC} ${ARGN} failed: ${err}")
  endif()
endfunction()

# An object and a program with the AVX2 function outside the kernels: the check fails, naming it.
compile(-O3 -mavx2 -c "${WORK}/planted.c" -o "${WORK}/planted/planted.o")
compile(-O3 -mavx2 "${WORK}/planted.c" -o "${WORK}/planted/planted_program")
run_check(1 "${WORK}/planted")
foreach(file planted.o planted_program)
  if(NOT check_output MATCHES "planted/${file}: planted_avx2_function: [^\n]*%ymm")
    message(FATAL_ERROR "check-isa.sh did not name the planted function in ${file}:\n${check_output}")
  endif()
endforeach()
# --skip-tests leaves out a linked test program, never another program or an object.
file(MAKE_DIRECTORY "${WORK}/skip")
file(COPY "${WORK}/planted/planted.o" DESTINATION "${WORK}/skip")
file(COPY_FILE "${WORK}/planted/planted_program" "${WORK}/skip/planted_test")
run_check(1 --skip-tests "${WORK}/skip")
if(NOT check_output MATCHES "skip/planted.o: planted_avx2_function"
   OR check_output MATCHES "planted_test:")
  message(FATAL_ERROR "check-isa.sh --skip-tests did not check the object alone:\n${check_output}")
endif()
# The same object as a kernel copy's, and a program whose AVX2 function is a kernel's: they pass.
file(COPY "${WORK}/planted/planted.o" DESTINATION "${WORK}/kernel/planted_isa_avx2.dir")
run_check(0 "${WORK}/kernel")
compile(-O3 "${WORK}/named.c" -o "${WORK}/named/named_program")
run_check(0 "${WORK}/named")
message(STATUS "check-isa.sh fails on a planted AVX2 function and passes the kernels' own")
file(REMOVE_RECURSE "${WORK}")
