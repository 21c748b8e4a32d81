// Programmatic dependent launch (PDL), on devices of compute capability 9.0 and later.
//
// A kernel launched with the programmatic-stream-serialization attribute may be scheduled while the
// kernel before it on the stream is still finishing: its blocks take the SMs the earlier grid's
// blocks leave, and each waits (wait_for_previous_grid) until that grid has completed and its
// writes are visible before it touches global memory. Our kernels in turn let the next such launch
// be scheduled once every block has issued its loads, or right after the wait in kernels whose
// blocks loop over their data (allow_next_grid), where that pays (see trigger_pays). What this
// saves is the gap between back-to-back kernels: launch latency and the ramp of the first wave. A
// kernel launched without the attribute after ours starts when ours has completed, as usual; on
// older devices the instructions compile to nothing and the launch is an ordinary one.
// KERNEL_FARM_PDL=0 (or false, off, no) in the environment turns the attribute off (read once per
// process).
//
// One of the farm's shared kernel headers: pybuild ships them and adds their folder to every
// generated CMake project, so a kernel includes it as <kernel_farm/pdl.cuh> and carries no copy.
#ifndef KERNEL_FARM_PDL_CUH_
#define KERNEL_FARM_PDL_CUH_

#include <cuda_runtime.h>

#include <cstdlib>
#include <initializer_list>
#include <strings.h>

namespace farm_pdl {

__device__ __forceinline__ void wait_for_previous_grid() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// The same, with the addresses the kernel is about to load from already computed: the compiler
// otherwise sinks index arithmetic below the wait, next to the loads that use it, where it runs
// after the previous grid has completed instead of while it finishes. Taking them as operands of
// the wait keeps that arithmetic ahead of it.
__device__ __forceinline__ void wait_for_previous_grid(const void* a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::"l"(a) : "memory");
#else
  (void)a;
#endif
}
__device__ __forceinline__ void wait_for_previous_grid(const void* a, const void* b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::"l"(a), "l"(b) : "memory");
#else
  (void)a;
  (void)b;
#endif
}

// `trigger` is the same for every thread of the grid (a kernel argument).
__device__ __forceinline__ void allow_next_grid(bool trigger) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (trigger) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Whether a grid whose blocks move `bytes_per_block` each should trigger its dependents. The device
// processes triggers one block at a time for the whole grid, with or without the attribute, at a
// rate that blocks of a few KB outrun: blocks under 6 KB leave the trigger out, and their dependents
// are scheduled as those blocks exit (docs/performance.md, programmatic dependent launch).
constexpr int64_t kTriggerMinBytesPerBlock = 6 << 10;
inline bool trigger_pays(int64_t bytes_per_block) { return bytes_per_block >= kTriggerMinBytesPerBlock; }

// The same for a grid of `blocks` blocks: a grid of up to kTriggerMaxSmallGrid blocks triggers
// whatever its blocks move: so few triggers are processed quickly, and without them its dependents
// wait until its last block exits. Grids of a few blocks gain most with the address arithmetic
// ahead of the wait (wait_for_previous_grid's overloads): the dependents' blocks, launched early,
// do that arithmetic while this grid finishes (docs/performance.md, short calls).
constexpr int64_t kTriggerMaxSmallGrid = 1024;
inline bool trigger_pays(int64_t bytes_per_block, int64_t blocks) {
  return trigger_pays(bytes_per_block) || blocks <= kTriggerMaxSmallGrid;
}

// Whether launches on the current device take the attribute: compute capability 9.0 or later,
// unless KERNEL_FARM_PDL is 0, false, off or no (any case). Looked up once per device.
inline bool enabled() {
  static const bool off = [] {
    const char* v = std::getenv("KERNEL_FARM_PDL");
    if (v == nullptr) return false;
    for (const char* no : {"0", "false", "off", "no"}) {
      if (strcasecmp(v, no) == 0) return true;
    }
    return false;
  }();
  static signed char cache[64] = {};  // 0: not looked up yet; 1: yes; -1: no
  int dev = 0;
  if (off || cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return false;
  if (cache[dev] == 0) {
    int major = 0;
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
    cache[dev] = major >= 9 ? 1 : -1;
  }
  return cache[dev] > 0;
}

// kernel<<<grid, block, 0, stream>>>(args...), with the PDL attribute when `pdl`.
template <typename... Params, typename... Args>
void launch(void (*kernel)(Params...), unsigned grid, unsigned block, cudaStream_t stream, bool pdl, Args... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(block);
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = pdl ? 1 : 0;
  cudaLaunchKernelEx(&config, kernel, args...);  // an error is left for cudaGetLastError()
}

}  // namespace farm_pdl

#endif  // KERNEL_FARM_PDL_CUH_
