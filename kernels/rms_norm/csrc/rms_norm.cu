// CUDA RMS norm: in [rows, hidden] -> out [rows, hidden], out = in * rsqrt(mean(in^2) + eps) * weight.
// Memory-bound: x is read once and y written once (the weight, read by every row, stays in L2/L1).
//
// Fast path (hidden * sizeof(T) a multiple of 16, all pointers 16-byte aligned, up to 4096 packs:
// fp32 hidden <= 16384, 16-bit <= 32768):
// a row is held in registers, CPT 16-byte packs per thread, so x is read from memory exactly once.
// A row is owned by a group of threads:
//   - a power of two of up to 32 packs per row (bf16 hidden 8..256, fp32 4..128): torch.compile's
//     layout for short rows, 128-thread blocks of warp tiles: load c of a warp reads 32 consecutive
//     packs (512 contiguous bytes, 32 / packs whole rows), 2 loads per thread, so a lane's column
//     and its one weight pack are the same for both, and each row is reduced over its packs' lanes
//     with shuffles (a little faster than the warp groups below on large inputs);
//   - other rows of up to 64 packs (bf16 hidden <= 512, fp32 <= 256): `group` = 1..16 threads of one
//     warp with up to 4 packs each, several rows per block, the sum of squares reduced with warp
//     shuffles inside the group;
//   - larger rows: one block per row, shuffles then one shared-memory step. Up to 1024 threads with
//     2 packs each: two packs of x and of weight fit in 32 registers, so an SM keeps 2048 threads
//     (64 KB of x) in flight. Rows of 1025 to 2048 packs, 16 or more an SM, take 4 packs a thread
//     and read the weight at the store; rows of more than 2048 packs, 5 or more an SM on sm_90,
//     the same in fp32 and 8 packs a thread in 16-bit dtypes, 2 blocks an SM; fewer rows hold the
//     weight, at 2 packs a thread up to 2048 packs and 4 beyond (launch_packs).
// All loads of a thread, the row's weight packs included (but in those rows that read it at the
// store), are issued before the reduction, so the weight (an L2 hit) costs no extra latency after
// it; y is stored with streaming (evict-first) stores, the weight loaded with ordinary cached loads, and x loaded streaming too unless it is 2x
// L2 or larger: then with an L2 evict-last policy, which is faster there and slower on x smaller
// than L2; devices with less memory bandwidth per SM, such as an H100, always stream. Sums and
// products are fp32.
// These paths are kept where the device has rows enough: rows of 48 KB and more that are fewer
// than the SMs, and all other shapes, take the paths below, chosen by plan_of (one plan for the
// launch and for the workspace query):
//   - rows of 2, 4 or 8 bytes (hidden 1, 2, 4 in 16-bit dtypes; 1, 2 in fp32): several rows to a
//     16-byte pack (rms_norm_tiny_kernel);
//   - 16-bit rows of single elements (odd widths, or a weight off 4-byte alignment) of 8 to 256
//     elements, from 6 MiB of x (rows of 161 to 256 elements from 448 rows an SM), with x and y
//     16-byte aligned: x read as one flat array of 16-byte packs whatever rows they cross, each
//     pack's squares summed in two parts, by row (rms_norm_flat_kernel);
//   - 16-bit rows of 257 to 384 single elements, 8 or more an SM: a warp a row, element by element,
//     9 to 12 a lane (rms_norm_group_kernel);
//   - 16-bit rows of more than 384 single elements or more than 256 4-byte units that fit a warp's
//     registers (up to 1024 elements), 8 or more an SM, the units of 4 bytes from 4 MiB of x, with x and y alike modulo
//     16 bytes and a 16-byte aligned weight: a warp a row, 8 rows a block, in 16-byte packs from
//     each row's first 16-byte boundary (rms_norm_shifted_kernel's warp form);
//   - other rows that are not whole 16-byte packs or not 16-byte aligned take the widest unit their
//     width and pointers allow (8, 4 bytes or one element): up to 256 units in coalesced lane
//     groups with several rows per group (rms_norm_group_kernel: rows of up to 64 units in
//     compile-time groups of 2 to 32 lanes, longer ones a warp a row; rows of up to 512 4-byte units
//     too, a warp a row at the fewest units a lane that hold it up to 12, else 16: fp32 ones where
//     they are 16 or more an SM, 16-bit ones the warp form above leaves, 3 or more an SM), longer
//     ones as below;
//   - rows of more than 4096 16-byte packs that need no cluster to fill the device (as many as the
//     SMs or more; any number before sm_90), up to 256 KB on sm_90: a block of 1024 threads a row,
//     the row read twice (the sum of squares with an L2 evict-last policy, then the store from L2),
//     nothing held across the reduction (rms_norm_looped_kernel);
//   - a row per block, or shared by a thread-block cluster of up to 8 blocks (sm_90) when the row
//     is more than a block holds in registers or the rows, 48 KB or wider, are too few to give
//     every SM about two blocks (rms_norm_rows_kernel; 16 units of 4 bytes or less a thread where
//     that still fills the device, 4 where 8 would not fill it once, else 8; from 4 MB of x, rows
//     of single 16-bit elements, rows of 4-byte units past 2 KB and of 8-byte units from 16 KB,
//     odd widths or pointers off 16-byte alignment, in 16-byte packs from each row's first 16-byte
//     boundary,
//     rms_norm_shifted_kernel, where x and y are alike modulo 16 bytes);
//     wider still, two kernels that meet in a workspace
//     (rms_norm_partial_kernel, rms_norm_apply_kernel). With a block per row, 3 rows of 151936
//     bf16 elements would run on 3 SMs.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <type_traits>

#include <kernel_farm/device.cuh>
#include <kernel_farm/dtypes.cuh>
#include <kernel_farm/memory.cuh>
#include <kernel_farm/pdl.cuh>

#include "rms_norm.h"

namespace rms_norm {

namespace {

constexpr int kMaxThreads = 1024;
constexpr int kWarpPathThreads = 256;  // block size when a row fits one warp
constexpr int kWarpPathMaxPacks = 64;  // 16 threads x 4 packs
constexpr int kMaxPacks = 4 * kMaxThreads;
constexpr int kTileThreads = 128;      // block size of the warp-tile path
constexpr int kTileLoads = 2;          // 16-byte loads of x per thread there
constexpr int kRowsThreads = 512;      // most threads per block of rms_norm_rows_kernel
constexpr int kLoopedThreads = 1024;   // block size of rms_norm_looped_kernel
constexpr int kLoopedUnroll = 2;       // 16-byte loads a thread in flight there

using farm_dtypes::from_float;
using farm_dtypes::RawT;
using farm_dtypes::to_float;

template <typename T>
struct alignas(16) Pack {
  static constexpr int kVec = 16 / sizeof(T);
  T v[kVec];
};

// A 16-byte load of x: streaming (`.cs`, evict-first) or with an L2 evict-last policy.
template <bool kEvictLast>
__device__ __forceinline__ uint4 load_x(const void* p) {
  if constexpr (kEvictLast) {
    return farm_memory::load_evict_last(static_cast<const uint4*>(p));
  } else {
    return __ldcs(static_cast<const uint4*>(p));
  }
}

// Sum of `v` over the whole block (every thread gets it). `scratch` holds 33 floats. Each warp's sum
// goes to scratch; with kOneBarrier every warp then adds them all up itself, so no second barrier
// hands a total back (each kernel here calls it once: a second call could overwrite sums a warp
// still reads). Without it warp 0 adds them and hands the total back through scratch[32]: the form
// for the rows kernel's forms that hold 64 bytes a thread, where the one-barrier form spills.
template <bool kOneBarrier = true>
__device__ __forceinline__ float block_sum(float v, float* scratch) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  const int n_warps = (blockDim.x + 31) / 32;
  if constexpr (kOneBarrier) {
    float s = lane < n_warps ? scratch[lane] : 0.0f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    return s;
  } else {
    if (warp == 0) {
      float s = lane < n_warps ? scratch[lane] : 0.0f;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
      if (lane == 0) scratch[32] = s;
    }
    __syncthreads();
    return scratch[32];
  }
}

// Sum of `v` over a row's `split` blocks, every thread of them gets it: over the block, then, with
// split > 1 (sm_90 and later), over the thread-block cluster the row's blocks form, through
// distributed shared memory. `scratch` holds 33 floats and `sums` 2.
template <bool kOneBarrier = true>
__device__ __forceinline__ float row_sum(float v, int split, float* scratch, float* sums) {
  v = block_sum<kOneBarrier>(v, scratch);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (split > 1) {
    namespace cg = cooperative_groups;
    cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0) sums[0] = v;
    cluster.sync();
    if (threadIdx.x == 0) {
      float total = 0.0f;
      for (int r = 0; r < split; ++r) total += *cluster.map_shared_rank(&sums[0], r);
      sums[1] = total;
    }
    cluster.sync();  // no block leaves while another reads its sum; the total is visible
    v = sums[1];
  }
#else
  (void)split;
  (void)sums;
#endif
  return v;
}

// Rows in registers. group <= 32: blockDim.x / group rows per block; else group == blockDim.x, one row.
// kMinBlocks (blocks an SM ptxas must fit) binds in code for sm_90 only, where it is measured and
// where launch_packs launches the bound forms: for sm_100 and sm_120 the 16-bit form bound to 2
// blocks of 512 threads spills, and on devices of 1536 threads an SM or fewer 2 blocks of 1024
// cannot be resident.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ != 900
#define RMS_NORM_VEC_MIN_BLOCKS(n) 0
#else
#define RMS_NORM_VEC_MIN_BLOCKS(n) (n)
#endif
template <typename T, int CPT, bool kEvictLast, bool kHoldWeight = true, int kBoundThreads = kMaxThreads,
          int kMinBlocks = 0>
__global__ void __launch_bounds__(kBoundThreads, RMS_NORM_VEC_MIN_BLOCKS(kMinBlocks)) rms_norm_vec_kernel(T* __restrict__ out, const T* __restrict__ in,
                                                                   const T* __restrict__ weight, int64_t rows,
                                                                   int packs, int group, float inv_hidden,
                                                                   float eps, bool trigger) {
  using P = Pack<T>;
  __shared__ float scratch[33];
  int64_t row;
  int lane;
  if (group <= 32) {
    row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / group) + threadIdx.x / group;
    lane = threadIdx.x & (group - 1);
  } else {
    row = blockIdx.x;
    lane = threadIdx.x;
  }
  const bool row_ok = row < rows;
  const P* x = reinterpret_cast<const P*>(in) + row * packs;
  const uint4* w = reinterpret_cast<const uint4*>(weight);
  uint4 v[CPT], wv[kHoldWeight ? CPT : 1];  // raw 16-byte packs of x and weight
  if constexpr (kHoldWeight) {
    farm_pdl::wait_for_previous_grid(x + lane, w + lane);
  } else {
    farm_pdl::wait_for_previous_grid(x + lane);  // the weight's address is computed at the store
  }
#pragma unroll
  for (int c = 0; c < CPT; ++c) {
    const int p = lane + c * group;
    if (row_ok && p < packs) {
      v[c] = load_x<kEvictLast>(x + p);
      if constexpr (kHoldWeight) wv[c] = __ldg(w + p);
    } else {
      v[c] = make_uint4(0u, 0u, 0u, 0u);  // +0.0 in every dtype
    }
  }
  farm_pdl::allow_next_grid(trigger);
  float ss = 0.0f;
#pragma unroll
  for (int c = 0; c < CPT; ++c) {
    const P& pv = *reinterpret_cast<const P*>(&v[c]);
#pragma unroll
    for (int k = 0; k < P::kVec; ++k) {
      const float f = to_float(pv.v[k]);
      ss += f * f;
    }
    // Keep only the packed x live across the reduction (reconverting costs one instruction per
    // element; keeping the fp32 copies would double the registers and halve the rows in flight).
    asm volatile("" : "+r"(v[c].x), "+r"(v[c].y), "+r"(v[c].z), "+r"(v[c].w));
  }
  if (group <= 32) {
    for (int o = group / 2; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  } else {
    ss = block_sum(ss, scratch);
  }
  if (!row_ok) return;
  const float rstd = rsqrtf(ss * inv_hidden + eps);
  P* y = reinterpret_cast<P*>(out) + row * packs;
#pragma unroll
  for (int c = 0; c < CPT; ++c) {
    const int p = lane + c * group;
    if (p < packs) {
      const P& pv = *reinterpret_cast<const P*>(&v[c]);
      uint4 wc;
      if constexpr (kHoldWeight) {
        wc = wv[c];
      } else {
        wc = __ldg(w + p);
      }
      const P& pw = *reinterpret_cast<const P*>(&wc);
      P o;
#pragma unroll
      for (int k = 0; k < P::kVec; ++k) o.v[k] = from_float<T>(to_float(pv.v[k]) * rstd * to_float(pw.v[k]));
      __stcs(reinterpret_cast<uint4*>(y + p), *reinterpret_cast<const uint4*>(&o));
    }
  }
}

// Rows of `packs` 16-byte packs, a power of two <= 32, as warp tiles: thread (warp, lane) holds
// packs warp * 64 + lane and warp * 64 + 32 + lane of the flat [rows * packs] tensor. 32 is a
// multiple of `packs`, so each load's row boundaries fall between lane groups and every row is
// wholly inside or outside the tensor; xor shuffles below `packs` stay inside a row's lanes.
template <typename T, bool kEvictLast>
__global__ void __launch_bounds__(kTileThreads) rms_norm_tile_kernel(T* __restrict__ out, const T* __restrict__ in,
                                                                     const T* __restrict__ weight, int64_t rows,
                                                                     int packs, float inv_hidden, float eps,
                                                                     bool trigger) {
  using P = Pack<T>;
  const int lane = threadIdx.x & 31;
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * (kTileThreads / 32) + threadIdx.x / 32;
  const int64_t total = rows * packs;
  const int64_t base = warp * (32 * kTileLoads) + lane;
  const uint4* wp = reinterpret_cast<const uint4*>(weight) + (lane & (packs - 1));
  const uint4* x = reinterpret_cast<const uint4*>(in);
  farm_pdl::wait_for_previous_grid(x + base, wp);
  const uint4 wv = __ldg(wp);
  uint4 v[kTileLoads];
  float ss[kTileLoads];
#pragma unroll
  for (int c = 0; c < kTileLoads; ++c) {
    const int64_t f = base + c * 32;
    v[c] = f < total ? load_x<kEvictLast>(x + f) : make_uint4(0u, 0u, 0u, 0u);
  }
  farm_pdl::allow_next_grid(trigger);
#pragma unroll
  for (int c = 0; c < kTileLoads; ++c) {
    const P& pv = *reinterpret_cast<const P*>(&v[c]);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < P::kVec; ++k) {
      const float f = to_float(pv.v[k]);
      s += f * f;
    }
    ss[c] = s;
  }
  for (int o = packs / 2; o > 0; o >>= 1) {
#pragma unroll
    for (int c = 0; c < kTileLoads; ++c) ss[c] += __shfl_xor_sync(0xffffffffu, ss[c], o);
  }
  const P& pw = *reinterpret_cast<const P*>(&wv);
  uint4* y = reinterpret_cast<uint4*>(out);
#pragma unroll
  for (int c = 0; c < kTileLoads; ++c) {
    const int64_t f = base + c * 32;
    if (f < total) {
      const float rstd = rsqrtf(ss[c] * inv_hidden + eps);
      const P& pv = *reinterpret_cast<const P*>(&v[c]);
      P o;
#pragma unroll
      for (int k = 0; k < P::kVec; ++k) o.v[k] = from_float<T>(to_float(pv.v[k]) * rstd * to_float(pw.v[k]));
      __stcs(y + f, *reinterpret_cast<const uint4*>(&o));
    }
  }
}

template <typename T, int BYTES>
struct Unit {
  using R = typename RawT<BYTES>::type;
  static constexpr int kVec = BYTES / static_cast<int>(sizeof(T));
  __device__ __forceinline__ static R zero() { return R{}; }
  __device__ __forceinline__ static float sumsq(const R& r) {
    const T* e = reinterpret_cast<const T*>(&r);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const float f = to_float(e[k]);
      s += f * f;
    }
    return s;
  }
  __device__ __forceinline__ static R scale(const R& x, const R& w, float rstd) {
    const T* xe = reinterpret_cast<const T*>(&x);
    const T* we = reinterpret_cast<const T*>(&w);
    R o;
    T* oe = reinterpret_cast<T*>(&o);
#pragma unroll
    for (int k = 0; k < kVec; ++k) oe[k] = from_float<T>(to_float(xe[k]) * rstd * to_float(we[k]));
    return o;
  }
};

// Rows of any width and alignment, in units of BYTES (16, 8, 4 bytes or one element; the widest
// that the row width and the pointers allow): a row, or a 1/split part of one, per block. With
// split > 1 (sm_90 and later) the split blocks of a row form a thread-block cluster: each reduces
// its part, the parts' sums meet through distributed shared memory, and every block writes its
// own part.
// The first CPT units of a thread stay in registers from the load to the store; units past those
// (rows longer than the block holds) are read again for the store, from L2.
// Where a thread holds 64 bytes of x (CPT 16 of 4-byte units, or CPT 4 of 16-byte bf16 packs)
// the weight is read at the store (an L1/L2 hit) instead of held from the load, and ptxas is
// bound to 64 registers (two 512-thread blocks an SM). Holding it takes 78-96 registers (100 for
// bf16 packs) without a bound, so an SM holds one block and idles between that block's stores and
// the next block's loads. fp16 and fp32 packs fit 64 registers with the weight held, and holding it
// is faster for them, so they hold it. Bound to 64 with the weight held, ptxas spills.
template <typename T, int BYTES, int CPT>
__host__ __device__ constexpr bool hold_weight() {
  return CPT <= 8 && !(BYTES == 16 && sizeof(T) == 2 && !std::is_same_v<T, __half>);
}

template <typename T, int BYTES, int CPT>
__global__ void __launch_bounds__(kRowsThreads, hold_weight<T, BYTES, CPT>() ? 0 : 2) rms_norm_rows_kernel(T* __restrict__ out, const T* __restrict__ in,
                                                                    const T* __restrict__ weight, int64_t rows,
                                                                    int64_t hidden, int64_t units, int split, int64_t chunk, float inv_hidden,
                                                                    float eps, bool trigger) {
  using U = Unit<T, BYTES>;
  using R = typename U::R;
  __shared__ float scratch[33];
  __shared__ float cluster_sums[2];
  const int group = static_cast<int>(blockDim.x);
  // Forms holding up to 32 bytes a thread: no division where a row has one block (split 1), as
  // short rows are bound by latency and a division adds a chain of dependent instructions before
  // the first load; the row's address computed ahead of the wait (pdl.cuh); and the block's sum
  // with one barrier (block_sum). In the forms holding 64 bytes a thread, which ptxas fits in 64
  // registers, each of these spills (the kernel's spill test), so they keep the plain forms.
  constexpr bool kLight = CPT * BYTES <= 32;
  const bool whole_row = kLight && split == 1;
  const int64_t row = whole_row ? blockIdx.x : blockIdx.x / split;
  const int part = whole_row ? 0 : static_cast<int>(blockIdx.x % split);
  const int lane = threadIdx.x;
  const bool row_ok = row < rows;
  const int64_t lo = part * chunk;
  const int64_t hi = lo + chunk < units ? lo + chunk : units;
  const R* x = reinterpret_cast<const R*>(in + row * hidden);
  const R* w = reinterpret_cast<const R*>(weight);
  constexpr bool kHoldWeight = hold_weight<T, BYTES, CPT>();  // loaded with x: no round trip after the reduction
  R v[CPT], wv[kHoldWeight ? CPT : 1];
  if constexpr (kLight) {
    farm_pdl::wait_for_previous_grid(x);
  } else {
    farm_pdl::wait_for_previous_grid();
  }
#pragma unroll
  for (int c = 0; c < CPT; ++c) {
    const int64_t i = lo + lane + static_cast<int64_t>(c) * group;
    const bool in_row = row_ok && i < hi;
    v[c] = in_row ? x[i] : U::zero();
    if constexpr (kHoldWeight) wv[c] = in_row ? w[i] : U::zero();
  }
  farm_pdl::allow_next_grid(trigger);
  float ss = 0.0f;
#pragma unroll
  for (int c = 0; c < CPT; ++c) ss += U::sumsq(v[c]);
  const int64_t rest = lo + lane + static_cast<int64_t>(CPT) * group;  // units past the registers
  if (row_ok) {
#pragma unroll(CPT > 8 ? 1 : 4)
    for (int64_t i = rest; i < hi; i += group) ss += U::sumsq(x[i]);
  }
  ss = row_sum<kLight>(ss, split, scratch, cluster_sums);
  if (!row_ok) return;
  const float rstd = rsqrtf(ss * inv_hidden + eps);
  R* y = reinterpret_cast<R*>(out + row * hidden);
#pragma unroll
  for (int c = 0; c < CPT; ++c) {
    const int64_t i = lo + lane + static_cast<int64_t>(c) * group;
    if constexpr (kHoldWeight) {
      if (i < hi) y[i] = U::scale(v[c], wv[c], rstd);
    } else {
      if (i < hi) y[i] = U::scale(v[c], w[i], rstd);
    }
  }
  for (int64_t i = rest; i < hi; i += group) y[i] = U::scale(x[i], w[i], rstd);
}

// Rows of 16-byte packs longer than a block holds in registers (more than kMaxPacks), as many as
// the SMs or more: a block of kLoopedThreads a row reads its row twice, first for the sum of
// squares with an L2 evict-last policy (the row stays in L2 for the second read), then streaming
// for the store, kLoopedUnroll units a thread in flight at each step. Nothing is held across the
// reduction: the block needs few registers whatever the row's width, and its SM streams the row
// from the first load to the last store, where a cluster's blocks hold their parts in registers
// and wait for each other between their loads and their stores (torch.compile's form of these rows).
template <typename T, int BYTES>
__global__ void __launch_bounds__(kLoopedThreads) rms_norm_looped_kernel(T* __restrict__ out, const T* __restrict__ in,
                                                                         const T* __restrict__ weight, int64_t hidden,
                                                                         int64_t units, float inv_hidden, float eps,
                                                                         bool trigger) {
  using U = Unit<T, BYTES>;
  using R = typename U::R;
  constexpr int kU = kLoopedUnroll;
  __shared__ float scratch[33];
  const int64_t row = blockIdx.x;
  const R* x = reinterpret_cast<const R*>(in + row * hidden);
  const R* w = reinterpret_cast<const R*>(weight);
  R* y = reinterpret_cast<R*>(out + row * hidden);
  const int64_t step = blockDim.x;
  const int64_t whole = units / (step * kU) * (step * kU);  // units of the full steps
  farm_pdl::wait_for_previous_grid(x + threadIdx.x, w + threadIdx.x);
  float ss = 0.0f;
  for (int64_t base = threadIdx.x; base < whole; base += step * kU) {
    R v[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) v[u] = farm_memory::load_evict_last(x + base + u * step);
#pragma unroll
    for (int u = 0; u < kU; ++u) ss += U::sumsq(v[u]);
  }
  for (int64_t i = whole + threadIdx.x; i < units; i += step) ss += U::sumsq(farm_memory::load_evict_last(x + i));
  farm_pdl::allow_next_grid(trigger);
  ss = block_sum(ss, scratch);
  const float rstd = rsqrtf(ss * inv_hidden + eps);
  for (int64_t base = threadIdx.x; base < whole; base += step * kU) {
    R v[kU], wv[kU];
#pragma unroll
    for (int u = 0; u < kU; ++u) {
      v[u] = __ldcs(x + base + u * step);
      wv[u] = w[base + u * step];
    }
#pragma unroll
    for (int u = 0; u < kU; ++u) __stcs(y + base + u * step, U::scale(v[u], wv[u], rstd));
  }
  for (int64_t i = whole + threadIdx.x; i < units; i += step) __stcs(y + i, U::scale(__ldcs(x + i), w[i], rstd));
}

// The weight's 16-byte pack for a pack of x that starts S 16-bit halves into a pack of the weight:
// halves S..S+7 of packs a and b (b unread for S == 0).
template <int S>
__device__ __forceinline__ uint4 shifted_pack(const uint4& a, const uint4& b) {
  const uint32_t w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
  uint32_t r[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (S % 2 == 0) {
      r[i] = w[S / 2 + i];
    } else {
      r[i] = __byte_perm(w[S / 2 + i], w[S / 2 + i + 1], 0x5432);  // high half of one word, low of the next
    }
  }
  return make_uint4(r[0], r[1], r[2], r[3]);
}

// The stores of rms_norm_shifted_kernel for rows that start S 16-bit halves before a 16-byte boundary.
template <typename T, int CPT, int S>
__device__ __forceinline__ void store_shifted(uint4* __restrict__ y, const uint4* __restrict__ x,
                                              const uint4* __restrict__ w, const uint4 (&v)[CPT], int64_t first,
                                              int64_t hi, int step, float rstd) {
  using U = Unit<T, 16>;
  const auto weight_at = [&](int64_t k) {
    if constexpr (S == 0) {
      return w[k];
    } else {
      return shifted_pack<S>(w[k], w[k + 1]);
    }
  };
#pragma unroll
  for (int c = 0; c < CPT; ++c) {
    const int64_t k = first + static_cast<int64_t>(c) * step;
    if (k < hi) y[k] = U::scale(v[c], weight_at(k), rstd);
  }
  for (int64_t k = first + static_cast<int64_t>(CPT) * step; k < hi; k += step) {
    y[k] = U::scale(x[k], weight_at(k), rstd);
  }
}

// Rows that the rows kernel would take in units under 16 bytes (widths that are no whole number of
// 16-byte packs, or x and y off 16-byte alignment), with x and y alike modulo 16 bytes and a
// 16-byte aligned weight: rms_norm_rows_kernel's layout (a row or
// a 1/split part of it per block, a cluster when split > 1) over the row's 16-byte packs, from its
// first 16-byte boundary, h elements in. The weight's elements for a pack of x start h elements into
// one of its packs: two aligned packs (L1 hits) joined by a shift fixed at compile time, one
// instantiation of the stores per h (uniform in a block, in a warp in the warp form). The h elements
// before the first pack and the few after the last are one thread's each, in the first block of
// the row (in the row's warp in the warp form). In units of one
// element (or 4 bytes), as rms_norm_rows_kernel takes such rows, a warp's load moves 64 (or 128)
// bytes where this one moves 512, and the kernel is bound by instruction issue.
// kWarp: a warp a row instead of a block (split 1, blockDim.x / 32 rows a block), its sum reduced
// with shuffles alone: rows of up to a warp's 32 * CPT packs, by the thousand, which a block a row
// would give one to four warps each in 2- or 4-byte units (an SM holds 32 blocks: with blocks of one
// warp, half its threads).
template <typename T, int CPT, bool kWarp = false>
__global__ void __launch_bounds__(kRowsThreads, 2)
    rms_norm_shifted_kernel(T* __restrict__ out, const T* __restrict__ in, const T* __restrict__ weight, int64_t rows,
                            int64_t hidden, int64_t units, int split, int64_t chunk, float inv_hidden, float eps,
                            bool trigger) {
  (void)units;
  using U = Unit<T, 16>;
  constexpr int kVec = U::kVec;
  __shared__ float scratch[33];
  __shared__ float cluster_sums[2];
  const int step = kWarp ? 32 : static_cast<int>(blockDim.x);
  const int64_t row = kWarp        ? static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32
                      : split == 1 ? blockIdx.x
                                   : blockIdx.x / split;  // no division for a row of one block
  const int part = kWarp || split == 1 ? 0 : static_cast<int>(blockIdx.x % split);
  const int tid = kWarp ? static_cast<int>(threadIdx.x % 32) : static_cast<int>(threadIdx.x);
  if (kWarp && row >= rows) return;  // whole warps, and no block-wide synchronisation in this form
  const T* xr = in + row * hidden;
  T* yr = out + row * hidden;
  const int h = static_cast<int>(((16 - (reinterpret_cast<uintptr_t>(xr) & 15u)) & 15u) / sizeof(T));
  // Packs of x from element h on; where h > 0, the last one's second weight pack must be whole.
  int64_t packs = (hidden - h) / kVec;
  if (h > 0 && packs > hidden / kVec - 1) packs = hidden / kVec - 1;
  const int64_t lo = part * chunk;
  const int64_t hi = lo + chunk < packs ? lo + chunk : packs;
  const int64_t tail = h + packs * kVec;  // elements from here on, and below h, one a thread
  const int edges = static_cast<int>(h + hidden - tail);
  const auto* x = reinterpret_cast<const uint4*>(xr + h);
  const auto* w = reinterpret_cast<const uint4*>(weight);
  const int64_t first = lo + tid;
  uint4 v[CPT];
  int64_t edge = -1;  // the element this thread holds outside the packs, if any
  float xe = 0.0f;
  farm_pdl::wait_for_previous_grid(x + first, xr);
#pragma unroll
  for (int c = 0; c < CPT; ++c) {
    const int64_t k = first + static_cast<int64_t>(c) * step;
    v[c] = k < hi ? x[k] : U::zero();
  }
  if (part == 0 && tid < edges) {
    const int t = tid;
    edge = t < h ? t : tail + (t - h);
    xe = to_float(xr[edge]);
  }
  farm_pdl::allow_next_grid(trigger);
  float ss = xe * xe;
#pragma unroll
  for (int c = 0; c < CPT; ++c) ss += U::sumsq(v[c]);
  for (int64_t k = first + static_cast<int64_t>(CPT) * step; k < hi; k += step) ss += U::sumsq(x[k]);
  if constexpr (kWarp) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  } else {
    ss = row_sum(ss, split, scratch, cluster_sums);
  }
  const float rstd = rsqrtf(ss * inv_hidden + eps);
  if (edge >= 0) yr[edge] = from_float<T>(xe * rstd * to_float(weight[edge]));
  auto* y = reinterpret_cast<uint4*>(yr + h);
  switch (h * static_cast<int>(sizeof(T)) / 2) {  // in 16-bit halves: 0..7 (2-byte T), 0, 2, 4, 6 (fp32)
    case 0: store_shifted<T, CPT, 0>(y, x, w, v, first, hi, step, rstd); break;
    case 2: store_shifted<T, CPT, 2>(y, x, w, v, first, hi, step, rstd); break;
    case 4: store_shifted<T, CPT, 4>(y, x, w, v, first, hi, step, rstd); break;
    case 6: store_shifted<T, CPT, 6>(y, x, w, v, first, hi, step, rstd); break;
    default:
      if constexpr (sizeof(T) == 2) {
        switch (h) {
          case 1: store_shifted<T, CPT, 1>(y, x, w, v, first, hi, step, rstd); break;
          case 3: store_shifted<T, CPT, 3>(y, x, w, v, first, hi, step, rstd); break;
          case 5: store_shifted<T, CPT, 5>(y, x, w, v, first, hi, step, rstd); break;
          default: store_shifted<T, CPT, 7>(y, x, w, v, first, hi, step, rstd); break;
        }
      }
      break;
  }
}

// Each of a thread's RPT sums added up over its group of `group` consecutive lanes (a power of two
// up to 32; a constant where the caller's is, and the loop then unrolled).
template <int RPT>
__device__ __forceinline__ void group_sums(float (&ss)[RPT], int group) {
#pragma unroll
  for (int o = group / 2; o > 0; o >>= 1) {
#pragma unroll
    for (int k = 0; k < RPT; ++k) ss[k] += __shfl_xor_sync(0xffffffffu, ss[k], o);
  }
}

// Rows of up to 256 units of BYTES (rows of up to 512 4-byte units too: fp32, and 16-bit ones the
// shifted kernel's warp form leaves; 16-bit rows of up to 384 elements): G consecutive lanes a
// row, G a compile-time power of two from 2 to 32 (a warp for rows of more than 64 units), UPT units
// a lane and RPT rows a thread, all loaded before any is reduced. Row k of a thread is k * 256 / G
// rows after its row 0, so each load of a warp covers 32 / G consecutive rows, one contiguous span.
// Lane masks, row shifts, column offsets (c * G) and shuffles are constants; sums and stores have
// no branches, the store only a predicate.
// - Units past the row's end: 4- and 8-byte units of rows of up to 64 units are not loaded (their
//   loads predicated off into zeros); 2-byte units, and every unit of wider rows, keep an address
//   inside the row, its last unit (a cache hit), and their squares are selected away. A predicated
//   16-bit load merges into its register, so the next load waits on it, and on wide rows
//   predicated loads take more registers and leave fewer blocks an SM.
//   Rows past the end read the last row, and are not stored.
// - Why the group is a compile-time constant: short rows are bound by instruction issue, not by
//   memory. A division by the group size, a 64-bit row product per load, or a run-time group
//   (shifts by its log) each add instructions per byte and leave lanes diverged; with the group
//   fixed at compile time the index arithmetic folds into constants.
template <typename T, int BYTES, int UPT, int RPT, int G>
__global__ void __launch_bounds__(256) rms_norm_group_kernel(T* __restrict__ out, const T* __restrict__ in,
                                                             const T* __restrict__ weight, int64_t rows, int units,
                                                             float inv_hidden, float eps, bool trigger) {
  static_assert(G >= 2 && G <= 32 && (G & (G - 1)) == 0, "G a power of two from 2 to 32");
  static_assert(UPT <= 2 || G == 32, "rows of more than 64 units take a warp a row");
  using U = Unit<T, BYTES>;
  using R = typename U::R;
  constexpr bool kWide = UPT > 2;
  constexpr bool kClamp = BYTES < 4 || kWide;  // units past the row's end loaded from its last
  constexpr int kPerSlice = 256 / G;  // rows of the block per k
  const int lane = static_cast<int>(threadIdx.x) % G;
  const int64_t row0 = static_cast<int64_t>(blockIdx.x) * (RPT * kPerSlice) + threadIdx.x / G;
  const int64_t left = rows - row0;  // rows from this thread's first on
  const int64_t step = static_cast<int64_t>(kPerSlice) * units;  // units between a thread's rows
  const int64_t first = row0 < rows ? row0 : rows - 1;  // rows past the end read the last row
  const R* x = reinterpret_cast<const R*>(in) + first * units + lane;
  const R* w = reinterpret_cast<const R*>(weight) + lane;
  bool col[UPT];
  int off[UPT];
#pragma unroll
  for (int c = 0; c < UPT; ++c) {
    col[c] = lane + c * G < units;
    off[c] = (kClamp && !col[c]) ? units - 1 - lane : c * G;
  }
  R v[RPT][UPT], wv[UPT];
  farm_pdl::wait_for_previous_grid(x, w);
#pragma unroll
  for (int c = 0; c < UPT; ++c) wv[c] = (kClamp || col[c]) ? w[off[c]] : U::zero();
#pragma unroll
  for (int k = 0; k < RPT; ++k) {
    const R* xk = x + (k * kPerSlice < left ? k * step : 0);
#pragma unroll
    for (int c = 0; c < UPT; ++c) v[k][c] = (kClamp || col[c]) ? xk[off[c]] : U::zero();
  }
  farm_pdl::allow_next_grid(trigger);
  float ss[RPT];
#pragma unroll
  for (int k = 0; k < RPT; ++k) {
    ss[k] = 0.0f;
#pragma unroll
    for (int c = 0; c < UPT; ++c) {  // the square selected away on wide rows, the unit on short ones
      ss[k] += kWide ? (col[c] ? U::sumsq(v[k][c]) : 0.0f) : U::sumsq(kClamp && !col[c] ? U::zero() : v[k][c]);
    }
  }
  group_sums(ss, G);
  R* y = reinterpret_cast<R*>(out) + row0 * units + lane;
#pragma unroll
  for (int k = 0; k < RPT; ++k) {
    const float rstd = rsqrtf(ss[k] * inv_hidden + eps);
    R* yk = y + k * step;
#pragma unroll
    for (int c = 0; c < UPT; ++c) {
      const R o = U::scale(v[k][c], wv[c], rstd);
      if (k * kPerSlice < left && col[c]) yk[c * G] = o;
    }
  }
}

// Rows of 2, 4 or 8 bytes (ROW elements), several to a 16-byte pack: the tensor as flat packs,
// PPT per thread, all loaded before any is reduced; the last n % kVec elements (whole rows, fewer
// than a pack), if any, are the first thread past the packs', loaded with them. Needs 16-byte
// aligned x and out.
template <typename T, int ROW, int PPT>
__global__ void __launch_bounds__(256) rms_norm_tiny_kernel(T* __restrict__ out, const T* __restrict__ in,
                                                            const T* __restrict__ weight, int64_t n_packs,
                                                            int64_t n_elems, float inv_hidden, float eps,
                                                            bool trigger) {
  using P = Pack<T>;
  constexpr int kVec = P::kVec;
  constexpr int kTail = kVec - ROW;  // elements of the tail at most
  const int64_t first = static_cast<int64_t>(blockIdx.x) * (256 * PPT) + threadIdx.x;
  const int64_t to_tail = n_packs - first;  // 256 * u for the u at which this thread holds the tail
  const bool has_tail = to_tail >= 0 && to_tail < 256 * PPT && to_tail % 256 == 0;
  const int n_tail = static_cast<int>(n_elems - n_packs * kVec);
  const T* tail = in + n_packs * kVec;
  const uint4* x = reinterpret_cast<const uint4*>(in) + first;
  farm_pdl::wait_for_previous_grid(x, weight);
  float wf[ROW];
#pragma unroll
  for (int k = 0; k < ROW; ++k) wf[k] = to_float(weight[k]);
  uint4 v[PPT];
#pragma unroll
  for (int u = 0; u < PPT; ++u) v[u] = first + u * 256 < n_packs ? __ldcs(x + u * 256) : make_uint4(0u, 0u, 0u, 0u);
  float t[kTail];
#pragma unroll
  for (int k = 0; k < kTail; ++k) t[k] = has_tail && k < n_tail ? to_float(tail[k]) : 0.0f;
  farm_pdl::allow_next_grid(trigger);
#pragma unroll
  for (int u = 0; u < PPT; ++u) {
    const int64_t p = first + u * 256;
    if (p < n_packs) {
      const P& pv = *reinterpret_cast<const P*>(&v[u]);
      P o;
#pragma unroll
      for (int r = 0; r < kVec / ROW; ++r) {
        float ss = 0.0f;
#pragma unroll
        for (int k = 0; k < ROW; ++k) ss += to_float(pv.v[r * ROW + k]) * to_float(pv.v[r * ROW + k]);
        const float rstd = rsqrtf(ss * inv_hidden + eps);
#pragma unroll
        for (int k = 0; k < ROW; ++k) o.v[r * ROW + k] = from_float<T>(to_float(pv.v[r * ROW + k]) * rstd * wf[k]);
      }
      __stcs(reinterpret_cast<uint4*>(out) + p, *reinterpret_cast<const uint4*>(&o));
    } else if (p == n_packs) {  // the tail
      T* y = out + n_packs * kVec;
#pragma unroll
      for (int r = 0; r < kTail / ROW; ++r) {
        if (r * ROW < n_tail) {
          float ss = 0.0f;
#pragma unroll
          for (int k = 0; k < ROW; ++k) ss += t[r * ROW + k] * t[r * ROW + k];
          const float rstd = rsqrtf(ss * inv_hidden + eps);
#pragma unroll
          for (int k = 0; k < ROW; ++k) y[r * ROW + k] = from_float<T>(t[r * ROW + k] * rstd * wf[k]);
        }
      }
    }
  }
}

// 16-bit rows of single elements (odd widths, or a weight off 4-byte alignment), from kFlatFrom
// bytes of x, with x and y 16-byte aligned: x read as one flat array of aligned 16-byte packs,
// whatever rows they cross. A block owns `rpb` whole rows (one contiguous range of x and of y), K packs a thread at most, all loads
// in flight before any is used; the packs at the two ends of the range, which it shares with the
// blocks beside it, are read whole and written element by element (the array's partial last pack
// is read element by element too). A row is at least a pack wide, so a pack meets two rows at
// most: its squares are summed in two parts, the elements in the row of its first element and
// those in the next, into shared memory; `group` lanes add up each row's parts, and each pack is
// scaled with its rows' rstd and the weight, read from shared memory (held there twice over, so
// no index wraps) as a 16-byte vector joined from two. Replaced rms_norm_staged_kernel, which
// staged x itself through shared memory and read it there element by element (4 shared-memory
// passes over x, with bank conflicts that needed rows rotated off each other).
constexpr int kFlatThreads = 256;
constexpr int kFlatLoads = 4;                     // 16-byte packs of x per thread at most
constexpr int kFlatMaxHidden = 256;               // elements; wider rows take the group or rows kernel
constexpr int64_t kFlatFrom = int64_t{6} << 20;   // bytes of x; smaller inputs take the group kernel
constexpr int kFlatNarrow = 160;                  // elements; rows up to this wide take it from kFlatFrom
constexpr int kFlatRowsPerSm = 448;               // rows an SM from which wider rows of the group kernel's take it

// The weight's elements [off, off + 16 / sizeof(T)) from s_w (it twice over), as a 16-byte vector.
template <typename T>
__device__ __forceinline__ uint4 flat_weight(const uint4* s_w, int off) {
  constexpr int E = 16 / sizeof(T);
  const uint4 lo = s_w[off / E], hi = s_w[off / E + 1];
  uint32_t a[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
  const int sh = off % E;
  const int words = sh * static_cast<int>(sizeof(T)) / 4;
#pragma unroll
  for (int i = 0; i < 6; ++i) a[i] = (words & 2) ? a[i + 2] : a[i];
#pragma unroll
  for (int i = 0; i < 5; ++i) a[i] = (words & 1) ? a[i + 1] : a[i];
  if constexpr (sizeof(T) == 2) {
    const unsigned bits = (sh & 1) * 16u;
#pragma unroll
    for (int i = 0; i < 4; ++i) a[i] = __funnelshift_r(a[i], a[i + 1], bits);
  }
  return make_uint4(a[0], a[1], a[2], a[3]);
}

template <typename T, int K>
__global__ void __launch_bounds__(kFlatThreads, 4) rms_norm_flat_kernel(T* __restrict__ out, const T* __restrict__ in,
                                                                        const T* __restrict__ weight, int64_t rows,
                                                                        int hidden, int rpb, int group,
                                                                        float inv_hidden, float eps, bool trigger) {
  using P = Pack<T>;
  constexpr int E = P::kVec;
  __shared__ uint4 s_w[(kFlatMaxHidden + 2 * E) / E + 1];
  __shared__ float s_a[K * kFlatThreads], s_b[K * kFlatThreads];  // each pack's squares, by row
  __shared__ float s_r[K * kFlatThreads + 2];  // rstd of rows -1 .. rpb (the two ends unused)
  const int64_t r0 = static_cast<int64_t>(blockIdx.x) * rpb;
  const int n = static_cast<int>(rows - r0 < rpb ? rows - r0 : rpb);
  const int64_t total = rows * hidden, s = r0 * hidden, t = s + static_cast<int64_t>(n) * hidden;
  const int64_t v0 = s / E, full = total / E;
  const int o = static_cast<int>(s - v0 * E);  // pack j's first element is element j * E - o of the range
  const int nv = static_cast<int>((t + E - 1) / E - v0);
  const uint4* x4 = reinterpret_cast<const uint4*>(in) + v0;
  uint4 r[K];
  farm_pdl::wait_for_previous_grid(x4 + threadIdx.x);
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int j = threadIdx.x + k * kFlatThreads;
    if (j < nv && v0 + j < full) r[k] = __ldcs(x4 + j);
  }
  T* sw = reinterpret_cast<T*>(s_w);
  for (int i = threadIdx.x; i < hidden + 2 * E; i += kFlatThreads) {
    int e = i - (i >= hidden ? hidden : 0);
    e -= e >= hidden ? hidden : 0;
    sw[i] = weight[e];
  }
  farm_pdl::allow_next_grid(trigger);
  int ra[K];  // the row of each pack's first element, in the block's rows (-1: the row before)
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int j = threadIdx.x + k * kFlatThreads;
    const int l = j * E - o;
    ra[k] = __float2int_rd((static_cast<float>(l) + 0.5f) * inv_hidden);
    if (j < nv) {
      if (v0 + j >= full) {  // the array's last pack, partial: element by element, zeros past the end
        P p;
#pragma unroll
        for (int m = 0; m < E; ++m) p.v[m] = (v0 + j) * E + m < total ? in[(v0 + j) * E + m] : from_float<T>(0.0f);
        r[k] = *reinterpret_cast<const uint4*>(&p);
      }
      const int b = (ra[k] + 1) * hidden - l;  // elements of the pack in row ra[k]
      const P& p = *reinterpret_cast<const P*>(&r[k]);
      float sa = 0.0f, sb = 0.0f;
#pragma unroll
      for (int m = 0; m < E; ++m) {
        const float f = to_float(p.v[m]);
        const float fa = m < b ? f : 0.0f, fb = m < b ? 0.0f : f;
        sa += fa * fa;
        sb += fb * fb;
      }
      s_a[j] = sa;
      s_b[j] = sb;
    }
  }
  __syncthreads();
  const int lane = threadIdx.x & (group - 1);
  for (int b0 = 0; b0 < n; b0 += kFlatThreads / group) {  // the same trip count for every lane: shuffles below
    const int row = b0 + static_cast<int>(threadIdx.x) / group;
    float ss = 0.0f;
    if (row < n) {
      const int first = row * hidden + o, p0 = first / E, p1 = (first + hidden - 1) / E;
      const bool starts = first % E == 0;  // pack p0 starts with this row; else its second part is ours
      for (int p = p0 + lane; p <= p1; p += group) ss += p == p0 && !starts ? s_b[p] : s_a[p];
    }
    for (int d = group / 2; d > 0; d >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, d);
    if (row < n && lane == 0) s_r[row + 1] = rsqrtf(ss * inv_hidden + eps);
  }
  __syncthreads();
  uint4* y4 = reinterpret_cast<uint4*>(out) + v0;
  const int end = n * hidden;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int j = threadIdx.x + k * kFlatThreads;
    if (j < nv) {
      const int l = j * E - o;
      const int b = (ra[k] + 1) * hidden - l;
      const float rs_a = s_r[ra[k] + 1], rs_b = s_r[ra[k] + 2];
      const uint4 wv = flat_weight<T>(s_w, l - ra[k] * hidden);
      const P& p = *reinterpret_cast<const P*>(&r[k]);
      const P& pw = *reinterpret_cast<const P*>(&wv);
      P q;
#pragma unroll
      for (int m = 0; m < E; ++m) q.v[m] = from_float<T>(to_float(p.v[m]) * (m < b ? rs_a : rs_b) * to_float(pw.v[m]));
      if (l >= 0 && l + E <= end) {
        __stcs(y4 + j, *reinterpret_cast<const uint4*>(&q));
      } else {
        T* y = out + (v0 + j) * E;
#pragma unroll
        for (int m = 0; m < E; ++m) {
          if (l + m >= 0 && l + m < end) y[m] = q.v[m];
        }
      }
    }
  }
}

// Very wide rows, too few to fill the device even with a cluster of blocks per row: two kernels.
// The first sums the squares of 1/parts of a row per block into partial[row * parts + part]; the
// second (a dependent launch) adds a row's partial sums and writes its part of the row, reading x
// again, its blocks in reverse order: its first blocks re-read the parts the first kernel read last,
// the likeliest to be in L2 still. Each thread keeps kPartialLoads<T, BYTES> loads in flight: 16
// of 16-bit rows' 4-byte units, a block's part in one round of loads, and 4 of others. Predicated
// 2-byte loads wait on each other (see rms_norm_group_kernel), 16 16-byte units a thread, with the
// weight's, hold 128 registers, and fp32 rows of 4-byte units measured slower at 16 than at 4 on
// the H200 (docs/performance.md, the two-kernel path).
template <typename T, int BYTES>
constexpr int kPartialLoads = BYTES == 4 && sizeof(T) == 2 ? 16 : 4;

// This block's part of its row: the row b / parts, and its units [lo, hi), for block b.
struct RowPart {
  int64_t row, lo, hi;
};

__device__ __forceinline__ RowPart row_part(int64_t units, int parts, int64_t chunk, int64_t b) {
  const int64_t row = b / parts;
  const int part = static_cast<int>(b % parts);
  const int64_t lo = part * chunk;
  return {row, lo, lo + chunk < units ? lo + chunk : units};
}

template <typename T, int BYTES>
__global__ void __launch_bounds__(256) rms_norm_partial_kernel(float* __restrict__ partial, const T* __restrict__ in,
                                                               int64_t hidden, int64_t units, int parts,
                                                               int64_t chunk, bool trigger) {
  using U = Unit<T, BYTES>;
  using R = typename U::R;
  __shared__ float scratch[33];
  constexpr int K = kPartialLoads<T, BYTES>;
  const auto [row, lo, hi] = row_part(units, parts, chunk, blockIdx.x);
  const R* x = reinterpret_cast<const R*>(in + row * hidden);
  farm_pdl::wait_for_previous_grid(x + lo + threadIdx.x);
  farm_pdl::allow_next_grid(trigger);
  float ss = 0.0f;
  for (int64_t i = lo + threadIdx.x; i < hi; i += K * 256) {
    R v[K];
#pragma unroll
    for (int c = 0; c < K; ++c) v[c] = i + c * 256 < hi ? x[i + c * 256] : U::zero();
#pragma unroll
    for (int c = 0; c < K; ++c) ss += U::sumsq(v[c]);
  }
  ss = block_sum(ss, scratch);
  if (threadIdx.x == 0) partial[blockIdx.x] = ss;
}

template <typename T, int BYTES>
__global__ void __launch_bounds__(256) rms_norm_apply_kernel(T* __restrict__ out, const T* __restrict__ in,
                                                             const T* __restrict__ weight,
                                                             const float* __restrict__ partial, int64_t hidden,
                                                             int64_t units, int parts, int64_t chunk,
                                                             float inv_hidden, float eps, bool trigger) {
  using U = Unit<T, BYTES>;
  using R = typename U::R;
  __shared__ float scratch[33];
  constexpr int K = kPartialLoads<T, BYTES>;
  const auto [row, lo, hi] = row_part(units, parts, chunk, int64_t{gridDim.x} - 1 - blockIdx.x);
  const R* x = reinterpret_cast<const R*>(in + row * hidden);
  const R* w = reinterpret_cast<const R*>(weight);
  R* y = reinterpret_cast<R*>(out + row * hidden);
  farm_pdl::wait_for_previous_grid(partial + row * parts + threadIdx.x, x + lo + threadIdx.x);
  farm_pdl::allow_next_grid(trigger);
  float s = 0.0f;
  for (int r = threadIdx.x; r < parts; r += 256) s += partial[row * parts + r];
  const float rstd = rsqrtf(block_sum(s, scratch) * inv_hidden + eps);
  for (int64_t i = lo + threadIdx.x; i < hi; i += K * 256) {
    R v[K], wv[K];
#pragma unroll
    for (int c = 0; c < K; ++c) {
      const bool ok = i + c * 256 < hi;
      v[c] = ok ? x[i + c * 256] : U::zero();
      wv[c] = ok ? w[i + c * 256] : U::zero();
    }
#pragma unroll
    for (int c = 0; c < K; ++c) {
      if (i + c * 256 < hi) y[i + c * 256] = U::scale(v[c], wv[c], rstd);
    }
  }
}

int next_pow2(int n) {
  int p = 1;
  while (p < n) p <<= 1;
  return p;
}

// Devices whose memory delivers less than this per SM, in GB/s (2 x memory clock x bus width / SMs;
// an H100 SXM is under it, an H200 over it), stream x at every size: there the evict-last policy,
// which gains on an H200, loses to streaming.
constexpr double kNarrowMemoryGbpsPerSm = 30.0;

// From how many bytes of x the loads take the L2 evict-last policy, looked up once per device:
// 2x L2 (an H100's 50 MiB if L2 cannot be read), or never on narrow-memory devices.
int64_t evict_last_from() {
  static int64_t cache[64] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return int64_t{100} << 20;
  if (cache[dev] == 0) {
    int l2 = 0, sms = 0;
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    const double gbps_per_sm = sms > 0 ? farm_device::peak_memory_gbps(dev) / sms : 0.0;
    const bool narrow = gbps_per_sm > 0.0 && gbps_per_sm < kNarrowMemoryGbpsPerSm;
    cache[dev] = narrow ? INT64_MAX : 2 * (l2 > 0 ? int64_t{l2} : int64_t{50} << 20);
  }
  return cache[dev];
}

// The SM count and compute capability of the current device, looked up once per device.
struct DeviceInfo {
  int sms = 132;
  int major = 9;
  int threads_per_sm = 2048;
};

DeviceInfo device_info() {
  return farm_device::per_device([](int dev) {
    DeviceInfo info;
    cudaDeviceGetAttribute(&info.sms, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceGetAttribute(&info.major, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&info.threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, dev);
    return info;
  });
}

constexpr int kMaxSplit = 8;                    // blocks of a cluster per row: the portable size
constexpr int64_t kMinSplitBytes = 4 << 10;     // of x per block when rows are too few to fill the device
constexpr int64_t kSplitFrom = 48 << 10;        // bytes of a row: narrower rows are not split to fill it
constexpr int64_t kMinPartBytes = 8 << 10;      // of x per block of the two-kernel path
constexpr int kGroupMaxUnits = 256;             // rows of up to this many units take the group kernel
constexpr int kWideGroupRows = 16;             // rows an SM from which fp32 rows of up to 2 * kGroupMaxUnits
                                                // units take the group kernel
constexpr int kWideGroupRows16 = 3;            // the same for 16-bit rows of 4-byte units
constexpr int kWideGroupMaxElems = 384;         // 16-bit rows of single elements up to this wide take it too
constexpr int kWideGroupFitUnits = 12;          // units a lane of those forms, at most, fitted to the row
constexpr int kFourFromRows = 16;              // rows an SM from which rows of 1025..2048 packs take 4 a thread
constexpr int kTwoBlocksFromRows = 5;          // rows an SM from which rows of 2049..4096 packs go 2 blocks an SM
constexpr int64_t kShiftedFrom = int64_t{4} << 20;  // bytes of x for rms_norm_shifted_kernel
constexpr int64_t kShiftedWideFrom = 16 << 10;      // bytes of a row of 8-byte units for it
constexpr int64_t kShifted4From = (2 << 10) + 16;   // bytes of a row of 4-byte units for it: past 2 KB, so
                                                    // that its blocks (rows of 129 packs and more) are 2 warps or more
constexpr int kWarpRows = 8;                        // rows a block of the shifted kernel's warp form
constexpr int kWarpFromRows = 8;                    // rows an SM from which 16-bit rows take that form

// Units of BYTES each thread of rms_norm_rows_kernel holds in registers: for units of 4 bytes or
// less, twice as many where the launch fills the device even so (Plan::deep), half as many where it
// falls short of that even at this count (Plan::shallow).
constexpr int rows_cpt(int bytes) { return bytes == 16 ? 4 : bytes == 8 ? 4 : 8; }

// Threads per block of rms_norm_rows_kernel for `chunk` units at CPT a thread (whole warps).
int64_t rows_threads(int64_t chunk, int cpt) {
  const int64_t want = ((chunk + cpt - 1) / cpt + 31) / 32 * 32;
  return want < kRowsThreads ? want : kRowsThreads;
}

template <typename T, int CPT, bool kHoldWeight = true, int kBoundThreads = kMaxThreads, int kMinBlocks = 0>
void launch_vec(T* out, const T* in, const T* weight, int64_t rows, int packs, int group, int threads, float inv_h,
                float eps, cudaStream_t s, bool pdl) {
  const int64_t rows_per_block = group <= 32 ? threads / group : 1;
  const auto blocks = static_cast<unsigned>((rows + rows_per_block - 1) / rows_per_block);
  const bool evict_last = rows * packs * 16 >= evict_last_from();
  const bool trigger = pdl && farm_pdl::trigger_pays(rows_per_block * packs * 32, blocks);  // x and y
  farm_pdl::launch(evict_last ? rms_norm_vec_kernel<T, CPT, true, kHoldWeight, kBoundThreads, kMinBlocks>
                              : rms_norm_vec_kernel<T, CPT, false, kHoldWeight, kBoundThreads, kMinBlocks>,
                   blocks, threads, s, pdl, out, in, weight, rows, packs, group, inv_h, eps, trigger);
}

// Rows of 16-byte packs of up to kMaxPacks, all in registers (the paths described at the top).
template <typename T>
void launch_packs(T* o, const T* x, const T* w, int64_t rows, int64_t hidden, float inv_h, float eps, cudaStream_t s,
                  bool pdl) {
  constexpr int kVec = 16 / sizeof(T);
  const int packs = static_cast<int>(hidden / kVec);
  if (packs <= 32 && (packs & (packs - 1)) == 0) {
    const int64_t per_block = int64_t{kTileThreads} * kTileLoads;  // packs per block
    const auto blocks = static_cast<unsigned>((rows * packs + per_block - 1) / per_block);
    const bool evict_last = rows * packs * 16 >= evict_last_from();
    const bool trigger = pdl && farm_pdl::trigger_pays(per_block * 32, blocks);
    farm_pdl::launch(evict_last ? rms_norm_tile_kernel<T, true> : rms_norm_tile_kernel<T, false>, blocks,
                     kTileThreads, s, pdl, o, x, w, rows, packs, inv_h, eps, trigger);
    return;
  }
  if (packs <= kWarpPathMaxPacks) {
    // Threads per row: a power of two with up to 4 packs each (3 are rounded up to 4).
    const int group = next_pow2((packs + 3) / 4);
    switch ((packs + group - 1) / group) {
      case 1: launch_vec<T, 1>(o, x, w, rows, packs, group, kWarpPathThreads, inv_h, eps, s, pdl); break;
      case 2: launch_vec<T, 2>(o, x, w, rows, packs, group, kWarpPathThreads, inv_h, eps, s, pdl); break;
      default: launch_vec<T, 4>(o, x, w, rows, packs, group, kWarpPathThreads, inv_h, eps, s, pdl); break;
    }
    return;
  }
  // One block per row, 2 packs a thread; the weight read at the store (an L1/L2 hit) instead of
  // held from the load, with 4 packs a thread, for rows of more than 1024 packs 16 or more an SM,
  // and, on sm_90 (compute capability 9.x), for rows of more than 2048 packs 5 or more an SM bound
  // to 2 blocks an SM: fp32 4 packs a thread in 32 registers, 16-bit dtypes 8 in 64 (bound to 32
  // registers, they spill). With the weight held, 4 packs a thread take 54-56 registers, one
  // block of 1024 threads an SM, which leaves the SM idle between the block's stores and the next
  // block's loads. Fewer rows of more than 2048 packs, and other devices (where the bound is not
  // compiled in, or comes from sm_90 PTX and spills), keep that form: with few rows a launch is
  // one wave, and reading the weight after the reduction adds its latency (rms_norm_rows_kernel,
  // plan_of); the bound is not measured on other devices. Fewer rows of 1025 to 2048 packs keep 2
  // packs a thread for the same reason.
  // Threads of a one-row block (whole warps) at per_thread packs each.
  const auto block = [packs](int per_thread) { return ((packs + per_thread - 1) / per_thread + 31) / 32 * 32; };
  const DeviceInfo dev = device_info();
  const int64_t sms = dev.sms;
  if (packs > 2 * kMaxThreads && dev.major == 9 && rows >= kTwoBlocksFromRows * sms) {
    if constexpr (sizeof(T) == 4) {
      launch_vec<T, 4, false, kMaxThreads, 2>(o, x, w, rows, packs, block(4), block(4), inv_h, eps, s, pdl);
    } else {
      static_assert(kMaxPacks <= 8 * (kMaxThreads / 2), "the 8-pack form is bound to kMaxThreads / 2");
      launch_vec<T, 8, false, kMaxThreads / 2, 2>(o, x, w, rows, packs, block(8), block(8), inv_h, eps, s, pdl);
    }
  } else if (packs > 2 * kMaxThreads) {
    launch_vec<T, 4>(o, x, w, rows, packs, block(4), block(4), inv_h, eps, s, pdl);
  } else if (packs > kMaxThreads && rows >= kFourFromRows * sms) {
    launch_vec<T, 4, false>(o, x, w, rows, packs, block(4), block(4), inv_h, eps, s, pdl);
  } else {
    launch_vec<T, 2>(o, x, w, rows, packs, block(2), block(2), inv_h, eps, s, pdl);
  }
}

enum class Path { kTiny, kFlat, kPacks, kGroup, kRows, kPartials };

// What a launch does, from the shape and the pointers alone (the workspace query and the launch
// agree on it):
//   - kTiny: rows of 2, 4 or 8 bytes, several to a 16-byte pack;
//   - kFlat: 16-bit rows of single elements (odd widths, or a weight off 4-byte alignment), 8 to
//     kFlatMaxHidden elements in kFlatFrom bytes of x or more (rows of kFlatNarrow + 1 to
//     kFlatMaxHidden elements kFlatRowsPerSm or more an SM), x read as a flat array of 16-byte
//     packs (16-byte aligned x and y);
//   - kPacks: rows of 16-byte packs held in registers by the tuned paths at the top, unless the
//     rows are too few to fill the device and kSplitFrom bytes or wider;
//   - kGroup: other short rows (up to kGroupMaxUnits units of `bytes`; rows of up to twice that
//     many 4-byte units: fp32 ones kWideGroupRows or more an SM, 16-bit ones the warp form leaves,
//     kWideGroupRows16 or more an SM; 16-bit rows of kGroupMaxUnits + 1 to kWideGroupMaxElems
//     single elements kWarpFromRows or more an SM);
//   - kRows: `looped`: rows of 16-byte packs beyond kMaxPacks, as many as the SMs or more, a block a
//     row reading the row twice; else a block per row, or a cluster of `split` (sm_90 and later)
//     when a row is more than a block holds in registers or the rows, kSplitFrom bytes or wider, are
//     too few to give every SM about two blocks; `shifted`:
//     rows of smaller units read in 16-byte packs from each row's first 16-byte boundary, `warp`: a
//     warp a row;
//   - kPartials: wider still (more than kMaxSplit blocks per row): two kernels, `parts` blocks per
//     row, meeting in a workspace of rows * parts floats.
struct Plan {
  Path path = Path::kPacks;
  int bytes = 16;
  int split = 1;
  int parts = 0;
  bool deep = false;     // kRows: 2 * rows_cpt(bytes) units a thread
  bool shallow = false;  // kRows: rows_cpt(bytes) / 2 units a thread, a block per row
  bool shifted = false;  // kRows: rows of elements read in 16-byte packs (rms_norm_shifted_kernel)
  bool warp = false;     // shifted: a warp a row, kWarpRows rows a block (its warp form)
  bool looped = false;   // kRows: a block a row reading the row twice (rms_norm_looped_kernel)
};

Plan plan_of(int elem, uintptr_t out, uintptr_t in, uintptr_t weight, int64_t rows, int64_t hidden) {
  Plan p;
  const int64_t row_bytes = hidden * elem;
  const uintptr_t addresses = out | in | weight;
  if (row_bytes < 16 && 16 % row_bytes == 0 && ((out | in) & 15u) == 0) {
    p.path = Path::kTiny;
    return p;
  }
  p.bytes = elem;
  for (int b : {16, 8, 4}) {
    if (b > elem && row_bytes % b == 0 && addresses % b == 0) {
      p.bytes = b;
      break;
    }
  }
  const int64_t units = row_bytes / p.bytes;
  const DeviceInfo dev = device_info();
  const bool few = dev.major >= 9 && rows < dev.sms;
  // Rows too few to give every SM a block, 48 KB or wider: `fill` blocks a row (a cluster, or the
  // two-kernel path), 4 KB of x each at least. Narrower rows keep a block each: the cluster's
  // synchronisation costs more than the split saves. Wider rows need the split, and blocks of a few KB
  // (4 KB at least) fill more SMs than blocks of 16 or 32 KB. Rows the shifted kernel takes
  // (below) keep the split from 4 KB (`spread`), the form it is tuned for.
  int64_t spread = 1;
  if (few) {
    spread = (2 * dev.sms + rows - 1) / rows;
    if (spread > row_bytes / kMinSplitBytes) spread = row_bytes / kMinSplitBytes;
    if (spread < 1) spread = 1;
  }
  const int64_t fill = row_bytes >= kSplitFrom ? spread : 1;
  // Flat: odd 16-bit rows of 8 to 256 elements from kFlatFrom bytes of x read as aligned 16-byte
  // packs, where the group kernel loads them element by element. Smaller inputs, which fill the
  // device with fewer blocks, are faster on the group kernel, and so are wider rows (below). Rows
  // of kFlatNarrow + 1 to kFlatMaxHidden elements stay on the group kernel below
  // kFlatRowsPerSm rows an SM, where it is the faster (H200: docs/performance.md). Rows of 4- or
  // 8-byte units already load whole units and keep their kernels: on 16-bit rows of 4-byte units
  // of 10 to 40 elements the group kernel is faster than the flat one.
  const int64_t x_bytes = rows * row_bytes;
  const bool flat_rows = hidden <= kFlatNarrow || rows >= int64_t{kFlatRowsPerSm} * dev.sms;
  if (p.bytes == 2 && x_bytes >= kFlatFrom && ((in | out) & 15u) == 0 && hidden >= 8 && hidden <= kFlatMaxHidden &&
      flat_rows && fill == 1) {
    p.path = Path::kFlat;
    return p;
  }
  if (p.bytes == 16 && units <= kMaxPacks && fill == 1) {
    p.path = Path::kPacks;
    return p;
  }
  // 16-bit rows of kGroupMaxUnits + 1 to kWideGroupMaxElems single elements, kWarpFromRows or more
  // an SM: the group kernel at a warp a row, the fewest elements a lane that hold the row (9 to
  // 12), at any alignment. Both the flat kernel and the warp form below, which read 16-byte packs,
  // were slower on them (H200: docs/performance.md); fewer rows keep the rows kernel.
  if (p.bytes == 2 && units > kGroupMaxUnits && units <= kWideGroupMaxElems &&
      rows >= int64_t{kWarpFromRows} * dev.sms && fill == 1) {
    p.path = Path::kGroup;
    return p;
  }
  // 16-bit rows of more than kWideGroupMaxElems single elements or more than kGroupMaxUnits 4-byte
  // units that fit a warp's registers (rows_cpt(16) packs a lane), kWarpFromRows or more an SM, x and y alike modulo 16 bytes and the
  // weight 16-byte aligned: a warp a row in 16-byte packs (the shifted kernel's warp form), where
  // the rows kernel would give each row a block of one to four warps in 2- or 4-byte units (an SM
  // holds 32 blocks: with blocks of one warp, half its threads). Rows of 4-byte units from
  // kShiftedFrom bytes of x; smaller inputs of those are as fast on the group kernel below.
  const bool shift_ok = ((out ^ in) & 15u) == 0 && (weight & 15u) == 0;
  if (elem == 2 && p.bytes <= 4 && units > kGroupMaxUnits && row_bytes <= int64_t{32} * rows_cpt(16) * 16 &&
      rows >= int64_t{kWarpFromRows} * dev.sms && shift_ok && fill == 1 && (p.bytes == 2 || x_bytes >= kShiftedFrom)) {
    p.path = Path::kRows;
    p.bytes = 16;
    p.shifted = true;
    p.warp = true;
    return p;
  }
  // Rows of 257 to 512 4-byte units (odd fp32 widths, 16-bit widths of 2 modulo 4 elements): the
  // group kernel too, a warp a row at 9 to 12 or 16 units a lane, where the rows kernel would give a row one
  // or two warps at 8 units a thread and synchronise them through shared memory. fp32 rows take it
  // kWideGroupRows or more an SM, 16-bit rows kWideGroupRows16 or more (as fast as the rows kernel
  // at 400 rows, faster from 1000); with fewer the rows kernel's smaller blocks spread the rows over
  // more SMs (18 rows: 8 a block would leave all but 3 SMs idle). One row a warp is faster than 2.
  const bool wide_group = p.bytes == 4 && units <= 2 * kGroupMaxUnits &&
                          rows >= (elem == 2 ? kWideGroupRows16 : kWideGroupRows) * int64_t{dev.sms};
  if (p.bytes < 16 && (units <= kGroupMaxUnits || wide_group) && fill == 1) {
    p.path = Path::kGroup;
    return p;
  }
  // Units of 4 bytes or less: 16 a thread (twice rows_cpt) where the blocks, fewer or smaller for
  // it, still bring as many threads as the SMs hold at once (two waves or more of the 16-unit
  // kernel, which fits half as many): more bytes in flight per thread on wide rows. Rows whose
  // smaller blocks would leave SMs idle keep 8 (or take 4: Plan::shallow).
  // Blocks per row at `cpt` units a thread: as many as the row needs or `at_least`, whichever is
  // more.
  const auto split_at = [&](int cpt, int64_t at_least) {
    const int64_t cap = int64_t{kRowsThreads} * cpt * p.bytes;  // bytes a block holds
    const int64_t need = (row_bytes + cap - 1) / cap;
    return need > at_least ? need : at_least;
  };
  if (p.bytes <= 4) {
    const int deep = 2 * rows_cpt(p.bytes);
    const int64_t split = dev.major < 9 ? 1 : split_at(deep, fill);
    if (split <= kMaxSplit) {
      const int64_t threads = rows_threads((units + split - 1) / split, deep);
      // Not with blocks of a single warp: an SM holds 32 blocks, so they would leave it half its
      // threads.
      p.deep = rows * split * threads >= int64_t{dev.sms} * dev.threads_per_sm && threads >= 64;
    }
  }
  int64_t split = split_at(rows_cpt(p.bytes) * (p.deep ? 2 : 1), fill);
  p.path = Path::kRows;
  if (dev.major < 9) {
    split = 1;  // no clusters: a block per row, long rows read twice
  } else if (split > kMaxSplit) {
    int64_t parts = split;
    if (parts > row_bytes / kMinPartBytes) parts = row_bytes / kMinPartBytes;
    if (parts > kMaxSplit) {
      p.path = Path::kPartials;
      p.parts = static_cast<int>(parts);
      return p;
    }
    split = kMaxSplit;
  }
  // Rows of 16-byte packs beyond kMaxPacks that need no split to fill the device (as many as the
  // SMs or more), up to kMaxSplit blocks' worth: the looped kernel, a block a row reading the row
  // twice, which streams where the cluster's blocks wait for each other (H100, fp32 666x25152:
  // docs/performance.md). On sm_90 and later wider rows take the two-kernel path above; before
  // sm_90 (no clusters, no two-kernel path) every such row takes the looped kernel.
  if (p.bytes == 16 && fill == 1) {
    p.looped = true;
    return p;
  }
  if (split <= 3 && p.bytes >= 8 && rows >= 4 * int64_t{dev.sms}) {
    // Units of 8 bytes (16-byte ones got here only with rows fewer than the SMs), rows for several
    // waves, 2 or 3 blocks a row: a block per row, the rest of the row read twice (from L2), is
    // faster than the cluster, whose blocks wait for each other. With fewer rows, more blocks a row
    // or smaller units the cluster is faster.
    split = 1;
  }
  p.split = static_cast<int>(split);
  // Units of 4 bytes or less in a block per row whose threads, even at rows_cpt units each, would
  // not fill the SMs once: 4 units a thread, twice the threads, for half the loads each on the
  // critical path of a launch bound by latency. Where the launch does fill the device, 8 units a
  // thread are faster.
  p.shallow = p.bytes <= 4 && !p.deep && split == 1 && units <= int64_t{kRowsThreads} * 4 &&
              rows * rows_threads(units, rows_cpt(p.bytes)) < int64_t{dev.sms} * dev.threads_per_sm;
  // Rows of smaller units for the rows kernel, x and y alike modulo 16 bytes and the weight 16-byte
  // aligned: 16-byte packs from each row's first 16-byte boundary (rms_norm_shifted_kernel),
  // planned as rows of 16-byte packs (rows for the two-kernel path stay there). From 4 MB of x,
  // for rows of single 16-bit elements, of 4-byte units past 2 KB and of 8-byte units 16 KB or
  // wider, enough to fill the device: a warp's load then moves 512 bytes where single 2-byte units
  // move 64. Smaller inputs keep their kernels (they wait on the weight's loads after the
  // reduction), and so do rows of 4- or 8-byte units narrower or fewer: rows of 8-byte units of 2
  // to 16 KB are faster on the rows kernel in fp32 at the sizes measured and in 16-bit up to about
  // 24 MiB of x; rows of 4-byte units from 2 KB were faster shifted on 20 of 21 shapes of 5 to 96
  // MiB (H200: docs/performance.md). The shift is a template argument of the stores
  // only (store_shifted): a form with the whole kernel in one copy per shift is far slower on rows
  // by the thousand.
  if (p.bytes < 16 && ((out ^ in) & 15u) == 0 && (weight & 15u) == 0 && x_bytes >= kShiftedFrom &&
      (p.bytes == 2 || (row_bytes >= (p.bytes == 4 ? kShifted4From : kShiftedWideFrom) && spread == 1)) &&
      hidden <= INT32_MAX) {
    p.shifted = true;
    p.bytes = 16;
    p.deep = false;
    p.shallow = false;
    split = dev.major < 9 ? 1 : split_at(rows_cpt(16), spread);
    if (split > kMaxSplit) split = kMaxSplit;
    if (split <= 3 && rows >= 4 * int64_t{dev.sms}) split = 1;  // as for 8-byte units above
    p.split = static_cast<int>(split);
  }
  return p;
}

template <typename T, int BYTES>
void launch_partials(T* out, const T* in, const T* weight, float* partial, int64_t rows, int64_t hidden, int parts,
                     float inv_h, float eps, cudaStream_t s, bool pdl) {
  const int64_t units = hidden / Unit<T, BYTES>::kVec;
  const int64_t chunk = (units + parts - 1) / parts;
  const auto blocks = static_cast<unsigned>(rows * parts);
  const bool trigger = pdl && farm_pdl::trigger_pays(chunk * BYTES, blocks);
  farm_pdl::launch(rms_norm_partial_kernel<T, BYTES>, blocks, 256, s, pdl, partial, in, hidden, units, parts, chunk,
                   trigger);
  farm_pdl::launch(rms_norm_apply_kernel<T, BYTES>, blocks, 256, s, pdl, out, in, weight,
                   static_cast<const float*>(partial), hidden, units, parts, chunk, inv_h, eps,
                   pdl && farm_pdl::trigger_pays(2 * chunk * BYTES, blocks));
}

template <typename T, int BYTES, int UPT, int RPT>
void launch_group(T* out, const T* in, const T* weight, int64_t rows, int64_t hidden, int group, float inv_h,
                  float eps, cudaStream_t s, bool pdl) {
  const int units = static_cast<int>(hidden / Unit<T, BYTES>::kVec);
  if constexpr (UPT > 2) group = 32;  // rows of more than 64 units: a warp a row (launch_units gives 32)
  const int64_t per_block = int64_t{RPT} * (256 / group);
  const auto blocks = static_cast<unsigned>((rows + per_block - 1) / per_block);
  const bool trigger = pdl && farm_pdl::trigger_pays(2 * per_block * units * BYTES, blocks);
  const auto launch = [&](auto kernel) {
    farm_pdl::launch(kernel, blocks, 256, s, pdl, out, in, weight, rows, units, inv_h, eps, trigger);
  };
  // launch_units passes a power of two from 2 to 32. 8-byte units never halve their group, so theirs
  // is 32 wherever a lane takes 2 units (rows of 33 to 64), and rows of 3 units a lane or more are
  // a warp's: no other form of those is compiled.
  if constexpr (UPT > 2 || (BYTES == 8 && UPT == 2)) {
    launch(rms_norm_group_kernel<T, BYTES, UPT, RPT, 32>);
  } else {
    switch (group) {
      case 2: launch(rms_norm_group_kernel<T, BYTES, UPT, RPT, 2>); break;
      case 4: launch(rms_norm_group_kernel<T, BYTES, UPT, RPT, 4>); break;
      case 8: launch(rms_norm_group_kernel<T, BYTES, UPT, RPT, 8>); break;
      case 16: launch(rms_norm_group_kernel<T, BYTES, UPT, RPT, 16>); break;
      default: launch(rms_norm_group_kernel<T, BYTES, UPT, RPT, 32>); break;  // 32
    }
  }
}

// rms_norm_group_kernel at a warp a row, UPT the first form from UPT up that holds `upt` units a
// lane (3 to 8; past 8, 9 to kWideGroupFitUnits, then 16), at most kTop, and `rpt` rows a thread
// (2 only in forms of up to 8 units a lane): rows of more than 64 units, whose group is a warp.
// Rows of 65 to 256 units of 4 or 8 bytes climb from 3 to 8, odd 16-bit rows of 129 to 192
// elements from 5 to 6, rows of 257 to 512 4-byte units from 9 to 16, rows of 257 to
// kWideGroupMaxElems elements from 9 to kWideGroupFitUnits: no other form is compiled.
template <typename T, int BYTES, int UPT, int kTop>
void launch_group_fit(int upt, int rpt, T* out, const T* in, const T* weight, int64_t rows, int64_t hidden,
                      float inv_h, float eps, cudaStream_t s, bool pdl) {
  if constexpr (UPT < kTop) {
    if (upt > UPT) {
      constexpr int kNext = UPT < kWideGroupFitUnits ? UPT + 1 : 16;
      launch_group_fit<T, BYTES, kNext, kTop>(upt, rpt, out, in, weight, rows, hidden, inv_h, eps, s, pdl);
      return;
    }
  }
  if constexpr (UPT <= 8) {
    if (rpt == 2) {
      launch_group<T, BYTES, UPT, 2>(out, in, weight, rows, hidden, 32, inv_h, eps, s, pdl);
      return;
    }
  }
  launch_group<T, BYTES, UPT, 1>(out, in, weight, rows, hidden, 32, inv_h, eps, s, pdl);
}

// rms_norm_rows_kernel<T, BYTES, CPT> (rms_norm_shifted_kernel<T, CPT, kWarp> if kShifted, BYTES 16)
// with `split` blocks per row (a cluster when > 1; kWarp: split 1, a warp a row, kWarpRows rows a
// block). False if the launch failed (a cluster the device
// cannot place): the error is cleared for the caller.
template <typename T, int BYTES, int CPT, bool kShifted = false, bool kWarp = false>
bool launch_rows_split(T* out, const T* in, const T* weight, int64_t rows, int64_t hidden, int split, float inv_h,
                       float eps, cudaStream_t s, bool pdl) {
  const int64_t units = hidden / Unit<T, BYTES>::kVec;
  const int64_t chunk = (units + split - 1) / split;
  static_assert(!kWarp || kShifted, "the warp form is the shifted kernel's");
  const int threads = kWarp ? 32 * kWarpRows : static_cast<int>(rows_threads(chunk, CPT));
  const int64_t blocks = kWarp ? (rows + kWarpRows - 1) / kWarpRows : rows * split;
  const bool trigger = pdl && farm_pdl::trigger_pays(2 * chunk * BYTES * (kWarp ? kWarpRows : 1), blocks);
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(blocks));
  config.blockDim = dim3(threads);
  config.stream = s;
  cudaLaunchAttribute attribute[2];
  int n = 0;
  if (split > 1) {
    attribute[n].id = cudaLaunchAttributeClusterDimension;
    attribute[n].val.clusterDim.x = split;
    attribute[n].val.clusterDim.y = 1;
    attribute[n].val.clusterDim.z = 1;
    ++n;
  }
  if (pdl) {
    attribute[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[n].val.programmaticStreamSerializationAllowed = 1;
    ++n;
  }
  config.attrs = attribute;
  config.numAttrs = n;
  const auto kernel = [] {
    if constexpr (kShifted) {
      return rms_norm_shifted_kernel<T, CPT, kWarp>;
    } else {
      return rms_norm_rows_kernel<T, BYTES, CPT>;
    }
  }();
  const cudaError_t err =
      cudaLaunchKernelEx(&config, kernel, out, in, weight, rows, hidden, units, split, chunk, inv_h, eps, trigger);
  if (err != cudaSuccess && split > 1) {
    cudaGetLastError();
    return false;
  }
  return true;
}

// rms_norm_looped_kernel<T, BYTES>: a block of kLoopedThreads a row.
template <typename T, int BYTES>
void launch_looped(T* out, const T* in, const T* weight, int64_t rows, int64_t hidden, float inv_h, float eps,
                   cudaStream_t s, bool pdl) {
  const int64_t units = hidden / Unit<T, BYTES>::kVec;
  const auto blocks = static_cast<unsigned>(rows);
  const bool trigger = pdl && farm_pdl::trigger_pays(2 * units * BYTES, blocks);
  farm_pdl::launch(rms_norm_looped_kernel<T, BYTES>, blocks, kLoopedThreads, s, pdl, out, in, weight, hidden, units,
                   inv_h, eps, trigger);
}

static_assert(kWideGroupMaxElems <= 32 * kWideGroupFitUnits, "rows of single elements fit the fitted forms");
static_assert(kFlatMaxHidden <= kGroupMaxUnits, "the flat kernel's rows and the warp-a-row group rule do not meet");

template <typename T, int BYTES>
void launch_units(T* o, const T* x, const T* w, float* partial, int64_t rows, int64_t hidden, const Plan& p,
                  float inv_h, float eps, cudaStream_t s, bool pdl) {
  constexpr int kCpt = rows_cpt(BYTES);
  if (p.path == Path::kGroup && BYTES < 16) {  // plan_of gives 16-byte rows the packs path
    const int units = static_cast<int>(hidden / Unit<T, BYTES>::kVec);
    int group = next_pow2(units < 32 ? units : 32);
    // Rows of 32 units or less, of 4 bytes or less: half the lanes a row, about two units each,
    // where that still brings one resident wave of threads or more. Fewer lanes issue fewer instructions a byte
    // (shuffles, row arithmetic, idle lanes of rows short of a power of two). With 8-byte units,
    // or rows too few to fill the device, the full group is faster.
    if (BYTES <= 4 && units <= 32 && group > 1 &&
        rows * (group / 2) >= int64_t{device_info().sms} * device_info().threads_per_sm) {
      group /= 2;  // next_pow2((units + 1) / 2): upt 2 at most
    }
    // Rows of one unit (2-, 4- or 8-byte rows off 16-byte alignment) take 2 lanes, one idle, and so
    // do rows of 2 units that halved to one lane: one compiled form of rms_norm_group_kernel fewer.
    if (group < 2) group = 2;
    if constexpr (BYTES == 4 || BYTES == 2) {
      // Rows of 257 to 512 4-byte units or 257 to 384 elements (plan_of): a warp a row, the fewest
      // units a lane that hold it up to kWideGroupFitUnits, else 16. Lanes past the row's end load
      // its last unit again and add nothing: at 16 units a lane, rows of 257 to 384 units would
      // waste a quarter to a half of the warp's loads (docs/performance.md).
      if (units > kGroupMaxUnits) {
        constexpr int kTop = BYTES == 2 ? kWideGroupFitUnits : 16;  // plan_of gives 2-byte rows up to 384
        launch_group_fit<T, BYTES, 9, kTop>((units + 31) / 32, 1, o, x, w, rows, hidden, inv_h, eps, s, pdl);
        return;
      }
    }
    const int upt = (units + group - 1) / group;
    // 4 to 8 units in flight per thread (UPT of each of RPT rows), but fewer rows per thread while
    // the blocks would not give every SM two: more blocks spread a small input over more SMs.
    const int64_t slice = 256 / group;  // rows of a block per RPT
    const int64_t enough = 2 * int64_t{device_info().sms};
    int rpt = upt <= 2 ? 4 : upt <= 4 ? 2 : 1;
    while (rpt > 1 && (rows + rpt * slice - 1) / (rpt * slice) < enough) rpt /= 2;
    const int64_t wave = int64_t{device_info().sms} * device_info().threads_per_sm / 256;  // blocks resident at once
    // 2-byte units (odd 16-bit rows): twice the rows a thread where the blocks still bring one
    // resident wave, for as many bytes in flight as 4-byte units get; with fewer blocks the SMs
    // would idle. From kFlatFrom bytes of x most such rows take the flat kernel instead.
    if constexpr (BYTES == 2) {
      if (upt >= 2 && (rows + 2 * rpt * slice - 1) / (2 * rpt * slice) >= wave) {
        // rpt is still its first value (4, 2, 1 for upt 2, 4, 8): a smaller one left fewer blocks
        // than this needs. upt 1 never gets here: its rows halve their lanes first (upt 2).
        // Rows of 129 to 192 elements take 5 or 6 a lane, the fewest that hold them: at 8 a lane a
        // quarter or more of the loads would be clamped ones that count for nothing, and these rows
        // are bound by instruction issue. At 7 a lane the two forms were mixed (docs/performance.md).
        if (upt == 2) launch_group<T, BYTES, 2, 8>(o, x, w, rows, hidden, group, inv_h, eps, s, pdl);
        else if (upt <= 4) launch_group<T, BYTES, 4, 4>(o, x, w, rows, hidden, group, inv_h, eps, s, pdl);
        else if (upt <= 6) launch_group_fit<T, BYTES, 5, 6>(upt, 2, o, x, w, rows, hidden, inv_h, eps, s, pdl);
        else launch_group<T, BYTES, 8, 2>(o, x, w, rows, hidden, group, inv_h, eps, s, pdl);
        return;
      }
    }
    if constexpr (BYTES < 16) {
      if (upt == 1) {
        if (rpt == 4) launch_group<T, BYTES, 1, 4>(o, x, w, rows, hidden, group, inv_h, eps, s, pdl);
        else if (rpt == 2) launch_group<T, BYTES, 1, 2>(o, x, w, rows, hidden, group, inv_h, eps, s, pdl);
        else launch_group<T, BYTES, 1, 1>(o, x, w, rows, hidden, group, inv_h, eps, s, pdl);
      } else if (upt == 2) {
        // 16-bit rows of up to 32 4-byte units (widths of 2 modulo 4 up to 62 elements, or rows off
        // 8-byte alignment), their group halved: 8 rows a thread, as odd rows take above, where
        // those blocks still bring one resident wave. With fewer blocks 8 rows were as often slower
        // as faster on the H200 (docs/performance.md), so those rows keep the rpt chosen above.
        if constexpr (BYTES == 4 && sizeof(T) == 2) {
          if (units <= 32 && (rows + 8 * slice - 1) / (8 * slice) >= wave) {
            launch_group<T, BYTES, 2, 8>(o, x, w, rows, hidden, group, inv_h, eps, s, pdl);
            return;
          }
        }
        if (rpt == 4) launch_group<T, BYTES, 2, 4>(o, x, w, rows, hidden, group, inv_h, eps, s, pdl);
        else if (rpt == 2) launch_group<T, BYTES, 2, 2>(o, x, w, rows, hidden, group, inv_h, eps, s, pdl);
        else launch_group<T, BYTES, 2, 1>(o, x, w, rows, hidden, group, inv_h, eps, s, pdl);
      } else if constexpr (BYTES == 2) {
        if (upt <= 4) {
          if (rpt == 2) launch_group<T, BYTES, 4, 2>(o, x, w, rows, hidden, group, inv_h, eps, s, pdl);
          else launch_group<T, BYTES, 4, 1>(o, x, w, rows, hidden, group, inv_h, eps, s, pdl);
        } else if (upt <= 6) {  // 129 to 192 elements: 5 or 6 a lane, as in the two-rows form above
          launch_group_fit<T, BYTES, 5, 6>(upt, 1, o, x, w, rows, hidden, inv_h, eps, s, pdl);
        } else {
          launch_group<T, BYTES, 8, 1>(o, x, w, rows, hidden, group, inv_h, eps, s, pdl);
        }
      } else {
        // Rows of 65 to 256 units of 4 or 8 bytes: the fewest units a lane that hold the row (3 to 8, where 4 or
        // 8 would have lanes load clamped units that count for nothing), and rows of 5 units a lane or more 2 to a
        // thread where the blocks are still as many as the SMs hold at full occupancy (these forms hold fewer).
        // Fewer units a lane waste no loads on units past the row's end. 2 rows a thread at 5 to 8 units a lane
        // gain nothing measurable over 1 (docs/performance.md): a candidate to drop, with its compiled forms,
        // once the GPU tests run on that change.
        const bool two = upt > 4 && (rows + 2 * slice - 1) / (2 * slice) >= wave;
        launch_group_fit<T, BYTES, 3, 8>(upt, two ? 2 : rpt, o, x, w, rows, hidden, inv_h, eps, s, pdl);
      }
    }
  } else if (p.path == Path::kPartials && partial != nullptr) {
    launch_partials<T, BYTES>(o, x, w, partial, rows, hidden, p.parts, inv_h, eps, s, pdl);
  } else {
    const int split = p.path == Path::kPartials ? kMaxSplit : p.split;
    if constexpr (BYTES == 16) {
      if (p.looped) {
        launch_looped<T, BYTES>(o, x, w, rows, hidden, inv_h, eps, s, pdl);
        return;
      }
      if constexpr (sizeof(T) == 2) {  // plan_of gives the warp form 16-bit rows only
        if (p.warp) {
          launch_rows_split<T, BYTES, kCpt, true, true>(o, x, w, rows, hidden, 1, inv_h, eps, s, pdl);
          return;
        }
      }
      if (p.shifted) {
        if (!launch_rows_split<T, BYTES, kCpt, true>(o, x, w, rows, hidden, split, inv_h, eps, s, pdl)) {
          launch_rows_split<T, BYTES, kCpt, true>(o, x, w, rows, hidden, 1, inv_h, eps, s, pdl);
        }
        return;
      }
    }
    if constexpr (BYTES <= 4) {
      if (p.shallow) {  // split == 1: the row fits the block
        launch_rows_split<T, BYTES, rows_cpt(BYTES) / 2>(o, x, w, rows, hidden, 1, inv_h, eps, s, pdl);
        return;
      }
      if (p.deep) {
        if (!launch_rows_split<T, BYTES, 2 * kCpt>(o, x, w, rows, hidden, split, inv_h, eps, s, pdl)) {
          launch_rows_split<T, BYTES, 2 * kCpt>(o, x, w, rows, hidden, 1, inv_h, eps, s, pdl);
        }
        return;
      }
    }
    if (!launch_rows_split<T, BYTES, kCpt>(o, x, w, rows, hidden, split, inv_h, eps, s, pdl)) {
      launch_rows_split<T, BYTES, kCpt>(o, x, w, rows, hidden, 1, inv_h, eps, s, pdl);
    }
  }
}

template <typename T>
void launch_tiny(T* o, const T* x, const T* w, int64_t rows, int64_t hidden, float inv_h, float eps, cudaStream_t s,
                 bool pdl) {
  constexpr int kVec = 16 / sizeof(T);
  constexpr int kPpt = 2;
  const int64_t n = rows * hidden;
  const int64_t n_packs = n / kVec;
  const auto blocks = static_cast<unsigned>((n_packs + 1 + 256 * kPpt - 1) / (256 * kPpt));
  // Grids of up to 1024 blocks trigger whatever they move, and the blocks of larger ones move 16 KB
  // each (x and y), past the 6 KB from which a block's trigger pays (pdl.cuh).
  const bool trigger = pdl && farm_pdl::trigger_pays(int64_t{256} * kPpt * 32, blocks);
  switch (hidden) {
    case 1:
      farm_pdl::launch(rms_norm_tiny_kernel<T, 1, kPpt>, blocks, 256, s, pdl, o, x, w, n_packs, n, inv_h, eps, trigger);
      break;
    case 2:
      farm_pdl::launch(rms_norm_tiny_kernel<T, 2, kPpt>, blocks, 256, s, pdl, o, x, w, n_packs, n, inv_h, eps, trigger);
      break;
    default:
      if constexpr (sizeof(T) == 2) {
        farm_pdl::launch(rms_norm_tiny_kernel<T, 4, kPpt>, blocks, 256, s, pdl, o, x, w, n_packs, n, inv_h, eps,
                         trigger);
      }
      break;
  }
}

// Rows per block: as many whole rows as kFlatLoads packs a thread cover; lanes per row: the most, up
// to a warp, that still give every row lanes in one pass.
template <typename T>
void launch_flat(T* o, const T* x, const T* w, int64_t rows, int64_t hidden, float inv_h, float eps, cudaStream_t s,
                 bool pdl) {
  constexpr int E = 16 / sizeof(T);
  const int64_t fit = (int64_t{kFlatLoads} * kFlatThreads * E - (E - 1)) / hidden;
  const int rpb = static_cast<int>(fit < rows ? fit : rows);
  int group = 1;
  while (group < 32 && 2 * group * rpb <= kFlatThreads) group *= 2;
  const auto blocks = static_cast<unsigned>((rows + rpb - 1) / rpb);
  const bool trigger = pdl && farm_pdl::trigger_pays(2 * rpb * hidden * static_cast<int64_t>(sizeof(T)), blocks);
  farm_pdl::launch(rms_norm_flat_kernel<T, kFlatLoads>, blocks, kFlatThreads, s, pdl, o, x, w, rows,
                   static_cast<int>(hidden), rpb, group, inv_h, eps, trigger);
}

template <typename T>
void launch_typed(void* out, const void* in, const void* weight, float* partial, int64_t rows, int64_t hidden,
                  float eps, cudaStream_t s, bool pdl) {
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(in);
  const auto* w = static_cast<const T*>(weight);
  const float inv_h = 1.0f / static_cast<float>(hidden);
  const Plan p = plan_of(sizeof(T), reinterpret_cast<uintptr_t>(out), reinterpret_cast<uintptr_t>(in),
                         reinterpret_cast<uintptr_t>(weight), rows, hidden);
  if (p.path == Path::kTiny) {
    launch_tiny<T>(o, x, w, rows, hidden, inv_h, eps, s, pdl);
  } else if (p.path == Path::kFlat) {
    if constexpr (sizeof(T) == 2) launch_flat<T>(o, x, w, rows, hidden, inv_h, eps, s, pdl);
  } else if (p.path == Path::kPacks) {
    launch_packs<T>(o, x, w, rows, hidden, inv_h, eps, s, pdl);
  } else if (p.bytes == 16) {
    launch_units<T, 16>(o, x, w, partial, rows, hidden, p, inv_h, eps, s, pdl);
  } else if (p.bytes == 8) {
    launch_units<T, 8>(o, x, w, partial, rows, hidden, p, inv_h, eps, s, pdl);
  } else if (p.bytes == 4) {
    launch_units<T, 4>(o, x, w, partial, rows, hidden, p, inv_h, eps, s, pdl);
  } else if constexpr (sizeof(T) == 2) {
    launch_units<T, 2>(o, x, w, partial, rows, hidden, p, inv_h, eps, s, pdl);
  }
}

// Every rms_norm launch, with or without the PDL attribute (pdl.cuh).
int launch_with(DType dtype, void* out, const void* in, const void* weight, float* partial, int64_t rows,
                int64_t hidden, float eps, cudaStream_t s, bool pdl) {
  if (rows <= 0 || hidden <= 0) return 0;
  switch (dtype) {
    case DType::kFloat32: launch_typed<float>(out, in, weight, partial, rows, hidden, eps, s, pdl); break;
    case DType::kFloat16: launch_typed<__half>(out, in, weight, partial, rows, hidden, eps, s, pdl); break;
    case DType::kBFloat16: launch_typed<__nv_bfloat16>(out, in, weight, partial, rows, hidden, eps, s, pdl); break;
  }
  return static_cast<int>(cudaGetLastError());
}

int element_size(DType dtype) { return dtype == DType::kFloat32 ? 4 : 2; }

}  // namespace

int64_t rms_norm_workspace_floats(DType dtype, const void* out, const void* in, const void* weight, int64_t rows,
                                  int64_t hidden) {
  if (rows <= 0 || hidden <= 0) return 0;
  const Plan p = plan_of(element_size(dtype), reinterpret_cast<uintptr_t>(out), reinterpret_cast<uintptr_t>(in),
                         reinterpret_cast<uintptr_t>(weight), rows, hidden);
  return p.path == Path::kPartials ? rows * p.parts : 0;
}

int launch_rms_norm(DType dtype, void* out, const void* in, const void* weight, int64_t rows, int64_t hidden,
                    float eps, void* stream, float* workspace) {
  return launch_with(dtype, out, in, weight, workspace, rows, hidden, eps, static_cast<cudaStream_t>(stream),
                     farm_pdl::enabled());
}

}  // namespace rms_norm
