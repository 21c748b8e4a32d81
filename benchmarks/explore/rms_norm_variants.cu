// rms_norm design space, timed without torch: the shipped launcher (kernels/rms_norm/csrc/rms_norm.cu,
// included below) against other thread-group shapes (threads per row x 16-byte packs per thread)
// and cache hints, next to a device copy moving the same bytes. Every variant is checked against
// the shipped kernel (within one rounding: reduction orders differ) before it is timed.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 benchmarks/explore/rms_norm_variants.cu -o /tmp/rv && /tmp/rv
//
// Timing: graph_timing.cuh. Bytes per call: x read + y written + weight read once.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "../../kernels/rms_norm/csrc/rms_norm.cu"

#include "graph_timing.cuh"

namespace rv {

template <typename T>
__device__ __forceinline__ float tf(T x);
template <>
__device__ __forceinline__ float tf(float x) { return x; }
template <>
__device__ __forceinline__ float tf(__nv_bfloat16 x) {
  return __uint_as_float(static_cast<uint32_t>(__bfloat16_as_ushort(x)) << 16);
}
template <typename T>
__device__ __forceinline__ T ff(float x);
template <>
__device__ __forceinline__ float ff(float x) { return x; }
template <>
__device__ __forceinline__ __nv_bfloat16 ff(float x) { return __float2bfloat16_rn(x); }

__device__ __forceinline__ float bsum(float v, float* scratch) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  if (warp == 0) {
    float s = lane < (blockDim.x + 31) / 32 ? scratch[lane] : 0.0f;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) scratch[32] = s;
  }
  __syncthreads();
  return scratch[32];
}

// Same structure as the shipped kernel; CS selects streaming x/y accesses, PREFETCH_W loads the
// weight before the reduction.
template <typename T, int CPT, bool CS, bool PREFETCH_W>
__global__ void __launch_bounds__(1024) kern(T* __restrict__ out, const T* __restrict__ in, const T* __restrict__ weight,
                                             int64_t rows, int packs, int group, float inv_h, float eps) {
  constexpr int kVec = 16 / sizeof(T);
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
  const bool ok = row < rows;
  const uint4* x = reinterpret_cast<const uint4*>(in) + row * packs;
  const uint4* w = reinterpret_cast<const uint4*>(weight);
  uint4 v[CPT], wv[CPT];
#pragma unroll
  for (int c = 0; c < CPT; ++c) {
    const int p = lane + c * group;
    if (ok && p < packs) {
      v[c] = CS ? __ldcs(x + p) : __ldg(x + p);
      if (PREFETCH_W) wv[c] = __ldg(w + p);
    } else {
      v[c] = make_uint4(0, 0, 0, 0);
    }
  }
  float ss = 0.0f;
#pragma unroll
  for (int c = 0; c < CPT; ++c) {
    const T* t = reinterpret_cast<const T*>(&v[c]);
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      const float f = tf(t[k]);
      ss += f * f;
    }
    asm volatile("" : "+r"(v[c].x), "+r"(v[c].y), "+r"(v[c].z), "+r"(v[c].w));
  }
  if (group <= 32) {
    for (int o = group / 2; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  } else {
    ss = bsum(ss, scratch);
  }
  if (!ok) return;
  const float rstd = rsqrtf(ss * inv_h + eps);
  uint4* y = reinterpret_cast<uint4*>(out) + row * packs;
#pragma unroll
  for (int c = 0; c < CPT; ++c) {
    const int p = lane + c * group;
    if (p < packs) {
      if (!PREFETCH_W) wv[c] = __ldg(w + p);
      const T* t = reinterpret_cast<const T*>(&v[c]);
      const T* tw = reinterpret_cast<const T*>(&wv[c]);
      uint4 o;
      T* to = reinterpret_cast<T*>(&o);
#pragma unroll
      for (int k = 0; k < kVec; ++k) to[k] = ff<T>(tf(t[k]) * rstd * tf(tw[k]));
      if (CS) __stcs(y + p, o);
      else y[p] = o;
    }
  }
}

}  // namespace rv

template <typename T>
struct Variant {
  std::string name;
  // returns false when the variant does not apply to this hidden size
  std::function<bool(T*, const T*, const T*, int64_t, int64_t, cudaStream_t)> launch;
};

// group: threads per row (<= 32: warp groups in 256-thread blocks; 0: one block per row).
template <typename T, int CPT, bool CS, bool PW>
Variant<T> var(std::string name, int group_or_zero) {
  return {name, [group_or_zero](T* o, const T* x, const T* w, int64_t rows, int64_t hidden, cudaStream_t s) {
            const int packs = static_cast<int>(hidden * sizeof(T) / 16);
            int group = group_or_zero, threads;
            if (group == 0) {
              threads = ((packs + CPT - 1) / CPT + 31) / 32 * 32;
              if (threads > 1024 || threads <= 32) return false;
              group = threads;
            } else {
              if (group * CPT < packs || group * (CPT - 1) >= packs) return false;
              threads = 256;
            }
            const int64_t rpb = group <= 32 ? threads / group : 1;
            rv::kern<T, CPT, CS, PW><<<static_cast<unsigned>((rows + rpb - 1) / rpb), threads, 0, s>>>(
                o, x, w, rows, packs, group, 1.0f / hidden, 1e-6f);
            return true;
          }};
}

template <typename T>
std::vector<Variant<T>> variants(rms_norm::DType dt) {
  std::vector<Variant<T>> v = {
      {"shipped", [dt](T* o, const T* x, const T* w, int64_t rows, int64_t hidden, cudaStream_t s) {
         CK(static_cast<cudaError_t>(rms_norm::launch_rms_norm(dt, o, x, w, rows, hidden, 1e-6f, s)));
         return true;
       }}};
  for (int g : {2, 4, 8, 16, 32}) {
    v.push_back(var<T, 1, true, true>("warp group " + std::to_string(g) + " x1 pack", g));
    v.push_back(var<T, 2, true, true>("warp group " + std::to_string(g) + " x2 packs", g));
    v.push_back(var<T, 4, true, true>("warp group " + std::to_string(g) + " x4 packs", g));
  }
  v.push_back(var<T, 1, true, true>("block/row x1 pack", 0));
  v.push_back(var<T, 2, true, true>("block/row x2 packs", 0));
  v.push_back(var<T, 4, true, true>("block/row x4 packs", 0));
  v.push_back(var<T, 2, false, true>("block/row x2 plain", 0));
  v.push_back(var<T, 2, true, false>("block/row x2 w late", 0));
  return v;
}

template <typename T>
bool run(rms_norm::DType dt, const char* tname, int64_t rows, int64_t hidden, int64_t l2, cudaStream_t stream,
         explore::GraphTimer& time_graph) {
  const int64_t n = rows * hidden;
  const int64_t moved = (2 * n + hidden) * sizeof(T);
  const int sets = static_cast<int>(std::max<int64_t>(2, std::min<int64_t>(256, (3 * l2 + moved - 1) / moved)));
  std::vector<T*> in(sets), out(sets);
  std::vector<uint8_t*> ca(sets), cb(sets);
  T* w;
  std::vector<T> h(n), hw(hidden);
  uint64_t x = 88172645463325252ull;
  auto rnd = [&]() { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return (static_cast<int>(x >> 40) % 2000 - 1000) / 500.0f; };
  for (auto& v : h) {
    const float f = rnd();
    if constexpr (sizeof(T) == 4) v = f;
    else v = __float2bfloat16(f);
  }
  for (auto& v : hw) {
    const float f = 1.0f + 0.25f * rnd();
    if constexpr (sizeof(T) == 4) v = f;
    else v = __float2bfloat16(f);
  }
  CK(cudaMalloc(&w, hidden * sizeof(T)));
  CK(cudaMemcpy(w, hw.data(), hidden * sizeof(T), cudaMemcpyHostToDevice));
  for (int i = 0; i < sets; ++i) {
    CK(cudaMalloc(&in[i], n * sizeof(T)));
    CK(cudaMalloc(&out[i], n * sizeof(T)));
    CK(cudaMalloc(&ca[i], moved / 2));
    CK(cudaMalloc(&cb[i], moved / 2));
    CK(cudaMemcpy(in[i], h.data(), n * sizeof(T), cudaMemcpyHostToDevice));
  }
  const double copy_us = time_graph(sets, [&](int i) {
    CK(cudaMemcpyAsync(cb[i], ca[i], moved / 2, cudaMemcpyDeviceToDevice, stream));
  });
  std::printf("\n%lldx%lld %s: %d sets; same-bytes copy %.2f us = %.0f GB/s\n", (long long)rows, (long long)hidden, tname,
              sets, copy_us, moved / copy_us / 1e3);
  std::vector<T> ref(n), got(n);
  auto vs = variants<T>(dt);
  vs[0].launch(out[0], in[0], w, rows, hidden, stream);
  CK(cudaStreamSynchronize(stream));
  CK(cudaMemcpy(ref.data(), out[0], n * sizeof(T), cudaMemcpyDeviceToHost));
  bool all_ok = true;
  for (auto& v : vs) {
    CK(cudaMemsetAsync(out[0], 0xFF, n * sizeof(T), stream));  // on the timed stream: no race with the launch
    if (!v.launch(out[0], in[0], w, rows, hidden, stream)) continue;
    CK(cudaGetLastError());
    CK(cudaStreamSynchronize(stream));
    CK(cudaMemcpy(got.data(), out[0], n * sizeof(T), cudaMemcpyDeviceToHost));
    bool ok = true;  // other reduction orders: within one rounding of the shipped result
    for (int64_t i = 0; i < n && ok; ++i) {
      float a, b;
      if constexpr (sizeof(T) == 4) { a = got[i]; b = ref[i]; }
      else { a = __bfloat162float(got[i]); b = __bfloat162float(ref[i]); }
      const float tol = sizeof(T) == 4 ? 1e-5f : 1e-2f;
      ok = std::fabs(a - b) <= tol * (std::fabs(b) + 1e-3f);
    }
    all_ok = all_ok && ok;
    const double us = time_graph(sets, [&](int i) { v.launch(out[i], in[i], w, rows, hidden, stream); });
    std::printf("  %-26s %8.2f us %6.0f GB/s %.3fx copy %s\n", v.name.c_str(), us, moved / us / 1e3, copy_us / us,
                ok ? "" : "WRONG");
  }
  for (int i = 0; i < sets; ++i) {
    CK(cudaFree(in[i]));
    CK(cudaFree(out[i]));
    CK(cudaFree(ca[i]));
    CK(cudaFree(cb[i]));
  }
  CK(cudaFree(w));
  return all_ok;
}

int main() {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int64_t l2 = prop.l2CacheSize;
  std::printf("device %s, %d SMs, L2 %.0f MB\n", prop.name, prop.multiProcessorCount, l2 / 1e6);
  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  explore::warm_up(stream);
  explore::GraphTimer time_graph(stream);
  bool ok = true;
  using rms_norm::DType;
  ok &= run<__nv_bfloat16>(DType::kBFloat16, "bf16", 64, 4096, l2, stream, time_graph);
  ok &= run<__nv_bfloat16>(DType::kBFloat16, "bf16", 512, 4096, l2, stream, time_graph);
  ok &= run<__nv_bfloat16>(DType::kBFloat16, "bf16", 524288, 128, l2, stream, time_graph);
  ok &= run<__nv_bfloat16>(DType::kBFloat16, "bf16", 65536, 1024, l2, stream, time_graph);
  ok &= run<__nv_bfloat16>(DType::kBFloat16, "bf16", 16384, 4096, l2, stream, time_graph);
  ok &= run<__nv_bfloat16>(DType::kBFloat16, "bf16", 8192, 8192, l2, stream, time_graph);
  ok &= run<__nv_bfloat16>(DType::kBFloat16, "bf16", 4096, 16384, l2, stream, time_graph);
  ok &= run<float>(DType::kFloat32, "fp32", 512, 4096, l2, stream, time_graph);
  ok &= run<float>(DType::kFloat32, "fp32", 32768, 4096, l2, stream, time_graph);
  std::printf("\n%s\n", ok ? "all variants agree with the shipped kernel" : "SOME VARIANTS DIFFER");
  return ok ? 0 : 1;
}
