# ctest's proof that mm_check_lean_interface (cmake/LeanInterface.cmake) can fail (run with
# cmake -P): configures, in a fresh directory WORK, small projects whose library plants one thing
# the check forbids (Eigen linked PUBLIC, OpenMP linked PRIVATE by a static library, -march= on a
# library it links, mm::options through an alias; no such target at all), each of which must
# stop the configuration naming it, and one whose library links only a lean one, which must pass.
# Inputs: MODULE (the check's file), WORK.

file(REMOVE_RECURSE "${WORK}")

# Configures a project whose subdirectory holds `body` and checks `lean` at the end of the top
# directory, as engine/CMakeLists.txt does.
function(configure name body expect_failure expect_text)
  set(dir "${WORK}/${name}")
  file(WRITE "${dir}/CMakeLists.txt" "cmake_minimum_required(VERSION 3.25)
project(${name} NONE)
add_subdirectory(sub)
")
  file(WRITE "${dir}/sub/CMakeLists.txt" "include(\"${MODULE}\")
add_library(Eigen3::Eigen INTERFACE IMPORTED)
add_library(OpenMP::OpenMP_CXX INTERFACE IMPORTED)
add_library(mm_options INTERFACE)
add_library(mm::options ALIAS mm_options)
add_library(helper INTERFACE)
${body}
cmake_language(DEFER DIRECTORY \"\${PROJECT_SOURCE_DIR}\" CALL mm_check_lean_interface lean)
")
  execute_process(COMMAND "${CMAKE_COMMAND}" -S "${dir}" -B "${dir}/build"
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE status)
  if(expect_failure AND status EQUAL 0)
    message(FATAL_ERROR "${name}: the check passed a planted ${expect_text}\n${out}${err}")
  endif()
  if(NOT expect_failure AND NOT status EQUAL 0)
    message(FATAL_ERROR "${name}: the check failed a lean library\n${out}${err}")
  endif()
  if(expect_failure AND NOT err MATCHES "${expect_text}")
    message(FATAL_ERROR "${name}: the check failed without naming ${expect_text}\n${err}")
  endif()
endfunction()

configure(eigen_public "add_library(lean INTERFACE)
target_link_libraries(lean INTERFACE Eigen3::Eigen)" TRUE "library Eigen3::Eigen")
configure(openmp_link_only "add_library(lean STATIC IMPORTED GLOBAL)
set_target_properties(lean PROPERTIES INTERFACE_LINK_LIBRARIES \"$<LINK_ONLY:OpenMP::OpenMP_CXX>\")"
          TRUE "OpenMP::OpenMP_CXX")
configure(march_below "add_library(lean INTERFACE)
target_compile_options(helper INTERFACE -march=x86-64-v3)
target_link_libraries(lean INTERFACE helper)" TRUE "-march=x86-64-v3 of helper")
configure(options_alias "add_library(lean INTERFACE)
target_link_libraries(lean INTERFACE mm::options)" TRUE "library mm::options")
configure(no_target "" TRUE "no target lean to check")
configure(clean "add_library(lean INTERFACE)
target_compile_features(helper INTERFACE cxx_std_20)
target_compile_options(helper INTERFACE -Wall)
target_link_libraries(lean INTERFACE helper)" FALSE "")
message(STATUS "mm_check_lean_interface fails each planted dependency and passes a lean library")
