// Element types in CUDA kernels: fp32 <-> float, __half, __nv_bfloat16 conversions for kernels
// that compute in fp32, and the register type that moves BYTES of consecutive elements as one
// access (packed loads and stores).
//
// One of the farm's shared kernel headers: pybuild ships them and adds their folder to every
// generated CMake project, so a kernel includes it as <kernel_farm/dtypes.cuh> and carries no copy.
#ifndef KERNEL_FARM_DTYPES_CUH_
#define KERNEL_FARM_DTYPES_CUH_

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

namespace farm_dtypes {

// x as fp32 (exact for every supported type).
__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) {  // exact: bf16 is the top half of an fp32
  return __uint_as_float(static_cast<uint32_t>(__bfloat16_as_ushort(x)) << 16);
}

// fp32 x as T, rounded to nearest even: from_float<__nv_bfloat16>(y).
template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ float from_float(float x) { return x; }
template <>
__device__ __forceinline__ __half from_float(float x) { return __float2half_rn(x); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_float(float x) { return __float2bfloat16_rn(x); }

// BYTES of consecutive elements as one register-sized value (loaded and stored as one access):
// Raw<16> is uint4, Raw<8> uint2, Raw<4> uint32_t, Raw<2> uint16_t.
template <int BYTES>
struct RawT {
  static_assert(BYTES == 16 || BYTES == 8 || BYTES == 4 || BYTES == 2, "packs of 16, 8, 4 or 2 bytes");
  using type = std::conditional_t<BYTES == 16, uint4,
                                  std::conditional_t<BYTES == 8, uint2,
                                                     std::conditional_t<BYTES == 4, uint32_t, uint16_t>>>;
};
template <int BYTES>
using Raw = typename RawT<BYTES>::type;

}  // namespace farm_dtypes

#endif  // KERNEL_FARM_DTYPES_CUH_
