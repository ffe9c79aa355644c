# Packages not looked for, and the targets that need them left out of the build.
#
# A folder defines its tests and mm-bench's pieces whatever the options say; the top CMakeLists.txt
# looks for GoogleTest only with MM_BUILD_TESTS and for Google Benchmark only with
# MM_BUILD_BENCHMARKS. In their place stand imported targets of the same names
# (mm_stand_in_for), and once every folder is added, every target that links one, directly or
# through other targets, is taken out of `all` (mm_leave_out_stand_in_users). Building such a
# target by name fails at its first compile with an #error naming the package and the option.

# Defines each of TARGETS (imported names of PACKAGE's CMake config) as an interface target whose
# users fail to compile with an #error saying that PACKAGE was not looked for because of OPTION.
#   mm_stand_in_for(<package> <option> <target>...)
function(mm_stand_in_for package option)
  string(MAKE_C_IDENTIFIER "${package}" name)
  set(header "${PROJECT_BINARY_DIR}/generated/left_out/${name}.h")
  file(WRITE "${header}"
       "#error \"${package} was not looked for (${option}): configure with it ON to build this\"\n")
  foreach(target IN LISTS ARGN)
    add_library(${target} INTERFACE IMPORTED)
    set_target_properties(${target} PROPERTIES INTERFACE_COMPILE_OPTIONS "-include;${header}")
  endforeach()
  set_property(GLOBAL APPEND PROPERTY MM_STAND_INS ${ARGN})
endfunction()

# The targets defined in DIR and the folders below it, into OUT.
function(mm_targets_below out dir)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(folders DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(folder IN LISTS folders)
    mm_targets_below(below "${folder}")
    list(APPEND targets ${below})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# Whether TARGET links (PRIVATE, PUBLIC or INTERFACE) a target of the list NAMES, by name or alias.
function(mm_links_any out target names)
  set(found FALSE)
  get_target_property(type ${target} TYPE)
  set(properties INTERFACE_LINK_LIBRARIES)
  if(NOT type STREQUAL "INTERFACE_LIBRARY")
    list(APPEND properties LINK_LIBRARIES)
  endif()
  foreach(property IN LISTS properties)
    get_target_property(items ${target} ${property})
    foreach(item IN LISTS items)
      # $<LINK_ONLY:x> and the like: the name inside.
      string(REGEX REPLACE "^\\$<[A-Z_]+:(.*)>$" "\\1" item "${item}")
      if(TARGET "${item}")
        get_target_property(aliased "${item}" ALIASED_TARGET)
        if(aliased)
          set(item "${aliased}")
        endif()
      endif()
      if(item IN_LIST names)
        set(found TRUE)
      endif()
    endforeach()
  endforeach()
  set(${out} ${found} PARENT_SCOPE)
endfunction()

# Takes every target that links a stand-in (mm_stand_in_for), or a target so taken, out of `all`,
# and says which.
function(mm_leave_out_stand_in_users)
  get_property(left_out GLOBAL PROPERTY MM_STAND_INS)
  if(NOT left_out)
    return()
  endif()
  mm_targets_below(candidates "${PROJECT_SOURCE_DIR}")
  set(taken)
  set(changed TRUE)
  while(changed)
    set(changed FALSE)
    foreach(target IN LISTS candidates)
      mm_links_any(links ${target} "${left_out}")
      if(links)
        list(APPEND left_out ${target})
        list(APPEND taken ${target})
        list(REMOVE_ITEM candidates ${target})
        set(changed TRUE)
      endif()
    endforeach()
  endwhile()
  foreach(target IN LISTS taken)
    get_target_property(type ${target} TYPE)
    if(NOT type STREQUAL "INTERFACE_LIBRARY")
      set_target_properties(${target} PROPERTIES EXCLUDE_FROM_ALL TRUE)
    endif()
  endforeach()
  list(SORT taken)
  list(JOIN taken " " names)
  message(STATUS "Left out (they need a package not looked for): ${names}")
endfunction()
