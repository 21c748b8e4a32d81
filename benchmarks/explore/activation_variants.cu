// activation design space, timed without torch: the shipped launcher (kernels/activation/csrc/
// activation.cu, included below) against variants of its launch shape and cache hints, bf16,
// silu and exact gelu, next to a device copy moving the same bytes. Every variant is checked
// against the shipped kernel's output (bitwise) before it is timed.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 benchmarks/explore/activation_variants.cu -o /tmp/av && /tmp/av
//
// Timing (graph_timing.cuh): a CUDA graph of one launch per input set (sets > 3x L2),
// median of 30 replays / launches. Bytes per call: 2 d read + d written per row, 2 bytes each.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "../../kernels/activation/csrc/activation.cu"

#include "graph_timing.cuh"

namespace av {

using activation::Act;

__device__ __forceinline__ float bf(__nv_bfloat16 x) {
  return __uint_as_float(static_cast<uint32_t>(__bfloat16_as_ushort(x)) << 16);
}
// The shipped arithmetic (the branch-free erf for gelu), so variants differ only in launch shape
// and cache hints and must match the shipped output bit for bit.
template <Act A>
__device__ __forceinline__ float act(float x) {
  return activation::act<A>(x);
}

// U packs per thread a block apart; CS: streaming hints; ROW2D: grid.y = row (no division).
template <Act A, int THREADS, int U, bool CS_LOAD, bool CS_STORE, bool ROW2D>
__global__ void __launch_bounds__(THREADS) kern(__nv_bfloat16* __restrict__ out, const __nv_bfloat16* __restrict__ in,
                                               uint32_t n_packs, uint32_t per_row, uint32_t magic, uint32_t shift,
                                               int64_t d) {
  uint4 g[U], u4[U];
  uint32_t cs[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    uint32_t row, col, c;
    if (ROW2D) {
      row = blockIdx.y;
      col = (blockIdx.x * U + u) * THREADS + threadIdx.x;
      c = row * per_row + col;
      if (col >= per_row) c = n_packs;
    } else {
      c = (blockIdx.x * U + u) * THREADS + threadIdx.x;
      row = (__umulhi(c, magic) + c) >> shift;
      col = c - row * per_row;
    }
    cs[u] = c;
    if (c < n_packs) {
      const uint4* p = reinterpret_cast<const uint4*>(in + static_cast<int64_t>(row) * 2 * d) + col;
      const uint4* q = reinterpret_cast<const uint4*>(in + static_cast<int64_t>(row) * 2 * d + d) + col;
      g[u] = CS_LOAD ? __ldcs(p) : __ldg(p);
      u4[u] = CS_LOAD ? __ldcs(q) : __ldg(q);
    }
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    if (cs[u] < n_packs) {
      const __nv_bfloat16* a = reinterpret_cast<const __nv_bfloat16*>(&g[u]);
      const __nv_bfloat16* b = reinterpret_cast<const __nv_bfloat16*>(&u4[u]);
      uint4 o;
      __nv_bfloat16* r = reinterpret_cast<__nv_bfloat16*>(&o);
#pragma unroll
      for (int k = 0; k < 8; ++k) r[k] = __float2bfloat16_rn(act<A>(bf(a[k])) * bf(b[k]));
      uint4* dst = reinterpret_cast<uint4*>(out) + cs[u];
      if (CS_STORE) __stcs(dst, o);
      else *dst = o;
    }
  }
}

}  // namespace av

using activation::Act;

struct Variant {
  std::string name;
  std::function<void(Act, __nv_bfloat16*, const __nv_bfloat16*, int64_t, int64_t, cudaStream_t)> launch;
};

template <int THREADS, int U, bool CSL, bool CSS, bool ROW2D>
Variant make_variant(const char* name) {
  return {name, [](Act a, __nv_bfloat16* o, const __nv_bfloat16* i, int64_t rows, int64_t d, cudaStream_t s) {
            const uint32_t per_row = static_cast<uint32_t>(d / 8);
            const uint32_t n = static_cast<uint32_t>(rows * per_row);
            uint32_t shift = 0;
            while (shift < 32 && (uint64_t{1} << shift) < per_row) ++shift;
            const uint32_t magic =
                static_cast<uint32_t>(((uint64_t{1} << 32) * ((uint64_t{1} << shift) - per_row)) / per_row + 1);
            dim3 grid;
            if (ROW2D) grid = dim3((per_row + THREADS * U - 1) / (THREADS * U), static_cast<unsigned>(rows));
            else grid = dim3((n + THREADS * U - 1) / (THREADS * U));
            if (a == Act::kSilu)
              av::kern<Act::kSilu, THREADS, U, CSL, CSS, ROW2D><<<grid, THREADS, 0, s>>>(o, i, n, per_row, magic, shift, d);
            else
              av::kern<Act::kGelu, THREADS, U, CSL, CSS, ROW2D><<<grid, THREADS, 0, s>>>(o, i, n, per_row, magic, shift, d);
          }};
}

int main() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int64_t l2 = prop.l2CacheSize;
  std::printf("device %s, %d SMs, L2 %.0f MB\n", prop.name, prop.multiProcessorCount, l2 / 1e6);
  std::vector<Variant> vs = {
      {"shipped",
       [](Act a, __nv_bfloat16* o, const __nv_bfloat16* i, int64_t rows, int64_t d, cudaStream_t s) {
         CK(static_cast<cudaError_t>(activation::launch_act_and_mul(a, activation::DType::kBFloat16, o, i, rows, d, s)));
       }},
      make_variant<128, 1, false, false, false>("128 thr x1 plain"),
      make_variant<128, 1, true, false, false>("128 thr x1 cs load only"),
      make_variant<256, 1, true, true, false>("256 thr x1 cs/cs"),
      make_variant<64, 1, true, true, false>("64 thr x1 cs/cs"),
      make_variant<128, 2, true, true, false>("128 thr x2 cs/cs"),
      make_variant<256, 2, false, false, false>("256 thr x2 plain (v1)"),
      make_variant<128, 1, true, true, true>("128 thr x1 cs/cs 2D grid"),
      make_variant<512, 1, true, true, false>("512 thr x1 cs/cs"),
  };
  const int64_t shapes[][2] = {{128, 4096}, {1024, 4096}, {4096, 8192}, {8192, 14336}};
  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  bool all_ok = true;
  explore::warm_up(stream);
  explore::GraphTimer time_graph(stream);
  for (auto& sh : shapes) {
    const int64_t rows = sh[0], d = sh[1];
    const int64_t moved = 3 * rows * d * 2;
    const int sets = static_cast<int>(std::max<int64_t>(2, std::min<int64_t>(256, (3 * l2 + moved - 1) / moved)));
    std::vector<__nv_bfloat16*> in(sets), out(sets);
    std::vector<uint8_t*> ca(sets), cb(sets);
    std::vector<uint16_t> h(2 * rows * d);
    uint64_t x = 88172645463325252ull;
    for (auto& v : h) {
      x ^= x << 13; x ^= x >> 7; x ^= x << 17;
      const float f = (static_cast<int>(x >> 40) % 2000 - 1000) / 250.0f;
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      v = static_cast<uint16_t>(bits >> 16);
    }
    for (int i = 0; i < sets; ++i) {
      CK(cudaMalloc(&in[i], 2 * rows * d * 2));
      CK(cudaMalloc(&out[i], rows * d * 2));
      CK(cudaMalloc(&ca[i], moved / 2));
      CK(cudaMalloc(&cb[i], moved / 2));
      CK(cudaMemcpy(in[i], h.data(), 2 * rows * d * 2, cudaMemcpyHostToDevice));
    }
    const double copy_us = time_graph(sets, [&](int i) {
      CK(cudaMemcpyAsync(cb[i], ca[i], moved / 2, cudaMemcpyDeviceToDevice, stream));
    });
    std::printf("\n%lldx%lld bf16: %d sets; same-bytes copy %.2f us = %.0f GB/s\n", (long long)rows, (long long)d, sets,
                copy_us, moved / copy_us / 1e3);
    for (Act a : {Act::kSilu, Act::kGelu}) {
      std::vector<uint16_t> ref(rows * d), got(rows * d);
      vs[0].launch(a, out[0], in[0], rows, d, stream);
      CK(cudaStreamSynchronize(stream));
      CK(cudaMemcpy(ref.data(), out[0], rows * d * 2, cudaMemcpyDeviceToHost));
      for (auto& v : vs) {
        CK(cudaMemsetAsync(out[0], 0xFF, rows * d * 2, stream));  // on the timed stream: no race with the launch
        v.launch(a, out[0], in[0], rows, d, stream);
        CK(cudaGetLastError());
        CK(cudaStreamSynchronize(stream));
        CK(cudaMemcpy(got.data(), out[0], rows * d * 2, cudaMemcpyDeviceToHost));
        const bool ok = std::memcmp(got.data(), ref.data(), rows * d * 2) == 0;
        all_ok = all_ok && ok;
        const double us = time_graph(sets, [&](int i) { v.launch(a, out[i], in[i], rows, d, stream); });
        std::printf("  %-5s %-30s %8.2f us %6.0f GB/s %.3fx copy %s\n", a == Act::kSilu ? "silu" : "gelu",
                    v.name.c_str(), us, moved / us / 1e3, copy_us / us, ok ? "" : "WRONG");
      }
    }
    for (int i = 0; i < sets; ++i) {
      CK(cudaFree(in[i]));
      CK(cudaFree(out[i]));
      CK(cudaFree(ca[i]));
      CK(cudaFree(cb[i]));
    }
  }
  std::printf("\n%s\n", all_ok ? "all variants agree with the shipped kernel" : "SOME VARIANTS DIFFER");
  return all_ok ? 0 : 1;
}
