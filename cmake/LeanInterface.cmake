# What a lean library promises its consumers: they inherit from it no heavy library and no
# instruction set (mm_engine: nothing PUBLIC beyond the standard library; Eigen, OpenMP and
# mm::options' options belong to the targets that link them themselves).
#
# mm_check_lean_interface(<target>) walks <target>'s INTERFACE_LINK_LIBRARIES (through
# $<LINK_ONLY:...> and on into each linked target's own interface) and the INTERFACE_COMPILE_OPTIONS
# of every target met, and stops the configuration, naming the path to what it found, on
#  - a library whose name holds Eigen, OpenMP, mm::options or mm_options, or -fopenmp / -lgomp;
#  - a compile option -march=, -mavx..., -msse..., -mfma, -mf16c or -fopenmp.
# Generator expressions are checked as written (a forbidden name inside one still fails).

function(mm_check_lean_interface target)
  # Here, not at file scope: a deferred call runs in another directory's scope.
  set(forbidden_libraries "Eigen|OpenMP|mm::options|mm_options|-fopenmp|-lgomp")
  set(forbidden_options "-march=|-mavx|-msse|-mfma|-mf16c|-fopenmp")
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "mm_check_lean_interface: no target ${target} to check")
  endif()
  set(pending "${target}")
  set(seen "")
  set(found "")
  while(pending)
    list(POP_FRONT pending item)
    # The name the interface lists, $<LINK_ONLY:...> (a static library's PRIVATE links) unwrapped.
    string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" name "${item}")
    if(name MATCHES "${forbidden_libraries}")
      list(APPEND found "library ${item}")
      continue()
    endif()
    if(NOT TARGET "${name}" OR name IN_LIST seen)
      continue()
    endif()
    list(APPEND seen "${name}")
    get_target_property(options "${name}" INTERFACE_COMPILE_OPTIONS)
    foreach(option IN LISTS options)
      if(option MATCHES "${forbidden_options}")
        list(APPEND found "compile option ${option} of ${name}")
      endif()
    endforeach()
    get_target_property(libraries "${name}" INTERFACE_LINK_LIBRARIES)
    if(libraries)
      list(APPEND pending ${libraries})
    endif()
  endwhile()
  if(found)
    list(JOIN found "; " found)
    message(FATAL_ERROR "${target} must give its consumers nothing beyond the standard library "
                        "(cmake/LeanInterface.cmake), but its interface has: ${found}")
  endif()
endfunction()
