# Makes one ISA copy of a set of kernels private (cmake/IsaKernels.cmake): partially links OBJECTS
# (a |-separated list) into OUTPUT, its section groups dissolved (so that no group of a copy is merged with
# another copy's group of the same name), every symbol it defines renamed PREFIX<symbol> and made
# local, but ENTRY. LD, OBJCOPY and NM: the binutils.

cmake_minimum_required(VERSION 3.25)

string(REPLACE "|" ";" objects "${OBJECTS}")
set(combined "${OUTPUT}.combined.o")
execute_process(COMMAND "${LD}" -r --force-group-allocation -o "${combined}" ${objects}
                RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "ld -r failed (${result}) on ${objects}")
endif()
execute_process(COMMAND "${NM}" --defined-only --format=posix "${combined}"
                OUTPUT_VARIABLE symbols RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "nm failed (${result}) on ${combined}")
endif()
# One "name type value size" line per symbol; names never hold spaces (mangled) or semicolons.
string(REGEX REPLACE "([^\n ]+) [^\n]*\n" "\\1;" names "${symbols}")
list(REMOVE_DUPLICATES names)
list(REMOVE_ITEM names "${ENTRY}")
set(renames "")
foreach(name IN LISTS names)
  if(NOT name STREQUAL "")
    string(APPEND renames "${name} ${PREFIX}${name}\n")
  endif()
endforeach()
file(WRITE "${OUTPUT}.renames" "${renames}")
execute_process(COMMAND "${OBJCOPY}" "--redefine-syms=${OUTPUT}.renames" "--keep-global-symbol=${ENTRY}"
                        --localize-hidden
                        "${combined}" "${OUTPUT}"
                RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "objcopy failed (${result}) on ${combined}")
endif()
file(REMOVE "${combined}")
