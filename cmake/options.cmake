# Every build option of tenferro is declared here, once.
# Presets (CMakePresets.json) and scripts set them; nothing else declares options.

option(TENFERRO_BUILD_TESTS "Build the GoogleTest suites and register them with CTest" ON)
option(TENFERRO_BUILD_BENCHMARKS "Build the Google Benchmark programs under bench/" ON)
option(TENFERRO_BUILD_APPS "Build the tenferro command-line program" ON)
option(TENFERRO_WARNINGS_AS_ERRORS "Treat compiler warnings as errors" OFF)
option(TENFERRO_PYTHON "Build the Python package (python/) when Python 3 and pybind11 are found" ON)
option(TENFERRO_NATIVE_ARCH "Compile everything for the build machine (-march=native); the result runs only on CPUs like it" OFF)
set(TENFERRO_BASELINE_ARCH "x86-64-v2" CACHE STRING
    "Instruction-set baseline (-march) of a portable build; SIMD kernels are selected at run time above it (empty: the compiler's default)")

set(TENFERRO_ENABLE_CUDA "AUTO" CACHE STRING "Detect the CUDA toolkit for the (not yet written) CUDA engine: AUTO (when nvcc is found), ON (required) or OFF")
set_property(CACHE TENFERRO_ENABLE_CUDA PROPERTY STRINGS AUTO ON OFF)

set(TENFERRO_SANITIZER "none" CACHE STRING "Sanitizer instrumentation: none, address (address+undefined) or thread")
set_property(CACHE TENFERRO_SANITIZER PROPERTY STRINGS none address thread)

if(NOT TENFERRO_ENABLE_CUDA MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "TENFERRO_ENABLE_CUDA must be AUTO, ON or OFF (got '${TENFERRO_ENABLE_CUDA}')")
endif()
if(NOT TENFERRO_SANITIZER MATCHES "^(none|address|thread)$")
  message(FATAL_ERROR "TENFERRO_SANITIZER must be none, address or thread (got '${TENFERRO_SANITIZER}')")
endif()
