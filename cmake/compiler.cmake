# Compiler flags shared by every tenferro target, applied through the interface
# target tenferro_build_flags (never exported: installed consumers do not inherit them).

add_library(tenferro_build_flags INTERFACE)
target_compile_options(tenferro_build_flags INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
  $<$<BOOL:${TENFERRO_WARNINGS_AS_ERRORS}>:-Werror>)

# Note [Small block clears]: GCC clears small objects (a tensor layout: two small
# vectors and an offset, built on every kernel output) with `rep stos`, whose start-up
# costs more than the clear itself on the CPUs measured; blocks up to 256 bytes are
# cleared with vector stores instead, larger ones by the library call.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  target_compile_options(tenferro_build_flags INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-mmemset-strategy=vector_loop:256:noalign,libcall:-1:noalign>)
endif()

# Note [Portable builds]: by default the library is compiled for TENFERRO_BASELINE_ARCH
# (x86-64-v2: SSE4.2 and POPCNT, every x86-64 CPU since about 2009) and its SIMD
# kernels once per ISA level, selected at engine creation from the probed CPU
# (tenferro_isa_sources below), so one binary runs on any such machine. -march=native
# (TENFERRO_NATIVE_ARCH=ON) compiles everything for the build machine instead; the
# result runs only on CPUs with the build machine's instruction set.
if(TENFERRO_NATIVE_ARCH)
  target_compile_options(tenferro_build_flags INTERFACE -march=native)
elseif(TENFERRO_BASELINE_ARCH)
  target_compile_options(tenferro_build_flags INTERFACE -march=${TENFERRO_BASELINE_ARCH})
endif()

# Note [Sanitizer builds]: the address build checks AddressSanitizer and every
# UndefinedBehaviorSanitizer check but two, vptr and pointer-overflow. Those two add
# about as much compile time as all the others together (GCC 12), and what they report
# is caught another way here: pointer-overflow is pointer arithmetic that wraps the
# address space (extents and offsets from user input are overflow-checked as integers
# before they become pointers, the signed-integer-overflow check stays on, and any
# access outside an allocation is an AddressSanitizer report); vptr checks member calls
# and downcasts against the object's dynamic type, and the few downcasts here (the CPU
# bridge to its context, the Python binding to its call storage) are of objects the
# same component made. The fuzz targets (scripts/fuzz, clang) keep both checks, which
# cost clang little. Executables of a sanitizer build (the test suites, the CLI, the
# examples) are compiled at -Og and linked position-dependent. They drive the library,
# which keeps -O1 and every check above; -Og instruments a test body of many assertions
# in about two thirds of -O1's time, and their oracles and checks still run near -O1's
# speed (at -O0 they compiled faster still but the suite ran a quarter longer, which
# cost more than it saved). Position-dependent: an instrumented test executable would
# carry over a million relative relocations that the loader applies at every start,
# and CTest starts a process per test.
if(TENFERRO_SANITIZER STREQUAL "address")
  set(_tf_san -fsanitize=address,undefined -fno-sanitize=vptr,pointer-overflow -fno-sanitize-recover=all
              -fno-omit-frame-pointer)
elseif(TENFERRO_SANITIZER STREQUAL "thread")
  set(_tf_san -fsanitize=thread -fno-omit-frame-pointer)
endif()
if(DEFINED _tf_san)
  target_compile_options(tenferro_build_flags INTERFACE ${_tf_san}
                         $<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:-Og>)
  target_link_options(tenferro_build_flags INTERFACE ${_tf_san}
                      $<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:-no-pie>)
endif()

# CUDA detection. No module compiles CUDA code yet; the result is recorded so that
# the cuda module (a later issue) can be switched on by TENFERRO_HAVE_CUDA.
set(TENFERRO_HAVE_CUDA OFF)
if(NOT TENFERRO_ENABLE_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(TENFERRO_HAVE_CUDA ON)
  elseif(TENFERRO_ENABLE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "TENFERRO_ENABLE_CUDA=ON but no CUDA compiler was found (set CMAKE_CUDA_COMPILER or CUDACXX)")
  endif()
endif()
message(STATUS "tenferro: CUDA toolkit found: ${TENFERRO_HAVE_CUDA} (TENFERRO_ENABLE_CUDA=${TENFERRO_ENABLE_CUDA})")

find_program(TENFERRO_CCACHE ccache)
if(TENFERRO_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CXX_COMPILER_LAUNCHER ${TENFERRO_CCACHE})
  set(CMAKE_C_COMPILER_LAUNCHER ${TENFERRO_CCACHE})
endif()

# tenferro_add_module(NAME SOURCES ... DEPS ...): one module = one target tenferro::NAME.
function(tenferro_add_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_library(tenferro_${name} ${ARG_SOURCES})
  add_library(tenferro::${name} ALIAS tenferro_${name})
  set_target_properties(tenferro_${name} PROPERTIES EXPORT_NAME ${name} OUTPUT_NAME tenferro_${name})
  target_include_directories(tenferro_${name} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(tenferro_${name} PUBLIC cxx_std_20)
  target_link_libraries(tenferro_${name} PUBLIC ${ARG_DEPS} PRIVATE $<BUILD_INTERFACE:tenferro_build_flags>)
  install(TARGETS tenferro_${name} EXPORT tenferroTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endfunction()

# tenferro_isa_sources(TARGET FILE...): compiles each FILE three times through
# generated wrappers that define TENFERRO_ISA_LEVEL (0, 1, 2) and TENFERRO_ISA_NS
# (scalar, avx2, avx512); the file applies the level's target attributes to its own
# definitions (tenferro/core/isa_region.h, Note [ISA kernels] in src/cpu/gemm_kernels.cc).
function(tenferro_isa_sources target)
  foreach(src ${ARGN})
    get_filename_component(stem ${src} NAME_WE)
    foreach(level 0 1 2)
      list(GET _tf_isa_names ${level} ns)
      set(wrapper ${CMAKE_CURRENT_BINARY_DIR}/isa/${stem}_${ns}.cc)
      file(CONFIGURE OUTPUT ${wrapper} CONTENT
           "// Generated by tenferro_isa_sources: ${src} at ISA level ${ns}.\n#define TENFERRO_ISA_LEVEL ${level}\n#define TENFERRO_ISA_NS ${ns}\n#include \"${CMAKE_CURRENT_SOURCE_DIR}/${src}\"\n")
      target_sources(${target} PRIVATE ${wrapper})
    endforeach()
  endforeach()
endfunction()
set(_tf_isa_names scalar avx2 avx512)

# Header-only helpers shared by the test suites (never installed).
add_library(tenferro_test_support INTERFACE)
target_include_directories(tenferro_test_support INTERFACE ${PROJECT_SOURCE_DIR}/tests/support/include)

# tenferro_add_test(NAME SOURCES ... DEPS ...): a GoogleTest executable registered with CTest.
# Note [Test build flags]: in a Release build the test sources are compiled at -O1 (the
# library they test keeps -O3): their time goes to assertions and long-double oracles,
# which -O3 does not vectorize, and at -O1 they compile in about two thirds of the time.
# Sanitizer builds compile them at -Og (Note [Sanitizer builds]).
function(tenferro_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main tenferro_build_flags
                                        tenferro_test_support)
  target_compile_options(${name} PRIVATE $<$<CONFIG:Release>:-O1>)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60)
endfunction()
