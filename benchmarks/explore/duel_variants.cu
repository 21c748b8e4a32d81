// Variants of the activation and rms_norm launchers, built as a shared library for
// benchmarks/explore/duel.py, which times each of them against torch.compile in one process, on the
// same tensors, in interleaved rounds. The shipped launchers are included (variant 0 of each).
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -shared -Xcompiler -fPIC benchmarks/explore/duel_variants.cu -o duel.so
//
// Knobs: threads per block, packs per thread, 16- or 8-byte packs, a cap on blocks per SM, and the
// cache hints of the streaming loads: `.cs` (evict-first, shipped), `.cs` plus an L2 prefetch of
// the whole 256-byte sector group (`.L2::256B`), the non-coherent path without L1 allocation plus
// the 256-byte prefetch, L2 evict-last policies, and plain loads (which nvcc emits as `ld.global.nc`
// for a const __restrict__ pointer) beside the coherent `ld.global`.
#include "../../kernels/activation/csrc/activation.cu"
#include "../../kernels/img2gray/csrc/img2gray.cu"
#include "../../kernels/rms_norm/csrc/rms_norm.cu"

#include <type_traits>
#include <utility>

namespace duel {

enum Hint : int { kCs = 0, kCs256 = 1, kNc256 = 2, kPlain = 3, kEvictLast = 4, kEvictLast256 = 5, kEvictLastNoL1 = 6,
                  // activation only (rms_norm keeps flags above the low 3 bits):
                  kCoherent = 7, kNoL1 = 9, kPlain256 = 10, kCoherent256 = 11 };

template <int H>
__device__ __forceinline__ uint4 ld16(const void* p) {
  uint4 r;
  if constexpr (H == kCs) {
    r = __ldcs(static_cast<const uint4*>(p));
  } else if constexpr (H == kCs256) {
    asm("ld.global.cs.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
  } else if constexpr (H == kNc256) {
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
        : "l"(p));
  } else if constexpr (H == kEvictLast) {
    asm("{\n .reg .b64 pol;\n createpolicy.fractional.L2::evict_last.b64 pol, 1.0;\n"
        " ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], pol;\n}"
        : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
        : "l"(p));
  } else if constexpr (H == kEvictLast256) {  // evict-last plus an L2 prefetch of the 256-byte group
    asm("{\n .reg .b64 pol;\n createpolicy.fractional.L2::evict_last.b64 pol, 1.0;\n"
        " ld.global.L2::cache_hint.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4], pol;\n}"
        : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
        : "l"(p));
  } else if constexpr (H == kCoherent) {  // the coherent path (plain loads of a const __restrict__ pointer are .nc)
    asm("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
  } else if constexpr (H == kNoL1) {
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
        : "l"(p));
  } else if constexpr (H == kPlain256) {
    asm("ld.global.nc.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
  } else if constexpr (H == kCoherent256) {
    asm("ld.global.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w) : "l"(p));
  } else if constexpr (H == kEvictLastNoL1) {  // evict-last in L2, no L1 allocation
    asm("{\n .reg .b64 pol;\n createpolicy.fractional.L2::evict_last.b64 pol, 1.0;\n"
        " ld.global.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], pol;\n}"
        : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
        : "l"(p));
  } else {
    r = *static_cast<const uint4*>(p);
  }
  return r;
}

template <int H>
__device__ __forceinline__ uint2 ld8(const void* p) {
  uint2 r;
  if constexpr (H == kCs) {
    r = __ldcs(static_cast<const uint2*>(p));
  } else if constexpr (H == kCs256) {
    asm("ld.global.cs.L2::256B.v2.u32 {%0, %1}, [%2];" : "=r"(r.x), "=r"(r.y) : "l"(p));
  } else if constexpr (H == kNc256) {
    asm("ld.global.nc.L1::no_allocate.L2::256B.v2.u32 {%0, %1}, [%2];" : "=r"(r.x), "=r"(r.y) : "l"(p));
  } else if constexpr (H == kEvictLast) {
    asm("{\n .reg .b64 pol;\n createpolicy.fractional.L2::evict_last.b64 pol, 1.0;\n"
        " ld.global.L2::cache_hint.v2.u32 {%0, %1}, [%2], pol;\n}"
        : "=r"(r.x), "=r"(r.y)
        : "l"(p));
  } else if constexpr (H == kNoL1) {
    asm("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(r.x), "=r"(r.y) : "l"(p));
  } else {
    r = *static_cast<const uint2*>(p);
  }
  return r;
}

template <typename R, int H>
__device__ __forceinline__ R ld(const void* p) {
  if constexpr (sizeof(R) == 16) return ld16<H>(p);
  else return ld8<H>(p);
}

template <typename R>
__device__ __forceinline__ void st(void* p, const R& v, bool stream) {
  if (stream) __stcs(static_cast<R*>(p), v);
  else *static_cast<R*>(p) = v;
}

// Dynamic shared memory (unused) that lets at most `per_sm` blocks of `kernel` share an SM: fewer
// bytes in flight per SM, for variants that test whether a shorter memory queue (and so a shorter
// drain at the end of the grid) beats full occupancy. 0 = no limit.
template <typename K>
size_t occupancy_smem(K kernel, int per_sm) {
  if (per_sm <= 0) return 0;
  int dev = 0, smem_sm = 0, reserved = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&smem_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev);
  cudaDeviceGetAttribute(&reserved, cudaDevAttrReservedSharedMemoryPerBlock, dev);
  const size_t bytes = (static_cast<size_t>(smem_sm / per_sm - reserved - 256)) / 128 * 128;
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  return bytes;
}

// ---------------------------------------------------------------------------------------------
// activation: out [rows, d] = act(in[:, :d]) * in[:, d:]; flat packs, row = c / (d / VEC).

// Programmatic dependent launch (PDL): 0 off; otherwise the kernel waits for the previous grid
// (`griddepcontrol.wait`) before its first load and lets the next one launch
// (`griddepcontrol.launch_dependents`): kPdlStart right after the wait, kPdlLoads once its loads are
// issued, kPdlExit never (the implicit trigger when the block exits).
enum Pdl : int { kPdlOff = 0, kPdlStart = 1, kPdlLoads = 2, kPdlExit = 3 };

template <int P>
__device__ __forceinline__ void pdl_wait() {
  if constexpr (P != kPdlOff) asm volatile("griddepcontrol.wait;" ::: "memory");
  if constexpr (P == kPdlStart) asm volatile("griddepcontrol.launch_dependents;" :::);
}
template <int P>
__device__ __forceinline__ void pdl_loads_issued() {
  if constexpr (P == kPdlLoads) asm volatile("griddepcontrol.launch_dependents;" :::);
}

template <typename K, typename... Args>
void launch_pdl(K kernel, int pdl, unsigned blocks, unsigned threads, size_t smem, cudaStream_t s, Args... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(blocks);
  cfg.blockDim = dim3(threads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = pdl != kPdlOff;
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  cudaLaunchKernelEx(&cfg, kernel, args...);
}

template <typename T, activation::Act A, int THREADS, int U, int LH, bool CS_STORE, int BYTES, int PDL = kPdlOff>
__global__ void __launch_bounds__(THREADS) act_kernel(T* __restrict__ out, const T* __restrict__ in, uint32_t n_packs,
                                                      activation::FastDiv32 per_row, int64_t d) {
  using R = std::conditional_t<BYTES == 16, uint4, uint2>;
  constexpr int VEC = BYTES / sizeof(T);
  const uint32_t first = blockIdx.x * (THREADS * U) + threadIdx.x;
  R g[U], u4[U];
  pdl_wait<PDL>();
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const uint32_t c = first + u * THREADS;
    if (c < n_packs) {
      const uint32_t row = per_row.div(c);
      const uint32_t col = c - row * per_row.divisor;
      const T* p = in + static_cast<int64_t>(row) * 2 * d + static_cast<int64_t>(col) * VEC;
      g[u] = ld<R, LH>(p);
      u4[u] = ld<R, LH>(p + d);
    }
  }
  pdl_loads_issued<PDL>();
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const uint32_t c = first + u * THREADS;
    if (c < n_packs) {
      const T* a = reinterpret_cast<const T*>(&g[u]);
      const T* b = reinterpret_cast<const T*>(&u4[u]);
      R o;
      T* r = reinterpret_cast<T*>(&o);
#pragma unroll
      for (int k = 0; k < VEC; ++k) {
        r[k] = activation::from_float<T>(activation::act<A>(activation::to_float(a[k])) * activation::to_float(b[k]));
      }
      st(reinterpret_cast<R*>(out) + c, o, CS_STORE);
    }
  }
}

struct ActCfg {
  const char* name;
  int threads, unroll, hint;
  bool cs_store;
  int bytes;
  int occ = 0;  // blocks per SM at most (0: as many as fit)
  int pdl = kPdlOff;
};

constexpr ActCfg kActCfgs[] = {
    {"shipped", 0, 0, 0, true, 16},
    {"256x1 cs", 256, 1, kCs, true, 16},
    {"256x1 evict-last", 256, 1, kEvictLast, true, 16},
    {"256x2 cs", 256, 2, kCs, true, 16},
    {"256x2 evict-last", 256, 2, kEvictLast, true, 16},
    {"128x1 cs 8B", 128, 1, kCs, true, 8},
    {"128x1 evict-last", 128, 1, kEvictLast, true, 16},
    {"512x1 evict-last", 512, 1, kEvictLast, true, 16},
    {"256x1 evict-last plain-store", 256, 1, kEvictLast, false, 16},
    {"256x1 cs plain-store", 256, 1, kCs, false, 16},
    {"256x2 cs plain-store", 256, 2, kCs, false, 16},
    {"128x2 cs", 128, 2, kCs, true, 16},
    {"256x1 cs occ6", 256, 1, kCs, true, 16, 6},
    {"256x1 cs occ4", 256, 1, kCs, true, 16, 4},
    {"256x1 cs occ3", 256, 1, kCs, true, 16, 3},
    {"256x1 plain", 256, 1, kPlain, false, 16},
    {"256x1 plain-load cs-store", 256, 1, kPlain, true, 16},
    {"256x2 plain", 256, 2, kPlain, false, 16},
    {"128x1 plain", 128, 1, kPlain, false, 16},
    {"128x1 plain-load cs-store 8B", 128, 1, kPlain, true, 8},
    {"128x1 evict-last 8B", 128, 1, kEvictLast, true, 8},
    {"256x1 plain-load cs-store 8B", 256, 1, kPlain, true, 8},
    {"256x1 cs 8B", 256, 1, kCs, true, 8},
    {"128x2 plain-load cs-store", 128, 2, kPlain, true, 16},
    {"512x1 plain-load cs-store", 512, 1, kPlain, true, 16},
    {"128x1 plain-load cs-store", 128, 1, kPlain, true, 16},
    {"256x1 coherent-load cs-store", 256, 1, kCoherent, true, 16},
    {"256x1 coherent-load plain-store", 256, 1, kCoherent, false, 16},
    {"256x1 no-L1-load cs-store", 256, 1, kNoL1, true, 16},
    {"256x1 plain-load-256B cs-store", 256, 1, kPlain256, true, 16},
    {"256x1 coherent-load-256B cs-store", 256, 1, kCoherent256, true, 16},
    {"256x1 evict-last-no-L1 cs-store", 256, 1, kEvictLastNoL1, true, 16},
    {"256x2 no-L1-load cs-store", 256, 2, kNoL1, true, 16},
    {"256x2 evict-last-no-L1 cs-store", 256, 2, kEvictLastNoL1, true, 16},
    {"128x1 no-L1-load cs-store 8B", 128, 1, kNoL1, true, 8},
    {"256x1 plain-load cs-store pdl-loads", 256, 1, kPlain, true, 16, 0, kPdlLoads},
    {"256x1 plain-load cs-store pdl-start", 256, 1, kPlain, true, 16, 0, kPdlStart},
    {"256x1 plain-load cs-store pdl-exit", 256, 1, kPlain, true, 16, 0, kPdlExit},
    {"128x1 cs 8B pdl-loads", 128, 1, kCs, true, 8, 0, kPdlLoads},
    {"256x1 evict-last pdl-loads", 256, 1, kEvictLast, true, 16, 0, kPdlLoads},
    {"256x1 no-L1-load cs-store pdl-loads", 256, 1, kNoL1, true, 16, 0, kPdlLoads},
    {"128x1 plain-load cs-store 8B pdl-loads", 128, 1, kPlain, true, 8, 0, kPdlLoads},
    {"256x1 plain-load cs-store 8B pdl-loads", 256, 1, kPlain, true, 8, 0, kPdlLoads},
    {"128x1 cs 8B pdl-exit", 128, 1, kCs, true, 8, 0, kPdlExit},
    {"256x1 cs pdl-loads", 256, 1, kCs, true, 16, 0, kPdlLoads},
    {"128x1 plain-load cs-store pdl-loads", 128, 1, kPlain, true, 16, 0, kPdlLoads},
    {"512x1 plain-load cs-store pdl-loads", 512, 1, kPlain, true, 16, 0, kPdlLoads},
    {"256x2 plain-load cs-store pdl-loads", 256, 2, kPlain, true, 16, 0, kPdlLoads},
};
constexpr int kActN = sizeof(kActCfgs) / sizeof(kActCfgs[0]);

template <typename T, activation::Act A, int I>
void act_launch(T* out, const T* in, int64_t rows, int64_t d, cudaStream_t s) {
  constexpr ActCfg c = kActCfgs[I];
  constexpr int VEC = c.bytes / sizeof(T);
  const uint32_t n = static_cast<uint32_t>(rows * (d / VEC));
  const uint32_t blocks = (n + c.threads * c.unroll - 1) / (c.threads * c.unroll);
  auto* k = act_kernel<T, A, c.threads, c.unroll, c.hint, c.cs_store, c.bytes, c.pdl>;
  const size_t smem = occupancy_smem(k, c.occ);
  launch_pdl(k, c.pdl, blocks, c.threads, smem, s, out, in, n, activation::FastDiv32(static_cast<uint32_t>(d / VEC)),
             d);
}

template <typename T, activation::Act A, int... I>
int act_dispatch(int v, void* out, const void* in, int64_t rows, int64_t d, cudaStream_t s,
                 std::integer_sequence<int, I...>) {
  int found = 0;
  ((v == I + 1 ? (act_launch<T, A, I + 1>(static_cast<T*>(out), static_cast<const T*>(in), rows, d, s), found = 1)
               : 0),
   ...);
  return found ? 0 : -1;
}

template <typename T, activation::Act A>
int act_typed(int v, void* out, const void* in, int64_t rows, int64_t d, cudaStream_t s) {
  return act_dispatch<T, A>(v, out, in, rows, d, s, std::make_integer_sequence<int, kActN - 1>{});
}

// ---------------------------------------------------------------------------------------------
// rms_norm: the shipped register-resident kernel with the load hint as a parameter.

// A 16-byte store with an L2 cache policy: evict-last (kLast) or evict-first.
template <bool kLast>
__device__ __forceinline__ void st16_policy(void* p, uint4 v) {
  if constexpr (kLast) {
    asm volatile("{\n\t.reg .b64 pol;\n\tcreatepolicy.fractional.L2::evict_last.b64 pol, 1.0;\n\t"
                 "st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, pol;\n\t}"
                 :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
  } else {
    asm volatile("{\n\t.reg .b64 pol;\n\tcreatepolicy.fractional.L2::evict_first.b64 pol, 1.0;\n\t"
                 "st.global.L2::cache_hint.v4.u32 [%0], {%1, %2, %3, %4}, pol;\n\t}"
                 :: "l"(p), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w) : "memory");
  }
}

template <typename T, int CPT, int LH_ALL>
__global__ void __launch_bounds__(1024) rms_kernel(T* __restrict__ out, const T* __restrict__ in,
                                                   const T* __restrict__ weight, int64_t rows, int packs, int group,
                                                   float inv_hidden, float eps, unsigned swz_stride) {
  using P = rms_norm::Pack<T>;
  __shared__ float scratch[33];
  int64_t row;
  int lane;
  // swz_stride != 0: block b takes the rows of block (b * swz_stride) mod gridDim.x (a bijection:
  // the launcher checks the stride is coprime with the grid), so the blocks in flight at once are
  // spread over the tensor instead of one contiguous window.
  const unsigned bid = swz_stride == 0 ? blockIdx.x
                                       : static_cast<unsigned>(static_cast<uint64_t>(blockIdx.x) * swz_stride % gridDim.x);
  if (group <= 32) {
    row = static_cast<int64_t>(bid) * (blockDim.x / group) + threadIdx.x / group;
    lane = threadIdx.x & (group - 1);
  } else {
    row = bid;
    lane = threadIdx.x;
  }
  const bool row_ok = row < rows;
  const P* x = reinterpret_cast<const P*>(in) + row * packs;
  constexpr int LH = LH_ALL & 7;
  constexpr bool kWeightLate = (LH_ALL & 8) != 0;
  constexpr bool kPlainStore = (LH_ALL & 16) != 0;
  constexpr int kStorePolicy = (LH_ALL >> 5) & 3;  // 1: y stored evict-last, 2: evict-first (L2 policies)
  const uint4* w = reinterpret_cast<const uint4*>(weight);
  uint4 v[CPT], wv[CPT];
#pragma unroll
  for (int c = 0; c < CPT; ++c) {
    const int p = lane + c * group;
    if (row_ok && p < packs) {
      v[c] = ld16<LH>(x + p);
      if (!kWeightLate) wv[c] = __ldg(w + p);
    } else {
      v[c] = make_uint4(0u, 0u, 0u, 0u);
    }
  }
  float ss = 0.0f;
#pragma unroll
  for (int c = 0; c < CPT; ++c) {
    const P& pv = *reinterpret_cast<const P*>(&v[c]);
#pragma unroll
    for (int k = 0; k < P::kVec; ++k) {
      const float f = rms_norm::to_float(pv.v[k]);
      ss += f * f;
    }
    asm volatile("" : "+r"(v[c].x), "+r"(v[c].y), "+r"(v[c].z), "+r"(v[c].w));
  }
  if (group <= 32) {
    for (int o = group / 2; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  } else {
    ss = rms_norm::block_sum(ss, scratch);
  }
  if (!row_ok) return;
  const float rstd = rsqrtf(ss * inv_hidden + eps);
  P* y = reinterpret_cast<P*>(out) + row * packs;
  if (kWeightLate) {
#pragma unroll
    for (int c = 0; c < CPT; ++c) {
      const int p = lane + c * group;
      if (p < packs) wv[c] = __ldg(w + p);
    }
  }
#pragma unroll
  for (int c = 0; c < CPT; ++c) {
    const int p = lane + c * group;
    if (p < packs) {
      const P& pv = *reinterpret_cast<const P*>(&v[c]);
      const P& pw = *reinterpret_cast<const P*>(&wv[c]);
      P o;
#pragma unroll
      for (int k = 0; k < P::kVec; ++k) {
        o.v[k] = rms_norm::from_float<T>(rms_norm::to_float(pv.v[k]) * rstd * rms_norm::to_float(pw.v[k]));
      }
      const uint4 ov = *reinterpret_cast<const uint4*>(&o);
      if constexpr (kStorePolicy != 0) {
        st16_policy<kStorePolicy == 1>(y + p, ov);
      } else if (kPlainStore) {
        *reinterpret_cast<uint4*>(y + p) = ov;
      } else {
        __stcs(reinterpret_cast<uint4*>(y + p), ov);
      }
    }
  }
}

// Small rows (packs a power of two <= 32): the warp layout of torch.compile's persistent
// reduction. Load c of a warp covers 32 consecutive packs (512 contiguous bytes, 32 / packs rows),
// so a lane's column, and its one weight pack, is the same for every c; each of the CPT rows a lane
// touches is reduced over its `packs` lanes with shuffles.
template <typename T, int CPT, int LH_ALL>
__global__ void __launch_bounds__(256) rms_tile_kernel(T* __restrict__ out, const T* __restrict__ in,
                                                       const T* __restrict__ weight, int64_t rows, int packs,
                                                       float inv_hidden, float eps) {
  using P = rms_norm::Pack<T>;
  constexpr int LH = LH_ALL & 7;
  constexpr bool kPlainStore = (LH_ALL & 16) != 0;
  const int lane = threadIdx.x & 31;
  const int64_t warp = static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int64_t total = rows * packs;
  const int64_t base = warp * 32 * CPT + lane;
  const uint4 wv = __ldg(reinterpret_cast<const uint4*>(weight) + (lane & (packs - 1)));
  const uint4* x = reinterpret_cast<const uint4*>(in);
  uint4 v[CPT];
  float ss[CPT];
#pragma unroll
  for (int c = 0; c < CPT; ++c) {
    const int64_t f = base + c * 32;
    v[c] = f < total ? ld16<LH>(x + f) : make_uint4(0u, 0u, 0u, 0u);
  }
#pragma unroll
  for (int c = 0; c < CPT; ++c) {
    const P& pv = *reinterpret_cast<const P*>(&v[c]);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < P::kVec; ++k) {
      const float f = rms_norm::to_float(pv.v[k]);
      s += f * f;
    }
    ss[c] = s;
  }
  for (int o = packs / 2; o > 0; o >>= 1) {
#pragma unroll
    for (int c = 0; c < CPT; ++c) ss[c] += __shfl_xor_sync(0xffffffffu, ss[c], o);
  }
  const P& pw = *reinterpret_cast<const P*>(&wv);
  uint4* y = reinterpret_cast<uint4*>(out);
#pragma unroll
  for (int c = 0; c < CPT; ++c) {
    const int64_t f = base + c * 32;
    if (f < total) {
      const float rstd = rsqrtf(ss[c] * inv_hidden + eps);
      const P& pv = *reinterpret_cast<const P*>(&v[c]);
      P o;
#pragma unroll
      for (int k = 0; k < P::kVec; ++k) {
        o.v[k] = rms_norm::from_float<T>(rms_norm::to_float(pv.v[k]) * rstd * rms_norm::to_float(pw.v[k]));
      }
      if (kPlainStore) y[f] = *reinterpret_cast<const uint4*>(&o);
      else __stcs(y + f, *reinterpret_cast<const uint4*>(&o));
    }
  }
}

// Small rows with lean registers: the shipped warp-group layout, but (WREG = false) the row's
// weight is staged in shared memory (one copy per block, read at the store) instead of CPT weight
// packs per thread, and ptxas is asked for MINB blocks of 256 threads per SM. The store decodes
// bf16 x with byte permutes, not the shifts of the sum of squares: with the same instructions
// ptxas reuses the reduction's fp32 values across it and keeps twice the registers live (the
// shipped bf16 kernel: 54-56 registers at 4 packs, so 4 blocks, 1024 threads per SM). With only
// packed x live, 4 packs fit 32 registers: 8 blocks, twice the x bytes in flight per SM.
template <typename T>
__device__ __forceinline__ float ss_word(uint32_t u) {
  if constexpr (std::is_same_v<T, float>) {
    const float f = __uint_as_float(u);
    return f * f;
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const float lo = __uint_as_float(u << 16), hi = __uint_as_float(u & 0xffff0000u);
    return fmaf(hi, hi, lo * lo);
  } else {
    const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&u));
    return fmaf(f.y, f.y, f.x * f.x);
  }
}

template <typename T>
__device__ __forceinline__ uint32_t scale_word(uint32_t u, uint32_t w, float rstd) {
  if constexpr (std::is_same_v<T, float>) {
    return __float_as_uint(__uint_as_float(u) * rstd * __uint_as_float(w));
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    const float lo = __uint_as_float(__byte_perm(u, 0u, 0x1044)) * rstd * __uint_as_float(w << 16);
    const float hi = __uint_as_float(__byte_perm(u, 0u, 0x3244)) * rstd * __uint_as_float(w & 0xffff0000u);
    const __nv_bfloat162 b = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&b);
  } else {
    const float2 x = __half22float2(*reinterpret_cast<const __half2*>(&u));
    const float2 g = __half22float2(*reinterpret_cast<const __half2*>(&w));
    const __half2 h = __floats2half2_rn(x.x * rstd * g.x, x.y * rstd * g.y);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
}

template <typename T, int CPT, int LH, int MINB, bool WREG>
__global__ void __launch_bounds__(256, MINB) rms_lean_kernel(T* __restrict__ out, const T* __restrict__ in,
                                                             const T* __restrict__ weight, int64_t rows, int packs,
                                                             int group, float inv_hidden, float eps) {
  __shared__ uint4 sw[WREG ? 1 : 64];
  const int64_t row = static_cast<int64_t>(blockIdx.x) * (blockDim.x / group) + threadIdx.x / group;
  const int lane = threadIdx.x & (group - 1);
  const bool row_ok = row < rows;
  const uint4* x = reinterpret_cast<const uint4*>(in) + row * packs;
  const uint4* w = reinterpret_cast<const uint4*>(weight);
  uint4 v[CPT], wv[WREG ? CPT : 1];
#pragma unroll
  for (int c = 0; c < CPT; ++c) {
    const int p = lane + c * group;
    v[c] = make_uint4(0u, 0u, 0u, 0u);
    if (row_ok && p < packs) {
      v[c] = ld16<LH>(x + p);
      if constexpr (WREG) wv[c] = __ldg(w + p);
    }
  }
  if constexpr (!WREG) {
    if (threadIdx.x < packs) sw[threadIdx.x] = __ldg(w + threadIdx.x);
  }
  float ss = 0.0f;
#pragma unroll
  for (int c = 0; c < CPT; ++c) ss += ss_word<T>(v[c].x) + ss_word<T>(v[c].y) + ss_word<T>(v[c].z) + ss_word<T>(v[c].w);
  for (int o = group / 2; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if constexpr (!WREG) __syncthreads();
  if (!row_ok) return;
  const float rstd = rsqrtf(ss * inv_hidden + eps);
  uint4* y = reinterpret_cast<uint4*>(out) + row * packs;
#pragma unroll
  for (int c = 0; c < CPT; ++c) {
    const int p = lane + c * group;
    if (p < packs) {
      uint4 g;
      if constexpr (WREG) g = wv[c]; else g = sw[p];
      const uint4 r = make_uint4(scale_word<T>(v[c].x, g.x, rstd), scale_word<T>(v[c].y, g.y, rstd),
                                 scale_word<T>(v[c].z, g.z, rstd), scale_word<T>(v[c].w, g.w, rstd));
      __stcs(y + p, r);
    }
  }
}

// Small rows through the bulk copy engine: a persistent grid; each block moves tiles of TILE
// contiguous bytes (whole rows) global -> shared with `cp.async.bulk` completing on an mbarrier,
// STAGES tiles in flight, normalises the tile in place (a row's packs on `packs` consecutive lanes,
// reduced with shuffles), and writes it back with a bulk shared -> global store. The stage that
// the previous tile's store has finished reading is refilled with the tile STAGES - 1 ahead.
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ bool mbar_try_wait(uint32_t bar, uint32_t parity) {
  uint32_t ok;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
      : "=r"(ok)
      : "r"(bar), "r"(parity)
      : "memory");
  return ok != 0;
}

__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

template <typename T, int TILE, int STAGES>
__global__ void __launch_bounds__(256) rms_bulk_kernel(T* __restrict__ out, const T* __restrict__ in,
                                                       const T* __restrict__ weight, int64_t rows, int packs,
                                                       float inv_hidden, float eps) {
  extern __shared__ __align__(128) uint4 buf[];  // STAGES x TILE bytes
  __shared__ __align__(8) uint64_t bar[STAGES];
  constexpr int kTilePacks = TILE / 16;
  static_assert(kTilePacks % 256 == 0, "a tile is a whole number of block-wide passes");
  const int tid = threadIdx.x;
  const int64_t total = rows * packs * 16;  // bytes
  const int64_t tiles = (total + TILE - 1) / TILE;
  const int64_t mine = (tiles - blockIdx.x + gridDim.x - 1) / gridDim.x;
  const char* gin = reinterpret_cast<const char*>(in);
  char* gout = reinterpret_cast<char*>(out);
  auto tile_at = [&](int64_t i) { return static_cast<int64_t>(blockIdx.x) + i * gridDim.x; };
  auto bytes_of = [&](int64_t t) { return static_cast<uint32_t>(min(static_cast<int64_t>(TILE), total - t * TILE)); };
  if (tid == 0) {
#pragma unroll
    for (int s = 0; s < STAGES; ++s) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&bar[s])));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (tid == 0) {
    for (int s = 0; s < STAGES && s < mine; ++s) {
      const int64_t t = tile_at(s);
      bulk_load(smem_u32(buf + s * kTilePacks), gin + t * TILE, bytes_of(t), smem_u32(&bar[s]));
    }
  }
  const uint4 wv = __ldg(reinterpret_cast<const uint4*>(weight) + (tid & (packs - 1)));
  for (int64_t i = 0; i < mine; ++i) {
    const int s = static_cast<int>(i % STAGES);
    const int64_t t = tile_at(i);
    const uint32_t nbytes = bytes_of(t);
    const int npk = static_cast<int>(nbytes / 16);
    while (!mbar_try_wait(smem_u32(&bar[s]), static_cast<uint32_t>((i / STAGES) & 1))) {
    }
    uint4* b = buf + s * kTilePacks;
#pragma unroll
    for (int k = tid; k < kTilePacks; k += 256) {
      const uint4 v = b[k];
      float ss = ss_word<T>(v.x) + ss_word<T>(v.y) + ss_word<T>(v.z) + ss_word<T>(v.w);
      for (int o = packs / 2; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
      const float rstd = rsqrtf(ss * inv_hidden + eps);
      if (k < npk) {
        b[k] = make_uint4(scale_word<T>(v.x, wv.x, rstd), scale_word<T>(v.y, wv.y, rstd),
                          scale_word<T>(v.z, wv.z, rstd), scale_word<T>(v.w, wv.w, rstd));
      }
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (tid == 0) {
      asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(gout + t * TILE),
                   "r"(smem_u32(b)), "r"(nbytes)
                   : "memory");
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      if (i >= 1 && i - 1 + STAGES < mine) {
        asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");  // the previous tile's store has read its stage
        const int ps = static_cast<int>((i - 1) % STAGES);
        const int64_t nt = tile_at(i - 1 + STAGES);
        bulk_load(smem_u32(buf + ps * kTilePacks), gin + nt * TILE, bytes_of(nt), smem_u32(&bar[ps]));
      }
    }
  }
  if (tid == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

template <typename T, int TILE, int STAGES>
int rms_bulk_go(T* o, const T* x, const T* w, int64_t rows, int packs, float inv_h, float eps, cudaStream_t s) {
  if (packs > 32 || (packs & (packs - 1)) != 0 || TILE % (packs * 16) != 0) return -2;
  auto* k = rms_bulk_kernel<T, TILE, STAGES>;
  constexpr int kSmem = TILE * STAGES;
  cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem);
  int dev = 0, sms = 0, per_sm = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, 256, kSmem);
  const int64_t tiles = (rows * packs * 16 + TILE - 1) / TILE;
  const auto blocks = static_cast<unsigned>(std::min<int64_t>(tiles, static_cast<int64_t>(sms) * std::max(per_sm, 1)));
  k<<<blocks, 256, kSmem, s>>>(o, x, w, rows, packs, inv_h, eps);
  return 0;
}

// Large rows, as torch.compile's looped reduction: one block per row; pass 1 reads the row with an
// L2 evict-last policy and sums squares (U packs in flight per thread), pass 2 reads it again (an
// L2 hit), multiplies and stores. Few registers, so many rows per SM.
__device__ __forceinline__ uint4 ld16_evict_last(const void* p) {
  uint4 r;
  asm("{\n .reg .b64 pol;\n createpolicy.fractional.L2::evict_last.b64 pol, 1.0;\n"
      " ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], pol;\n}"
      : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
      : "l"(p));
  return r;
}

template <typename T, int U>
__global__ void __launch_bounds__(1024) rms_2pass_kernel(T* __restrict__ out, const T* __restrict__ in,
                                                         const T* __restrict__ weight, int packs, float inv_hidden,
                                                         float eps) {
  using P = rms_norm::Pack<T>;
  __shared__ float scratch[33];
  const uint4* x = reinterpret_cast<const uint4*>(in) + static_cast<int64_t>(blockIdx.x) * packs;
  uint4* y = reinterpret_cast<uint4*>(out) + static_cast<int64_t>(blockIdx.x) * packs;
  const uint4* w = reinterpret_cast<const uint4*>(weight);
  float ss = 0.0f;
  for (int p0 = threadIdx.x; p0 < packs; p0 += U * blockDim.x) {
    uint4 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int p = p0 + u * blockDim.x;
      v[u] = p < packs ? ld16_evict_last(x + p) : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const P& pv = *reinterpret_cast<const P*>(&v[u]);
#pragma unroll
      for (int k = 0; k < P::kVec; ++k) {
        const float f = rms_norm::to_float(pv.v[k]);
        ss += f * f;
      }
    }
  }
  const float rstd = rsqrtf(rms_norm::block_sum(ss, scratch) * inv_hidden + eps);
  for (int p0 = threadIdx.x; p0 < packs; p0 += U * blockDim.x) {
    uint4 v[U], wv[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int p = p0 + u * blockDim.x;
      if (p < packs) {
        v[u] = __ldcs(x + p);
        wv[u] = __ldg(w + p);
      }
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int p = p0 + u * blockDim.x;
      if (p < packs) {
        const P& pv = *reinterpret_cast<const P*>(&v[u]);
        const P& pw = *reinterpret_cast<const P*>(&wv[u]);
        P o;
#pragma unroll
        for (int k = 0; k < P::kVec; ++k) {
          o.v[k] = rms_norm::from_float<T>(rms_norm::to_float(pv.v[k]) * rstd * rms_norm::to_float(pw.v[k]));
        }
        __stcs(y + p, *reinterpret_cast<const uint4*>(&o));
      }
    }
  }
}

struct RmsCfg {
  const char* name;
  int ppt, hint, warp_threads;  // packs per thread wanted; block size of the warp path
  int kind = 0;                 // 0 registers (shipped layout), 1 tile (small rows), 2 two passes (large rows),
                                // 3 lean (small rows, weight in shared memory), 4 lean with the weight in registers,
                                // 5 bulk copies (ppt: tile KiB, occ: stages)
  int occ = 0;                  // kind 0: blocks per SM at most (0: as many as fit); kind 3: blocks per SM wanted
  int swz = 0;                  // kind 0: block order; 0 in order, k > 0: k interleaved frontiers
                                // (stride grid / k + 1), -1: golden-ratio stride (scattered)
};

constexpr RmsCfg kRmsCfgs[] = {
    {"shipped", 0, 0, 0},
    {"ppt2 cs", 2, kCs, 256},
    {"ppt4 cs", 4, kCs, 256},
    {"tile cpt4 cs", 4, kCs, 256, 1},
    {"tile cpt8 cs", 8, kCs, 256, 1},
    {"tile cpt8 evict-last", 8, kEvictLast, 256, 1},
    {"tile cpt8 plain", 8, kPlain, 256, 1},
    {"2pass 256 thr u4", 4, 0, 256, 2},
    {"2pass 256 thr u2", 2, 0, 256, 2},
    {"2pass 512 thr u2", 2, 0, 512, 2},
    {"ppt2 evict-last", 2, kEvictLast, 256},
    {"ppt4 evict-last", 4, kEvictLast, 256},
    {"ppt2 cs w-late", 2, kCs + 8, 256},
    {"ppt2 evict-last w-late", 2, kEvictLast + 8, 256},
    {"ppt4 evict-last w-late", 4, kEvictLast + 8, 256},
    {"ppt4 evict-last plain-store", 4, kEvictLast + 16, 256},
    {"ppt2 evict-last plain-store", 2, kEvictLast + 16, 256},
    {"ppt4 cs plain-store", 4, kCs + 16, 256},
    {"ppt4 evict-last 512 thr", 4, kEvictLast, 512},
    {"ppt8 evict-last", 8, kEvictLast, 256},
    {"ppt4 evict-last occ6", 4, kEvictLast, 256, 0, 6},
    {"ppt4 evict-last occ4", 4, kEvictLast, 256, 0, 4},
    {"ppt4 evict-last occ3", 4, kEvictLast, 256, 0, 3},
    {"ppt2 evict-last occ4", 2, kEvictLast, 256, 0, 4},
    {"lean ppt4 cs min8", 4, kCs, 256, 3, 8},
    {"lean ppt4 evict-last min8", 4, kEvictLast, 256, 3, 8},
    {"lean ppt4 cs min6", 4, kCs, 256, 3, 6},
    {"lean ppt8 cs min4", 8, kCs, 256, 3, 4},
    {"lean ppt2 cs min8", 2, kCs, 256, 3, 8},
    {"lean-wreg ppt4 cs min6", 4, kCs, 256, 4, 6},
    {"lean-wreg ppt4 evict-last min6", 4, kEvictLast, 256, 4, 6},
    {"lean-wreg ppt4 cs min4", 4, kCs, 256, 4, 4},
    {"bulk 16K x4", 16, 0, 256, 5, 4},
    {"bulk 16K x3", 16, 0, 256, 5, 3},
    {"bulk 8K x4", 8, 0, 256, 5, 4},
    {"bulk 8K x6", 8, 0, 256, 5, 6},
    {"bulk 32K x3", 32, 0, 256, 5, 3},
    {"ppt4 evict-last blk32", 4, kEvictLast, 32},
    {"ppt4 evict-last blk64", 4, kEvictLast, 64},
    {"ppt4 evict-last blk96", 4, kEvictLast, 96},
    {"ppt4 evict-last blk128", 4, kEvictLast, 128},
    {"ppt4 cs blk64", 4, kCs, 64},
    {"ppt2 evict-last blk64", 2, kEvictLast, 64},
    {"ppt4 evict-last st-evict-last", 4, kEvictLast + 32, 256},
    {"ppt4 evict-last st-evict-first", 4, kEvictLast + 64, 256},
    {"ppt4 cs st-evict-last", 4, kCs + 32, 256},
    {"ppt4 evict-last 2 frontiers", 4, kEvictLast, 256, 0, 0, 2},
    {"ppt4 evict-last 4 frontiers", 4, kEvictLast, 256, 0, 0, 4},
    {"ppt4 evict-last 16 frontiers", 4, kEvictLast, 256, 0, 0, 16},
    {"ppt4 evict-last scattered", 4, kEvictLast, 256, 0, 0, -1},
    {"ppt4 cs scattered", 4, kCs, 256, 0, 0, -1},
    {"ppt4 plain-load", 4, kPlain, 256},
    {"ppt4 plain-load plain-store", 4, kPlain + 16, 256},
    {"ppt2 plain-load plain-store", 2, kPlain + 16, 256},
    {"tile cpt2 evict-last", 2, kEvictLast, 256, 1},
    {"tile cpt2 evict-last plain-store", 2, kEvictLast + 16, 256, 1},
    {"tile cpt2 cs", 2, kCs, 256, 1},
    {"tile cpt1 evict-last", 1, kEvictLast, 256, 1},
    {"tile cpt4 evict-last", 4, kEvictLast, 256, 1},
    {"tile cpt4 evict-last plain-store", 4, kEvictLast + 16, 256, 1},
    {"tile cpt2 evict-last blk128", 2, kEvictLast, 128, 1},
    {"tile cpt4 evict-last blk128", 4, kEvictLast, 128, 1},
    {"tile cpt2 evict-last blk64", 2, kEvictLast, 64, 1},
    {"ppt4 evict-last-256B", 4, kEvictLast256, 256},
    {"ppt4 evict-last-256B plain-store", 4, kEvictLast256 + 16, 256},
    {"ppt4 evict-last no-L1", 4, kEvictLastNoL1, 256},
    {"ppt4 evict-last no-L1 plain-store", 4, kEvictLastNoL1 + 16, 256},
};
constexpr int kRmsN = sizeof(kRmsCfgs) / sizeof(kRmsCfgs[0]);

template <typename T, int CPT, int LH>
int rms_go(T* o, const T* x, const T* w, int64_t rows, int packs, int group, int threads, float inv_h, float eps,
           cudaStream_t s, int occ = 0, int swz = 0) {
  const int64_t rpb = group <= 32 ? threads / group : 1;
  auto* k = rms_kernel<T, CPT, LH>;
  const size_t smem = occupancy_smem(k, occ);
  const auto blocks = static_cast<unsigned>((rows + rpb - 1) / rpb);
  unsigned stride = 0;
  if (swz != 0) {
    stride = swz > 0 ? blocks / static_cast<unsigned>(swz) + 1 : static_cast<unsigned>(0.6180339887 * blocks) | 1u;
    unsigned a = stride, b = blocks;
    while (b != 0) { const unsigned t = a % b; a = b; b = t; }
    if (a != 1 || stride >= blocks) return -2;  // not a bijection of this grid
  }
  k<<<blocks, threads, smem, s>>>(o, x, w, rows, packs, group, inv_h, eps, stride);
  return 0;
}

template <typename T, int I>
int rms_launch(T* o, const T* x, const T* w, int64_t rows, int64_t hidden, float eps, cudaStream_t s) {
  constexpr RmsCfg c = kRmsCfgs[I];
  constexpr int kVec = 16 / sizeof(T);
  if (hidden % kVec != 0) return -2;
  const int packs = static_cast<int>(hidden / kVec);
  const float inv_h = 1.0f / static_cast<float>(hidden);
  if constexpr (c.kind == 1) {
    if (packs > 32 || (packs & (packs - 1)) != 0) return -2;
    const int64_t warps = (rows * packs + 32 * c.ppt - 1) / (32 * c.ppt);
    const int wpb = c.warp_threads / 32;  // warps per block
    rms_tile_kernel<T, c.ppt, c.hint><<<static_cast<unsigned>((warps + wpb - 1) / wpb), c.warp_threads, 0, s>>>(
        o, x, w, rows, packs, inv_h, eps);
    return 0;
  } else if constexpr (c.kind == 2) {
    if (packs <= 64) return -2;
    rms_2pass_kernel<T, c.ppt><<<static_cast<unsigned>(rows), c.warp_threads, 0, s>>>(o, x, w, packs, inv_h, eps);
    return 0;
  } else if constexpr (c.kind == 5) {
    return rms_bulk_go<T, c.ppt * 1024, c.occ>(o, x, w, rows, packs, inv_h, eps, s);
  } else if constexpr (c.kind == 3 || c.kind == 4) {
    if (packs > 64) return -2;
    const int group = rms_norm::next_pow2((packs + c.ppt - 1) / c.ppt);
    if (group > 32 || (packs + group - 1) / group > c.ppt) return -2;
    const auto blocks = static_cast<unsigned>((rows + 256 / group - 1) / (256 / group));
    rms_lean_kernel<T, c.ppt, c.hint, c.occ, c.kind == 4><<<blocks, 256, 0, s>>>(o, x, w, rows, packs, group, inv_h, eps);
    return 0;
  }
  int group, threads;
  if (packs <= 64) {
    group = rms_norm::next_pow2((packs + c.ppt - 1) / c.ppt);
    if (group > 32) return -2;
    threads = c.warp_threads;
  } else {
    threads = ((packs + c.ppt - 1) / c.ppt + 31) / 32 * 32;
    if (threads > 1024) return -2;
    group = threads;
  }
  const int cpt = (packs + group - 1) / group;
  switch (cpt) {
    case 1: return rms_go<T, 1, c.hint>(o, x, w, rows, packs, group, threads, inv_h, eps, s, c.occ, c.swz);
    case 2: return rms_go<T, 2, c.hint>(o, x, w, rows, packs, group, threads, inv_h, eps, s, c.occ, c.swz);
    case 3:
    case 4: return rms_go<T, 4, c.hint>(o, x, w, rows, packs, group, threads, inv_h, eps, s, c.occ, c.swz);
    case 5:
    case 6:
    case 7:
    case 8: return rms_go<T, 8, c.hint>(o, x, w, rows, packs, group, threads, inv_h, eps, s, c.occ, c.swz);
    default: return -2;
  }
}

template <typename T, int... I>
int rms_dispatch(int v, void* o, const void* x, const void* w, int64_t rows, int64_t hidden, float eps, cudaStream_t s,
                 std::integer_sequence<int, I...>) {
  int rc = -1;
  ((v == I + 1 ? (rc = rms_launch<T, I + 1>(static_cast<T*>(o), static_cast<const T*>(x), static_cast<const T*>(w),
                                            rows, hidden, eps, s))
               : 0),
   ...);
  return rc;
}

}  // namespace duel

namespace duel {

// ---------------------------------------------------------------------------------------------
// img2gray: the shipped 16-pixel groups (aligned images, n_pixels a multiple of 16) with the load
// policy and the store (streaming or plain) as parameters.
template <int LH, bool CS_STORE>
__global__ void __launch_bounds__(256) img_kernel(const uint8_t* __restrict__ rgb, uint8_t* __restrict__ gray,
                                                  int64_t n_groups) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x;
  if (i >= n_groups) return;
  const uint4* src = reinterpret_cast<const uint4*>(rgb) + 3 * i;
  const uint4 a = ld16<LH>(src), b = ld16<LH>(src + 1), c = ld16<LH>(src + 2);
  const uint32_t w[12] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w, c.x, c.y, c.z, c.w};
  uint4 out;
  out.x = img2gray::pack4<0>(w);
  out.y = img2gray::pack4<1>(w);
  out.z = img2gray::pack4<2>(w);
  out.w = img2gray::pack4<3>(w);
  st(reinterpret_cast<uint4*>(gray) + i, out, CS_STORE);
}

struct ImgCfg {
  const char* name;
  int hint;
  bool cs_store;
};

constexpr ImgCfg kImgCfgs[] = {
    {"shipped", 0, true},
    {"cs", kCs, true},
    {"plain-load cs-store", kPlain, true},
    {"plain", kPlain, false},
    {"evict-last cs-store", kEvictLast, true},
    {"evict-last plain-store", kEvictLast, false},
};
constexpr int kImgN = sizeof(kImgCfgs) / sizeof(kImgCfgs[0]);

template <int I>
void img_launch(const uint8_t* rgb, uint8_t* gray, int64_t n_groups, cudaStream_t s) {
  constexpr ImgCfg c = kImgCfgs[I];
  img_kernel<c.hint, c.cs_store><<<static_cast<unsigned>((n_groups + 255) / 256), 256, 0, s>>>(rgb, gray, n_groups);
}

template <int... I>
int img_dispatch(int v, const uint8_t* rgb, uint8_t* gray, int64_t n_groups, cudaStream_t s,
                 std::integer_sequence<int, I...>) {
  int found = 0;
  ((v == I + 1 ? (img_launch<I + 1>(rgb, gray, n_groups, s), found = 1) : 0), ...);
  return found ? 0 : -1;
}

}  // namespace duel

extern "C" {

const char* duel_img_name(int v) {
  return v >= 0 && v < duel::kImgN ? duel::kImgCfgs[v].name : v == duel::kImgN ? "shipped without PDL" : nullptr;
}

// rgb [n_pixels, 3] -> gray [n_pixels]; the variants need 16-byte aligned pointers and n_pixels % 16 == 0.
int duel_img(int v, const void* rgb, void* gray, int64_t n_pixels, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  const auto* in = static_cast<const uint8_t*>(rgb);
  auto* out = static_cast<uint8_t*>(gray);
  if (v == 0) return img2gray::launch_img2gray(in, out, n_pixels, stream);
  if (v == duel::kImgN) return img2gray::launch_with(in, out, n_pixels, s, false);
  if (n_pixels % 16 != 0 || (reinterpret_cast<uintptr_t>(rgb) | reinterpret_cast<uintptr_t>(gray)) % 16 != 0) return -2;
  const int rc = duel::img_dispatch(v, in, out, n_pixels / 16, s, std::make_integer_sequence<int, duel::kImgN - 1>{});
  return rc != 0 ? rc : static_cast<int>(cudaGetLastError());
}

// Variant names; nullptr past the last.
// Variant N (one past the table) is the shipped launcher without the PDL attribute.
const char* duel_act_name(int v) {
  return v >= 0 && v < duel::kActN ? duel::kActCfgs[v].name : v == duel::kActN ? "shipped without PDL" : nullptr;
}
const char* duel_rms_name(int v) {
  return v >= 0 && v < duel::kRmsN ? duel::kRmsCfgs[v].name : v == duel::kRmsN ? "shipped without PDL" : nullptr;
}

// act: 0 silu, 1 gelu, 2 gelu_tanh; dtype: 0 fp32, 1 fp16, 2 bf16. 0 on success, -1 unknown variant,
// -2 shape not supported by the variant, else a CUDA error code.
int duel_act(int v, int act, int dtype, void* out, const void* in, int64_t rows, int64_t d, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  const auto a = static_cast<activation::Act>(act);
  if (v == 0) return activation::launch_act_and_mul(a, static_cast<activation::DType>(dtype), out, in, rows, d, stream);
  if (v == duel::kActN) return activation::launch_with(a, static_cast<activation::DType>(dtype), out, in, rows, d, s, false);
  const int elem = dtype == 0 ? 4 : 2;
  if ((d * elem) % 16 != 0 || rows * d * elem / 8 >= (int64_t{1} << 31)) return -2;
  using activation::Act;
  if (a == Act::kGeluTanh) return -2;
  int rc = -1;
  if (dtype == 0) {
    rc = a == Act::kSilu ? duel::act_typed<float, Act::kSilu>(v, out, in, rows, d, s)
                         : duel::act_typed<float, Act::kGelu>(v, out, in, rows, d, s);
  } else if (dtype == 2) {
    rc = a == Act::kSilu ? duel::act_typed<__nv_bfloat16, Act::kSilu>(v, out, in, rows, d, s)
                         : duel::act_typed<__nv_bfloat16, Act::kGelu>(v, out, in, rows, d, s);
  } else {
    rc = a == Act::kSilu ? duel::act_typed<__half, Act::kSilu>(v, out, in, rows, d, s)
                         : duel::act_typed<__half, Act::kGelu>(v, out, in, rows, d, s);
  }
  return rc != 0 ? rc : static_cast<int>(cudaGetLastError());
}

int duel_rms(int v, int dtype, void* out, const void* in, const void* w, int64_t rows, int64_t hidden, float eps,
             void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  if (v == 0) {
    return rms_norm::launch_rms_norm(static_cast<rms_norm::DType>(dtype), out, in, w, rows, hidden, eps, stream);
  }
  if (v == duel::kRmsN) return rms_norm::launch_with(static_cast<rms_norm::DType>(dtype), out, in, w, rows, hidden, eps, s, false);
  int rc;
  auto seq = std::make_integer_sequence<int, duel::kRmsN - 1>{};
  switch (dtype) {
    case 0: rc = duel::rms_dispatch<float>(v, out, in, w, rows, hidden, eps, s, seq); break;
    case 1: rc = duel::rms_dispatch<__half>(v, out, in, w, rows, hidden, eps, s, seq); break;
    default: rc = duel::rms_dispatch<__nv_bfloat16>(v, out, in, w, rows, hidden, eps, s, seq); break;
  }
  return rc != 0 ? rc : static_cast<int>(cudaGetLastError());
}

}  // extern "C"
