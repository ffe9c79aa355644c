# Per-ISA kernels: code that needs AVX2/FMA or AVX-512 (the oracle's fast path, the eigen
# backend's products) is compiled once per level of mm::CpuIsa (engine/include/mm/engine/
# machine.h) and one copy is chosen at run time from the CPU, capped by MM_MAX_CPU_ISA; everything
# else is compiled for plain x86-64, so one build runs on every x86-64 CPU.
#
# Eigen's templates (and libstdc++'s) instantiated in an AVX2 copy and in the baseline copy are the
# same weak symbols: linked as they are, the linker would keep one for all copies (the baseline path
# running AVX2 code, or the AVX-512 path SSE2 code). So each copy is made private: its objects are
# compiled with hidden visibility, partially linked into one object (ld -r, section groups
# dissolved), every symbol it defines renamed with the prefix mm_isa_<level>. and made local, but
# its one entry function mm_isa_<level>_<entry> (cmake/IsaLocalize.cmake). In a linked program,
# every function of a copy is then named mm_isa_<level>.<symbol>: scripts/check-isa.sh checks
# that no other function holds an AVX instruction.
#
# MM_ISA_DISPATCH (ON on x86-64, but under the sanitizers, whose instrumentation is not meant to be
# partially linked): OFF compiles the baseline copy only.

set(mm_isa_default OFF)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$" AND NOT MM_SANITIZE)
  set(mm_isa_default ON)
endif()
option(MM_ISA_DISPATCH "Compile the kernels for baseline x86-64, AVX2 and AVX-512, chosen at run time"
       ${mm_isa_default})
if(MM_ISA_DISPATCH)
  set(MM_KERNEL_ISAS baseline avx2 avx512)
  if(NOT CMAKE_LINKER OR NOT CMAKE_OBJCOPY OR NOT CMAKE_NM)
    message(FATAL_ERROR "MM_ISA_DISPATCH needs ld, objcopy and nm (binutils)")
  endif()
else()
  set(MM_KERNEL_ISAS baseline)
endif()
list(LENGTH MM_KERNEL_ISAS mm_isa_count)
math(EXPR MM_MAX_COMPILED_CPU_ISA "${mm_isa_count} - 1")

# The compiler options of each level: the x86-64 micro-architecture levels (x86-64-v2 adds nothing
# the kernels use over SSE2).
set(MM_ISA_OPTIONS_baseline "")
set(MM_ISA_OPTIONS_avx2 -march=x86-64-v3)
set(MM_ISA_OPTIONS_avx512 -march=x86-64-v4)
set(MM_ISA_ENUM_baseline kBaseline)
set(MM_ISA_ENUM_avx2 kAvx2)
set(MM_ISA_ENUM_avx512 kAvx512)

# mm_add_isa_kernels(<target> ENTRY <name> SOURCES <file>... [OPTIONS <option>...]
#                    [LIBRARIES <library>...])
# Adds to <target> one private copy of SOURCES per level of MM_KERNEL_ISAS, compiled with OPTIONS
# and the usage requirements of LIBRARIES, each exporting only mm_isa_<level>_<name> (the
# sources define it as MM_ISA_ENTRY, in their namespace MM_ISA_NAMESPACE, isa_<level>, and name
# their level mm::CpuIsa::MM_ISA_ENUM). Per-source options: set them on the sources beforehand in
# this directory.
function(mm_add_isa_kernels target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "ENTRY" "SOURCES;OPTIONS;LIBRARIES")
  foreach(isa IN LISTS MM_KERNEL_ISAS)
    set(objects ${target}_isa_${isa})
    add_library(${objects} OBJECT ${arg_SOURCES})
    # Alone, never in a unity batch: the copies must not share a unit with generic code. Position
    # independent, so that a shared library may link them too.
    set_target_properties(${objects} PROPERTIES UNITY_BUILD OFF POSITION_INDEPENDENT_CODE ON)
    target_compile_options(${objects} PRIVATE ${MM_ISA_OPTIONS_${isa}} ${arg_OPTIONS})
    target_compile_definitions(${objects} PRIVATE MM_ISA_NAMESPACE=isa_${isa}
                               MM_ISA_ENUM=${MM_ISA_ENUM_${isa}}
                               MM_ISA_ENTRY=mm_isa_${isa}_${arg_ENTRY})
    target_link_libraries(${objects} PRIVATE ${arg_LIBRARIES})
    # <target>'s own headers, without a link to it (which would make a cycle).
    target_include_directories(${objects} PRIVATE
                               "$<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>")
    if(NOT MM_ISA_DISPATCH)
      target_sources(${target} PRIVATE $<TARGET_OBJECTS:${objects}>)
      continue()
    endif()
    # Hidden, and no STB_GNU_UNIQUE binding (g++ gives it to static locals of inline functions,
    # Eigen's cache sizes among them, and objcopy leaves such symbols global): every symbol of the
    # copy can be made local.
    set_property(TARGET ${objects} APPEND PROPERTY COMPILE_OPTIONS
                 -fvisibility=hidden -fvisibility-inlines-hidden
                 $<$<CXX_COMPILER_ID:GNU>:-fno-gnu-unique>)
    set(private "${CMAKE_CURRENT_BINARY_DIR}/${target}.isa_${isa}.o")
    add_custom_command(
      OUTPUT "${private}"
      COMMAND "${CMAKE_COMMAND}" "-DOBJECTS=$<JOIN:$<TARGET_OBJECTS:${objects}>,|>"
              "-DOUTPUT=${private}"
              "-DPREFIX=mm_isa_${isa}." "-DENTRY=mm_isa_${isa}_${arg_ENTRY}"
              "-DLD=${CMAKE_LINKER}" "-DOBJCOPY=${CMAKE_OBJCOPY}" "-DNM=${CMAKE_NM}"
              -P "${PROJECT_SOURCE_DIR}/cmake/IsaLocalize.cmake"
      DEPENDS $<TARGET_OBJECTS:${objects}> "${PROJECT_SOURCE_DIR}/cmake/IsaLocalize.cmake"
      COMMENT "Making the ${isa} copy of ${target}'s kernels private"
      VERBATIM)
    set_source_files_properties("${private}" PROPERTIES EXTERNAL_OBJECT TRUE GENERATED TRUE)
    target_sources(${target} PRIVATE "${private}")
  endforeach()
  target_compile_definitions(${target} PRIVATE MM_MAX_COMPILED_CPU_ISA=${MM_MAX_COMPILED_CPU_ISA})
endfunction()
