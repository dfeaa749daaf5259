#pragma once
// Build support (not installed for users' code): the target region of a per-ISA kernel
// file (Note [ISA kernels] in src/cpu/gemm_kernels.cc). The file is compiled through a
// generated wrapper (tenferro_isa_sources) that defines TENFERRO_ISA_LEVEL (0 scalar,
// 1 AVX2 + FMA, 2 AVX-512 F/DQ/BW/VL) and TENFERRO_ISA_NS (scalar, avx2, avx512).
// TENFERRO_ISA_BEGIN / TENFERRO_ISA_END enclose the file's own definitions, after every
// #include of a header shared with other files. Used by the CPU engine's GEMM and copy
// kernels and by linalg's item-lane kernels.

#if !defined(TENFERRO_ISA_LEVEL) || !defined(TENFERRO_ISA_NS)
#error "per-ISA kernel files are compiled through their generated wrappers (tenferro_isa_sources)"
#endif

#if TENFERRO_ISA_LEVEL == 0
#define TENFERRO_ISA_BEGIN
#define TENFERRO_ISA_END
#elif defined(__clang__)
#if TENFERRO_ISA_LEVEL == 1
#define TENFERRO_ISA_BEGIN \
  _Pragma("clang attribute push(__attribute__((target(\"avx2,fma,bmi,bmi2,f16c,lzcnt,movbe\"))), apply_to = function)")
#else
#define TENFERRO_ISA_BEGIN                                                                                         \
  _Pragma(                                                                                                         \
      "clang attribute push(__attribute__((target(\"avx512f,avx512dq,avx512bw,avx512vl,avx2,fma,bmi,bmi2,f16c,lzcnt,movbe\"))), apply_to = function)")
#endif
#define TENFERRO_ISA_END _Pragma("clang attribute pop")
#else
#if TENFERRO_ISA_LEVEL == 1
#define TENFERRO_ISA_BEGIN _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,fma,bmi,bmi2,f16c,lzcnt,movbe\")")
#else
#define TENFERRO_ISA_BEGIN \
  _Pragma("GCC push_options")  \
      _Pragma("GCC target(\"avx512f,avx512dq,avx512bw,avx512vl,avx2,fma,bmi,bmi2,f16c,lzcnt,movbe\")")
#endif
#define TENFERRO_ISA_END _Pragma("GCC pop_options")
#endif
