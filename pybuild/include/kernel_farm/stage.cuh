// Staging a range of elements through shared memory as aligned 16-byte vectors, so that every
// global access of a kernel whose rows are not whole 16-byte packs (odd, prime and other unaligned
// widths) is a 16-byte one except at the two ends of a block's range. A block of kThreads threads
// loads the vectors that cover its input range (load_range, all loads in flight before any is
// used), puts them in shared memory (stage_range), computes from there, and stores its output range
// from shared memory (store_range).
//
// One of the farm's shared kernel headers: pybuild ships them and adds their folder to every
// generated CMake project, so a kernel includes it as <kernel_farm/stage.cuh> and carries no copy.
#ifndef KERNEL_FARM_STAGE_CUH_
#define KERNEL_FARM_STAGE_CUH_

#include <cuda_runtime.h>

#include <cstdint>

namespace farm_stage {

// The aligned 16-byte vectors that cover elements [s, t) of a 16-byte aligned array of n: the
// first, how many, and how many of the array's vectors are whole. A thread's k-th vector of the
// range is vector at(k) of it.
template <typename T, int kThreads>
struct VecSpan {
  static constexpr int64_t kVec = 16 / sizeof(T);
  int64_t v0, nv, full;
  __device__ __forceinline__ VecSpan(int64_t s, int64_t t, int64_t n)
      : v0(s / kVec), nv((t + kVec - 1) / kVec - s / kVec), full(n / kVec) {}
  __device__ __forceinline__ static int64_t at(int k) { return threadIdx.x + static_cast<int64_t>(k) * kThreads; }
  __device__ __forceinline__ bool whole(int k) const { return at(k) < nv && v0 + at(k) < full; }
};

// Elements [s, t) of `a` (n elements, 16-byte aligned) as the vectors that cover them, vector j of
// the range in r[j / kThreads] of thread j % kThreads; with kStream as streaming loads (`.cs`,
// evict-first), else through the read-only path (`ld.global.nc`). The array's last vector, if it
// is partial, is left to stage_range.
template <int kThreads, bool kStream, typename T, int K>
__device__ __forceinline__ void load_range(uint4 (&r)[K], const T* __restrict__ a, int64_t s, int64_t t, int64_t n) {
  const VecSpan<T, kThreads> span(s, t, n);
#pragma unroll
  for (int k = 0; k < K; ++k) {
    if (!span.whole(k)) continue;
    const uint4* p = reinterpret_cast<const uint4*>(a) + span.v0 + span.at(k);
    if constexpr (kStream) {
      r[k] = __ldcs(p);
    } else {
      r[k] = __ldg(p);
    }
  }
}

// The vectors of load_range into shared memory (smem element i is a[s / kVec * kVec + i]); the
// array's partial last vector element by element.
template <int kThreads, typename T, int K>
__device__ __forceinline__ void stage_range(uint4* smem, const uint4 (&r)[K], const T* __restrict__ a, int64_t s,
                                            int64_t t, int64_t n) {
  const VecSpan<T, kThreads> span(s, t, n);
#pragma unroll
  for (int k = 0; k < K; ++k) {
    if (span.whole(k)) smem[span.at(k)] = r[k];
  }
  const int64_t j = span.full - span.v0;  // the partial vector's place in the range
  if (j >= 0 && j < span.nv && j % kThreads == threadIdx.x) {
    T* e = reinterpret_cast<T*>(smem + j);
#pragma unroll 1
    for (int64_t i = span.full * span.kVec; i < n; ++i) e[i - span.full * span.kVec] = a[i];
  }
}

// Elements [s, t) of `a` from shared memory (smem element i is a[s / kVec * kVec + i]), K vectors
// per thread at most: whole vectors as 16-byte streaming stores, the partial ones at either end
// element by element.
template <int kThreads, int K, typename T>
__device__ __forceinline__ void store_range(T* __restrict__ a, const uint4* smem, int64_t s, int64_t t) {
  constexpr int kVec = 16 / sizeof(T);
  const int64_t v0 = s / kVec;
  const int64_t nv = (t + kVec - 1) / kVec - v0;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t j = threadIdx.x + static_cast<int64_t>(k) * kThreads;
    const int64_t e0 = (v0 + j) * kVec;
    if (j < nv && e0 >= s && e0 + kVec <= t) __stcs(reinterpret_cast<uint4*>(a) + v0 + j, smem[j]);
  }
  if (threadIdx.x < 2) {  // the partial vectors at the two ends, if any
    const int64_t up = (s + kVec - 1) / kVec * kVec, down = t / kVec * kVec;
    const int64_t lo = threadIdx.x == 0 ? s : (down > up ? down : up);
    const int64_t hi = threadIdx.x == 0 ? (up < t ? up : t) : t;
    const T* se = reinterpret_cast<const T*>(smem) - v0 * kVec;
#pragma unroll 1
    for (int64_t i = lo; i < hi; ++i) a[i] = se[i];
  }
}

}  // namespace farm_stage

#endif  // KERNEL_FARM_STAGE_CUH_
