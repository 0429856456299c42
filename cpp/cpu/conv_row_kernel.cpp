#include "cpu/conv_row_kernel.h"

#include <cstdlib>
#include <cstring>
#include <limits>
#include <utility>

namespace fusedconv::cpu {
namespace {

// GCC only: the kernel relies on GCC's vector extensions (vector ?:, __builtin_shuffle) and
// on `#pragma GCC target` regions. (Clang would need __builtin_shufflevector and
// `#pragma clang attribute`; torch's Linux wheels are built with GCC too.)
#if defined(__GNUC__) && !defined(__clang__)
#define FC_ALWAYS_INLINE inline __attribute__((always_inline))
// Vectors are passed by value only between always-inlined helpers of one variant, never
// across an ABI boundary, so GCC's "vector return changes the ABI" note does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"
#else
#error "fusedconv's CPU kernel needs GCC (vector extensions and #pragma GCC target)"
#endif

// Tile shapes per variant: accumulators + input vectors fit the register file
// (16 ymm: 6x2 acc + 2 inputs + 1 broadcast; 32 zmm: 12x2 acc + 2 inputs + 1 broadcast).
// The generic variant uses 16-byte vectors (SSE2 / NEON). float64 "need not be fast"
// (DESIGN.md), so it has no AVX-512 variant, which keeps this file quicker to compile.
namespace generic {
#include "cpu/conv_row_kernel_body.inc"
void row_f32(const ConvRowArgs<float>& a) { row_all<float, 4, 2, 6>(a); }
void row_f64(const ConvRowArgs<double>& a) { row_all<double, 2, 2, 6>(a); }
}  // namespace generic

#if defined(__x86_64__) || defined(__i386__)
#define FC_HAVE_X86_VARIANTS 1

#pragma GCC push_options
#pragma GCC target("avx2,fma")
namespace avx2 {
#include "cpu/conv_row_kernel_body.inc"
void row_f32(const ConvRowArgs<float>& a) { row_all<float, 8, 2, 6>(a); }
void row_f64(const ConvRowArgs<double>& a) { row_all<double, 4, 2, 6>(a); }
}  // namespace avx2
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma")
namespace avx512 {
#include "cpu/conv_row_kernel_body.inc"
void row_f32(const ConvRowArgs<float>& a) { row_all<float, 16, 2, 12>(a); }
}  // namespace avx512
#pragma GCC pop_options

bool cpu_has_avx2_fma() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
bool cpu_has_avx512() {  // the x86-64-v4 subset the variant is compiled for
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
         cpu_has_avx2_fma();
}
#endif

template <typename T>
struct Variants;
template <>
struct Variants<float> {
  static std::vector<RowKernel<float>> list() {
    std::vector<RowKernel<float>> v;
#ifdef FC_HAVE_X86_VARIANTS
    if (cpu_has_avx512()) v.push_back({"avx512", 32, 12, &avx512::row_f32});
    if (cpu_has_avx2_fma()) v.push_back({"avx2", 16, 6, &avx2::row_f32});
#endif
    v.push_back({"generic", 8, 6, &generic::row_f32});
    return v;
  }
};
template <>
struct Variants<double> {
  static std::vector<RowKernel<double>> list() {
    std::vector<RowKernel<double>> v;
#ifdef FC_HAVE_X86_VARIANTS
    if (cpu_has_avx2_fma()) v.push_back({"avx2", 8, 6, &avx2::row_f64});
#endif
    v.push_back({"generic", 4, 6, &generic::row_f64});
    return v;
  }
};

}  // namespace

template <typename T>
std::vector<RowKernel<T>> available_row_kernels() {
  return Variants<T>::list();
}

template <typename T>
const RowKernel<T>& best_row_kernel() {
  // FUSEDCONV_CPU_ISA=avx2|generic|... forces a variant (for benchmarks and debugging);
  // an unknown or unsupported name falls back to the fastest.
  static const RowKernel<T> best = [] {
    const std::vector<RowKernel<T>> all = Variants<T>::list();
    if (const char* wanted = std::getenv("FUSEDCONV_CPU_ISA")) {
      for (const RowKernel<T>& k : all)
        if (std::strcmp(k.isa, wanted) == 0) return k;
    }
    return all.front();
  }();
  return best;
}

template std::vector<RowKernel<float>> available_row_kernels<float>();
template std::vector<RowKernel<double>> available_row_kernels<double>();
template const RowKernel<float>& best_row_kernel<float>();
template const RowKernel<double>& best_row_kernel<double>();

}  // namespace fusedconv::cpu
