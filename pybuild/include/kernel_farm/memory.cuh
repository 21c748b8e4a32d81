// Global memory accesses with a cache policy CUDA's intrinsics do not offer.
//
// One of the farm's shared kernel headers: pybuild ships them and adds their folder to every
// generated CMake project, so a kernel includes it as <kernel_farm/memory.cuh> and carries no copy.
#ifndef KERNEL_FARM_MEMORY_CUH_
#define KERNEL_FARM_MEMORY_CUH_

#include <cuda_runtime.h>

namespace farm_memory {

// A 16-byte (uint4) or 8-byte (uint2) load with an L2 evict-last policy: the line stays in L2
// ahead of lines loaded plainly or streaming (for inputs far larger than L2, where the policy
// keeps part of them resident for the next kernel). `p` is aligned to the access size.
__device__ __forceinline__ uint4 load_evict_last(const uint4* p) {
  uint4 r;
  asm("{\n\t.reg .b64 pol;\n\tcreatepolicy.fractional.L2::evict_last.b64 pol, 1.0;\n\t"
      "ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], pol;\n\t}"
      : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
      : "l"(p));
  return r;
}
__device__ __forceinline__ uint2 load_evict_last(const uint2* p) {
  uint2 r;
  asm("{\n\t.reg .b64 pol;\n\tcreatepolicy.fractional.L2::evict_last.b64 pol, 1.0;\n\t"
      "ld.global.L2::cache_hint.v2.u32 {%0, %1}, [%2], pol;\n\t}"
      : "=r"(r.x), "=r"(r.y)
      : "l"(p));
  return r;
}

}  // namespace farm_memory

#endif  // KERNEL_FARM_MEMORY_CUH_
