# Compiler flags shared by every tenferro target, applied through the interface
# target tenferro_build_flags (never exported: installed consumers do not inherit them).

add_library(tenferro_build_flags INTERFACE)
target_compile_options(tenferro_build_flags INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion
  $<$<BOOL:${TENFERRO_WARNINGS_AS_ERRORS}>:-Werror>)

if(TENFERRO_NATIVE_ARCH)
  target_compile_options(tenferro_build_flags INTERFACE -march=native)
endif()

if(TENFERRO_SANITIZER STREQUAL "address")
  set(_tf_san -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
elseif(TENFERRO_SANITIZER STREQUAL "thread")
  set(_tf_san -fsanitize=thread -fno-omit-frame-pointer)
endif()
if(DEFINED _tf_san)
  target_compile_options(tenferro_build_flags INTERFACE ${_tf_san})
  target_link_options(tenferro_build_flags INTERFACE ${_tf_san})
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

# Header-only helpers shared by the test suites (never installed).
add_library(tenferro_test_support INTERFACE)
target_include_directories(tenferro_test_support INTERFACE ${PROJECT_SOURCE_DIR}/tests/support/include)

# tenferro_add_test(NAME SOURCES ... DEPS ...): a GoogleTest executable registered with CTest.
function(tenferro_add_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main tenferro_build_flags
                                        tenferro_test_support)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60)
endfunction()
