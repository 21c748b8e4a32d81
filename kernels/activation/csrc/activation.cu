// CUDA gated activations: in [rows, 2 d] -> out [rows, d], out = act(in[:, :d]) * in[:, d:].
// Memory-bound (3 elements moved per output element), so the kernel is about wide accesses:
//
// Fast path (d * sizeof(T) a multiple of 16, both pointers 16-byte aligned): the output is treated
// as one flat array of 16-byte packs, one per thread: two 16-byte loads (gate and up halves, plain;
// evict-last on huge inputs) and one 16-byte streaming store; a warp's accesses are contiguous runs
// of 512 bytes. 256-thread blocks; inputs small enough for one resident wave take 8-byte packs (in
// 256-thread blocks with PDL, streaming in 128-thread blocks without), the exact gelu, whose erf
// costs about as much as the memory traffic, two 16-byte packs per thread on large inputs, and
// devices with less memory bandwidth per SM (an H100) run every activation in 8-byte packs
// (launch_packs16 says when and why). On sm_90 and later the launches use PDL
// (pdl.cuh). Packs are kept as raw registers (uint4 / uint2) and read as elements only to compute.
// The row of pack c is c / (d / VEC), a multiply-high and a shift with a divisor prepared on the
// host; no per-element integer division. Half rows of whole 8-byte packs take the same kernel with
// 8-byte packs, 16-bit half rows of whole 4-byte packs 4-byte packs. Odd d with 16-byte aligned
// pointers and fewer than 2^31 outputs takes act_direct_kernel (an 8- or 16-byte pack of output
// per thread, element loads; launch_direct says which pack), except odd fp32 from 64 MB.
// Those, other widths and unaligned pointers take single elements, several per thread.
// Arithmetic is fp32: exp is __expf, the logistic division __fdividef (x / inf = 0 as needed for
// large negative inputs). The exact gelu takes erf from the branch-free Abramowitz & Stegun 7.1.26
// formula (|error| < 1.5e-7, about one fp32 ulp of 1; gelu_erf): erff branches on |x|, which
// diverges within warps on real activations and makes the exact gelu compute-bound.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include <kernel_farm/device.cuh>
#include <kernel_farm/dtypes.cuh>
#include <kernel_farm/memory.cuh>
#include <kernel_farm/pdl.cuh>

#include "activation.h"

namespace activation {

namespace {

constexpr int64_t kTwoPacksFrom = int64_t{1} << 21;  // exact gelu: packs per thread = 2 from here on

// n / d for n, d < 2^31 as a multiply-high and a shift (Granlund-Montgomery, as torch's IntDivider).
struct FastDiv32 {
  uint32_t divisor, magic, shift;
  explicit FastDiv32(uint32_t d) : divisor(d), magic(0), shift(0) {
    while (shift < 32 && (uint64_t{1} << shift) < d) ++shift;
    magic = static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << shift) - d)) / d + 1);
  }
  __device__ __forceinline__ uint32_t div(uint32_t n) const { return (__umulhi(n, magic) + n) >> shift; }
};

// Plain 64-bit division, for arrays of 2^31 packs or more.
struct Div64 {
  uint64_t divisor;
  explicit Div64(uint64_t d) : divisor(d) {}
  __device__ __forceinline__ uint64_t div(uint64_t n) const { return n / divisor; }
};

using farm_dtypes::from_float;
using farm_dtypes::Raw;
using farm_dtypes::to_float;

// The exact gelu x Phi(x), Phi the normal distribution, branch-free: with w = erfc(|x| / sqrt 2) / 2
// by Abramowitz & Stegun 7.1.26, w = t (b1 + b2 t + ... + b5 t^4) exp(-x^2 / 2), t = 1 / (1 + p |x| /
// sqrt 2), b_i = a_i / 2, Phi(x) = 1 - w for x >= 0 and w below, that is 0.5 + copysign(0.5 - w, x).
// The same formula as 0.5 x (1 + erf(x / sqrt 2)) with erf's sign folded in, in fewer operations;
// the reciprocal and the exponential are the hardware's approximations (rcp, ex2).
__device__ __forceinline__ float gelu_erf(float x) {
  float t, e;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(t) : "f"(fmaf(0.3275911f * kSqrtHalf, fabsf(x), 1.0f)));
  float q = fmaf(0.5f * 1.061405429f, t, 0.5f * -1.453152027f);
  q = fmaf(q, t, 0.5f * 1.421413741f);
  q = fmaf(q, t, 0.5f * -0.284496736f);
  q = fmaf(q, t, 0.5f * 0.254829592f);
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(x * (x * -0.72134752044448170f)));  // -x^2 / 2 * log2(e)
  return x * (0.5f + copysignf(0.5f - q * t * e, x));
}

template <Act A>
__device__ __forceinline__ float act(float x) {
  if constexpr (A == Act::kSilu) {
    return __fdividef(x, 1.0f + __expf(-x));
  } else if constexpr (A == Act::kGelu) {
    return gelu_erf(x);
  } else {
    return __fdividef(x, 1.0f + __expf(-kGeluTanhScale * (x + kGeluTanhCubic * x * x * x)));
  }
}

// How packs are loaded. kPlain: the default policy (a const __restrict__ pointer: `ld.global.nc`).
// kStream: streaming (`.cs`, evict-first), used only while the launch is one resident wave and
// without PDL, where it is faster than plain loads whatever ran before. On larger inputs streaming
// and no-L1-allocate loads make the time depend on what ran before the kernel (where its output
// lands), so those load plainly. kEvictLast: an L2 evict-last policy, for inputs far larger than
// L2, where it is a little faster and as steady as plain loads.
enum class Load { kPlain, kStream, kEvictLast };

template <typename R, Load L>
__device__ __forceinline__ R load_pack(const void* p) {
  if constexpr (sizeof(R) >= 8 && L == Load::kEvictLast) {  // uint4 or uint2
    return farm_memory::load_evict_last(static_cast<const R*>(p));
  } else if constexpr (L == Load::kStream) {
    return __ldcs(static_cast<const R*>(p));
  } else {
    return *static_cast<const R*>(p);
  }
}
template <typename R>
__device__ __forceinline__ void store_stream(void* p, const R& v) {
  if constexpr (sizeof(R) >= 8) {
    __stcs(static_cast<R*>(p), v);
  } else {
    *static_cast<R*>(p) = v;
  }
}

// out (as packs of BYTES) [n_packs], in [rows, 2 d]; row of pack c = c / (d / VEC). Each thread
// loads the gate and up halves of kUnroll packs (a block apart) before it computes any of them.
template <typename T, Act A, int BYTES, int kThreads, int kUnroll, Load L, typename Index, typename Div>
__global__ void __launch_bounds__(kThreads) act_and_mul_kernel(T* __restrict__ out, const T* __restrict__ in,
                                                               Index n_packs, Div packs_per_row, int64_t d,
                                                               bool trigger) {
  using R = Raw<BYTES>;
  constexpr int VEC = BYTES / sizeof(T);
  const Index first = static_cast<Index>(blockIdx.x) * (kThreads * kUnroll) + threadIdx.x;
  R gate[kUnroll], up[kUnroll];
  farm_pdl::wait_for_previous_grid();
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const Index c = first + static_cast<Index>(u) * kThreads;
    if (c < n_packs) {
      const Index row = packs_per_row.div(c);
      const Index col = c - row * static_cast<Index>(packs_per_row.divisor);
      const T* g = in + static_cast<int64_t>(row) * 2 * d + static_cast<int64_t>(col) * VEC;
      gate[u] = load_pack<R, L>(g);
      up[u] = load_pack<R, L>(g + d);
    }
  }
  farm_pdl::allow_next_grid(trigger);
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) {
    const Index c = first + static_cast<Index>(u) * kThreads;
    if (c < n_packs) {
      const T* a = reinterpret_cast<const T*>(&gate[u]);
      const T* b = reinterpret_cast<const T*>(&up[u]);
      R o;
      T* r = reinterpret_cast<T*>(&o);
#pragma unroll
      for (int k = 0; k < VEC; ++k) r[k] = from_float<T>(act<A>(to_float(a[k])) * to_float(b[k]));
      store_stream(reinterpret_cast<R*>(out) + c, o);
    }
  }
}

template <typename T, Act A, int BYTES, int kThreads, int kUnroll, Load L = Load::kPlain>
void launch_unrolled(T* out, const T* in, int64_t rows, int64_t d, cudaStream_t stream, bool pdl) {
  constexpr int VEC = BYTES / sizeof(T);
  const int64_t per_row = d / VEC;
  const int64_t n_packs = rows * per_row;
  const int64_t blocks = (n_packs + kThreads * kUnroll - 1) / (kThreads * kUnroll);
  const bool trigger = pdl && farm_pdl::trigger_pays(int64_t{3} * BYTES * kThreads * kUnroll);
  if (n_packs < (int64_t{1} << 31)) {
    farm_pdl::launch(act_and_mul_kernel<T, A, BYTES, kThreads, kUnroll, L, uint32_t, FastDiv32>,
                     static_cast<unsigned>(blocks), kThreads, stream, pdl, out, in, static_cast<uint32_t>(n_packs),
                     FastDiv32(static_cast<uint32_t>(per_row)), d, trigger);
  } else {
    farm_pdl::launch(act_and_mul_kernel<T, A, BYTES, kThreads, kUnroll, L, uint64_t, Div64>,
                     static_cast<unsigned>(blocks), kThreads, stream, pdl, out, in, static_cast<uint64_t>(n_packs),
                     Div64(static_cast<uint64_t>(per_row)), d, trigger);
  }
}

// What the launch shape depends on, looked up once per device: threads resident at once (SMs x
// 2048 on Hopper), the L2 size and the peak memory bandwidth per SM (2 x memory clock x bus width
// / SMs; 0 when the device does not report it). Defaults are an H100's.
struct DeviceShape {
  int64_t resident_threads = int64_t{132} * 2048;
  int64_t l2_bytes = int64_t{50} << 20;
  double peak_gbps_per_sm = 0.0;
};

DeviceShape device_shape() {
  return farm_device::per_device([](int dev) {
    DeviceShape shape;
    int sms = 0, per_sm = 0, l2 = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, dev);
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
    if (sms > 0 && per_sm > 0) shape.resident_threads = int64_t{sms} * per_sm;
    if (l2 > 0) shape.l2_bytes = l2;
    if (sms > 0) shape.peak_gbps_per_sm = farm_device::peak_memory_gbps(dev) / sms;
    return shape;
  });
}

// Odd half widths (no 4-byte pack in 16-bit dtypes, no 8-byte pack in fp32) with aligned pointers:
// one pack of kBytes of output per thread (kVec consecutive outputs, which may cross rows), its
// 2 x kVec inputs loaded element by element (neighbouring threads share their cache lines), no
// shared memory. launch_direct picks the pack. Indices are 32-bit: with n_out < 2^31 every input
// offset (row * 2 d + column + d < 2 n_out) fits. A warp whose packs all lie inside one row each
// (wide rows, most warps) loads them at fixed offsets from two pointers; any other warp walks the
// columns, wrapping to the next row. (Element loads of a few elements per thread leave odd d far
// behind torch.compile.)
constexpr int kDirectThreads = 256;

template <typename T, Act A, int kBytes>
__global__ void __launch_bounds__(kDirectThreads) act_direct_kernel(T* __restrict__ out, const T* __restrict__ in,
                                                                    uint32_t n_out, uint32_t d, FastDiv32 row_of,
                                                                    bool trigger) {
  constexpr int kVec = kBytes / sizeof(T);
  using R = Raw<kBytes>;
  const uint32_t o0 = (blockIdx.x * kDirectThreads + threadIdx.x) * kVec;
  T g[kVec], u[kVec];
  uint32_t c = 0, off = 0;  // the pack's first column and its gate offset in `in`
  bool in_row = true;
  farm_pdl::wait_for_previous_grid();
  if (o0 < n_out) {
    const uint32_t row = row_of.div(o0);
    c = o0 - row * d;
    off = row * 2 * d + c;
    in_row = o0 + kVec <= n_out && c + kVec <= d;
  }
  in_row = __all_sync(0xffffffffu, in_row);  // one path per warp: mixed warps would run both
  if (o0 < n_out) {
    if (in_row) {
      const T* p = in + off;
      const T* q = p + d;
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        g[k] = p[k];
        u[k] = q[k];
      }
    } else {
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        const bool live = o0 + k < n_out;
        g[k] = live ? in[off] : from_float<T>(0.0f);
        u[k] = live ? in[off + d] : from_float<T>(0.0f);
        ++off;
        if (++c == d) {
          c = 0;
          off += d;
        }
      }
    }
  }
  farm_pdl::allow_next_grid(trigger);
  if (o0 < n_out) {
    R pack;
    T* r = reinterpret_cast<T*>(&pack);
#pragma unroll
    for (int k = 0; k < kVec; ++k) r[k] = from_float<T>(act<A>(to_float(g[k])) * to_float(u[k]));
    if (o0 + kVec <= n_out) {
      store_stream(reinterpret_cast<R*>(out) + o0 / kVec, pack);
    } else {
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        if (o0 + k < n_out) out[o0 + k] = r[k];
      }
    }
  }
}

// 8-byte packs of output while they all fit in one resident wave (as launch_packs16 does for even
// widths): twice the threads for one round trip to memory. 16-byte packs past it, where fewer,
// wider stores win over staging through shared memory or several elements per thread. The 32-bit
// indices and the in-row path of act_direct_kernel keep the exact gelu's odd widths memory-bound:
// with 64-bit indices and every thread walking columns they are bound by instruction issue. A
// coalesced layout (a warp's 32 consecutive outputs per load, element stores) is slower: each
// thread then stores elements, not packs. docs/performance.md has the measurements.
// Needs fewer than 2^31 outputs (FastDiv32, 32-bit offsets) and out aligned to the pack.
template <typename T, Act A>
void launch_direct(T* out, const T* in, int64_t rows, int64_t d, cudaStream_t stream, bool pdl) {
  const int64_t n_out = rows * d;
  const FastDiv32 row_of(static_cast<uint32_t>(d));
  const auto n = static_cast<uint32_t>(n_out), half = static_cast<uint32_t>(d);
  constexpr int64_t kTile8 = kDirectThreads * (8 / sizeof(T));
  constexpr int64_t kTile16 = kDirectThreads * (16 / sizeof(T));
  if ((n_out + 8 / sizeof(T) - 1) / (8 / sizeof(T)) <= device_shape().resident_threads) {
    const bool trigger = pdl && farm_pdl::trigger_pays(3 * kTile8 * static_cast<int64_t>(sizeof(T)));
    farm_pdl::launch(act_direct_kernel<T, A, 8>, static_cast<unsigned>((n_out + kTile8 - 1) / kTile8), kDirectThreads,
                     stream, pdl, out, in, n, half, row_of, trigger);
  } else {
    const bool trigger = pdl && farm_pdl::trigger_pays(3 * kTile16 * static_cast<int64_t>(sizeof(T)));
    farm_pdl::launch(act_direct_kernel<T, A, 16>, static_cast<unsigned>((n_out + kTile16 - 1) / kTile16),
                     kDirectThreads, stream, pdl, out, in, n, half, row_of, trigger);
  }
}

// Devices whose memory delivers less bandwidth than this per SM, in GB/s (an H100 SXM is under it,
// an H200 over it), run every activation with 8-byte packs in 128-thread blocks past one resident
// wave.
constexpr double kNarrowMemoryGbpsPerSm = 30.0;

// 16-byte packs (d * sizeof(T) a multiple of 16, aligned pointers): one pack per thread in
// 256-thread blocks. While the 8-byte packs all fit in one resident wave, every activation takes
// them instead: twice the threads for one round trip to memory, and half the exact gelu's
// arithmetic on each thread's critical path. With PDL (pdl.cuh) they load plainly in 256-thread
// blocks, whose 6 KB let the blocks trigger the next launch; without PDL they stream in 128-thread
// blocks. Past one wave 16-byte packs are as fast or faster. The exact gelu takes two packs per
// thread from 2^21 packs on: more loads in flight per thread while its arithmetic runs. Inputs of
// 4x L2 or more load with the evict-last policy; smaller ones load plainly, where evict-last does
// not pay. A device with less memory bandwidth per SM (kNarrowMemoryGbpsPerSm, an H100) needs
// fewer bytes in flight per SM to keep its memory busy, and there 8-byte packs in 128-thread blocks are
// the fastest launch at every size; past one wave they load plainly (see Load), and their 3 KB
// blocks do not trigger the next launch. docs/performance.md has the measurements.
template <typename T, Act A>
void launch_packs16(T* out, const T* in, int64_t rows, int64_t d, cudaStream_t stream, bool pdl) {
  const int64_t n_packs = rows * (d / (16 / sizeof(T)));
  const DeviceShape dev = device_shape();
  const bool huge = 2 * rows * d * static_cast<int64_t>(sizeof(T)) >= 4 * dev.l2_bytes;
  const bool narrow = dev.peak_gbps_per_sm > 0.0 && dev.peak_gbps_per_sm < kNarrowMemoryGbpsPerSm;
  if (2 * n_packs <= dev.resident_threads) {
    if (pdl) launch_unrolled<T, A, 8, 256, 1>(out, in, rows, d, stream, pdl);
    else launch_unrolled<T, A, 8, 128, 1, Load::kStream>(out, in, rows, d, stream, pdl);
  } else if (narrow) {
    launch_unrolled<T, A, 8, 128, 1>(out, in, rows, d, stream, pdl);
  } else if (A == Act::kGelu && n_packs >= kTwoPacksFrom) {
    if (huge) launch_unrolled<T, A, 16, 256, 2, Load::kEvictLast>(out, in, rows, d, stream, pdl);
    else launch_unrolled<T, A, 16, 256, 2>(out, in, rows, d, stream, pdl);
  } else if (huge) {
    launch_unrolled<T, A, 16, 256, 1, Load::kEvictLast>(out, in, rows, d, stream, pdl);
  } else {
    launch_unrolled<T, A, 16, 256, 1>(out, in, rows, d, stream, pdl);
  }
}

template <typename T, Act A>
void launch_typed(void* out, const void* in, int64_t rows, int64_t d, cudaStream_t stream, bool pdl) {
  constexpr int kVec = 16 / sizeof(T);
  auto* o = static_cast<T*>(out);
  const auto* i = static_cast<const T*>(in);
  const uintptr_t addresses = reinterpret_cast<uintptr_t>(out) | reinterpret_cast<uintptr_t>(in);
  const int64_t half_bytes = d * static_cast<int64_t>(sizeof(T));
  // The widest pack that the half-row width and both pointers allow: 16 bytes, else 8 or 4 (rows
  // of, say, 4098 bf16 elements), else one element.
  // Half rows of whole 4-byte packs (16-bit d = 4 k + 2) keep the 4-byte packs, which load whole
  // and aligned: staging 16-byte vectors through shared memory or the direct kernel's element loads
  // are slower there. Odd widths take the direct kernel, but odd fp32 from 64 MB single elements,
  // which a staged kernel did not beat; the direct kernel has not been measured there.
  // 8- and 4-byte packs take one pack per thread while they all fit in one resident wave (more
  // threads for one round trip), 2 or 4 past it.
  const bool direct = addresses % 16 == 0 && rows * d < (int64_t{1} << 31) &&
                      (sizeof(T) < 4 || 3 * rows * half_bytes < (int64_t{64} << 20));
  if (addresses % 16 == 0 && d % kVec == 0) {
    launch_packs16<T, A>(o, i, rows, d, stream, pdl);
  } else if (addresses % 8 == 0 && half_bytes % 8 == 0) {
    if (rows * (d / (8 / sizeof(T))) <= device_shape().resident_threads) {
      launch_unrolled<T, A, 8, 256, 1>(o, i, rows, d, stream, pdl);
    } else {
      launch_unrolled<T, A, 8, 256, 2>(o, i, rows, d, stream, pdl);
    }
  } else if (sizeof(T) < 4 && addresses % 4 == 0 && half_bytes % 4 == 0) {
    if (rows * (d / (4 / sizeof(T))) <= device_shape().resident_threads) {
      launch_unrolled<T, A, 4, 256, 1>(o, i, rows, d, stream, pdl);
    } else {
      launch_unrolled<T, A, 4, 256, 4>(o, i, rows, d, stream, pdl);
    }
  } else if (direct) {
    launch_direct<T, A>(o, i, rows, d, stream, pdl);
  } else {  // 4 elements of each half per thread (8 in 16-bit dtypes spilled registers)
    launch_unrolled<T, A, sizeof(T), 256, 4>(o, i, rows, d, stream, pdl);
  }
}

template <Act A>
void launch_act(DType dtype, void* out, const void* in, int64_t rows, int64_t d, cudaStream_t stream, bool pdl) {
  switch (dtype) {
    case DType::kFloat32: launch_typed<float, A>(out, in, rows, d, stream, pdl); break;
    case DType::kFloat16: launch_typed<__half, A>(out, in, rows, d, stream, pdl); break;
    case DType::kBFloat16: launch_typed<__nv_bfloat16, A>(out, in, rows, d, stream, pdl); break;
  }
}

// Every activation launch, with or without the PDL attribute (pdl.cuh).
int launch_with(Act act, DType dtype, void* out, const void* in, int64_t rows, int64_t d, cudaStream_t s, bool pdl) {
  if (rows <= 0 || d <= 0) return 0;
  switch (act) {
    case Act::kSilu: launch_act<Act::kSilu>(dtype, out, in, rows, d, s, pdl); break;
    case Act::kGelu: launch_act<Act::kGelu>(dtype, out, in, rows, d, s, pdl); break;
    case Act::kGeluTanh: launch_act<Act::kGeluTanh>(dtype, out, in, rows, d, s, pdl); break;
  }
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int launch_act_and_mul(Act act, DType dtype, void* out, const void* in, int64_t rows, int64_t d, void* stream) {
  return launch_with(act, dtype, out, in, rows, d, static_cast<cudaStream_t>(stream), farm_pdl::enabled());
}

}  // namespace activation
