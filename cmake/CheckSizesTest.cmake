# ctest's proof that scripts/check-sizes.sh can fail (run with cmake -P): in a fresh directory
# WORK it writes sources at the limits (a file of 500 lines, functions of 80 lines: free, member
# defined out of class, member defined in a class body), which must pass, then one line more of
# each, which must fail naming each file and function. A test file of any length is exempt.
# Inputs: CHECK (the script), WORK.

file(REMOVE_RECURSE "${WORK}")

# A function whose definition spans `lines` lines, its signature starting at `indent`.
function(make_function out indent signature lines)
  set(text "${indent}${signature} {\n")
  math(EXPR body "${lines} - 2")
  foreach(i RANGE 1 ${body})
    string(APPEND text "${indent}  x += ${i};\n")
  endforeach()
  string(APPEND text "${indent}}\n")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# A tree whose free function, out-of-class member and in-class member span `fn` lines, and a file
# of `file_lines` lines.
function(write_tree dir fn file_lines)
  file(MAKE_DIRECTORY "${dir}/lib" "${dir}/lib/tests")
  make_function(free "" "int Free(int x)" ${fn})
  make_function(member "" "int Widget::Member(int x) const" ${fn})
  make_function(inline "  " "int Inline(int x)" ${fn})
  file(WRITE "${dir}/lib/functions.cc"
       "namespace mm {\n\n${free}\n${member}\nclass Other {\n public:\n${inline}};\n\n}  // namespace mm\n")
  string(REPEAT "// a line\n" ${file_lines} long)
  file(WRITE "${dir}/lib/long.h" "${long}")
  string(REPEAT "// a test line\n" 2000 test_text)
  file(WRITE "${dir}/lib/tests/long_test.cc" "${test_text}")
endfunction()

function(run_check expect_status dir)
  execute_process(COMMAND bash "${CHECK}" "${dir}" OUTPUT_VARIABLE out ERROR_VARIABLE err
                  RESULT_VARIABLE status)
  if(NOT status EQUAL expect_status)
    message(FATAL_ERROR "check-sizes.sh ${dir}: exit ${status}, expected ${expect_status}\n${out}${err}")
  endif()
  set(check_output "${out}" PARENT_SCOPE)
endfunction()

write_tree("${WORK}/at_limits" 80 500)
run_check(0 "${WORK}/at_limits")

write_tree("${WORK}/over" 81 501)
run_check(1 "${WORK}/over")
foreach(expected "long.h: 501 lines" "functions.cc:3: function of 81 lines"
        "functions.cc:85: function of 81 lines" "functions.cc:169: function of 81 lines")
  string(FIND "${check_output}" "${expected}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "check-sizes.sh did not report \"${expected}\":\n${check_output}")
  endif()
endforeach()
string(FIND "${check_output}" "long_test.cc" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "check-sizes.sh judged a test file:\n${check_output}")
endif()
