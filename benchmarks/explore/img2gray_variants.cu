// img2gray design space, timed without torch: the shipped kernel (kernels/img2gray/csrc/img2gray.cu,
// included below) against the alternatives it was chosen over, at the benchmark sizes, next to a
// device copy that moves the same bytes. Each variant is checked byte for byte against a CPU
// reference before it is timed.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -I kernels/img2gray/csrc \
//        benchmarks/explore/img2gray_variants.cu -o /tmp/img2gray_variants && /tmp/img2gray_variants
//
// Timing: a CUDA graph holds one launch per input set, rotating through sets whose total exceeds
// 3x L2 (so every launch reads from DRAM); the median of 30 replays, divided by the launches.
// Bytes moved per launch: 3 read + 1 written per pixel.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "../../kernels/img2gray/csrc/img2gray.cu"

#include "graph_timing.cuh"

namespace v {

using img2gray::luma;

// V0: the guide's kernel shape: one thread per pixel, three byte loads.
__global__ void naive(const uint8_t* __restrict__ rgb, uint8_t* __restrict__ gray, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) gray[i] = luma(rgb[3 * i], rgb[3 * i + 1], rgb[3 * i + 2]);
}

constexpr uint32_t kW = 21u | (72u << 8) | (7u << 16);

template <int P>
__device__ __forceinline__ uint32_t gl(const uint32_t (&w)[12]) {
  constexpr int b = 3 * P, k = b / 4, o = b % 4;
  const uint32_t hi = o <= 1 ? w[k] : w[k + 1];
  return __dp4a(__byte_perm(w[k], hi, 0x3210u + 0x1111u * o), kW, 50u) / 100u;
}
template <int J>
__device__ __forceinline__ uint32_t p4(const uint32_t (&w)[12]) {
  return gl<4 * J>(w) | (gl<4 * J + 1>(w) << 8) | (gl<4 * J + 2>(w) << 16) | (gl<4 * J + 3>(w) << 24);
}
__device__ __forceinline__ uint4 convert(uint4 a, uint4 b, uint4 c) {
  const uint32_t w[12] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w, c.x, c.y, c.z, c.w};
  return make_uint4(p4<0>(w), p4<1>(w), p4<2>(w), p4<3>(w));
}

// Scalar tail shared by the variants: pixels [first, n).
__device__ __forceinline__ void tail(const uint8_t* rgb, uint8_t* gray, int64_t first, int64_t n, int64_t j) {
  const int64_t p = first + j;
  if (p < n) gray[p] = luma(rgb[3 * p], rgb[3 * p + 1], rgb[3 * p + 2]);
}

// V2: U groups per thread, all loads issued before the first conversion. STREAM: .cs hints.
template <int U, bool STREAM>
__global__ void multi(const uint8_t* __restrict__ rgb, uint8_t* __restrict__ gray, int64_t ng, int64_t n) {
  const int64_t base = static_cast<int64_t>(blockIdx.x) * blockDim.x * U + threadIdx.x;
  uint4 a[U], b[U], c[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t g = base + static_cast<int64_t>(u) * blockDim.x;
    if (g < ng) {
      const uint4* s = reinterpret_cast<const uint4*>(rgb) + 3 * g;
      if (STREAM) {
        a[u] = __ldcs(s); b[u] = __ldcs(s + 1); c[u] = __ldcs(s + 2);
      } else {
        a[u] = __ldg(s); b[u] = __ldg(s + 1); c[u] = __ldg(s + 2);
      }
    }
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t g = base + static_cast<int64_t>(u) * blockDim.x;
    if (g < ng) {
      const uint4 o = convert(a[u], b[u], c[u]);
      if (STREAM) __stcs(reinterpret_cast<uint4*>(gray) + g, o);
      else reinterpret_cast<uint4*>(gray)[g] = o;
    }
  }
  if (blockIdx.x == gridDim.x - 1) tail(rgb, gray, ng * 16, n, threadIdx.x);
}

// V3: warp-cooperative loads (512 contiguous bytes per instruction), transposed through shared memory.
__global__ void __launch_bounds__(256) staged(const uint8_t* __restrict__ rgb, uint8_t* __restrict__ gray,
                                              int64_t ng, int64_t n) {
  __shared__ uint4 buf[8][96];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t g0 = (static_cast<int64_t>(blockIdx.x) * 8 + warp) * 32;  // first group of this warp
  const uint4* src = reinterpret_cast<const uint4*>(rgb) + 3 * g0;
  const int64_t left = 3 * (ng - g0);
  const int64_t valid = left < 96 ? left : 96;  // uint4s of this warp's 32 groups
#pragma unroll
  for (int k = 0; k < 3; ++k) {
    const int idx = lane + 32 * k;
    if (idx < valid) buf[warp][idx] = __ldg(src + idx);
  }
  __syncwarp();
  const int64_t g = g0 + lane;
  if (g < ng) {
    reinterpret_cast<uint4*>(gray)[g] = convert(buf[warp][3 * lane], buf[warp][3 * lane + 1], buf[warp][3 * lane + 2]);
  }
  if (blockIdx.x == gridDim.x - 1) tail(rgb, gray, ng * 16, n, threadIdx.x);
}

// V4: persistent grid-stride version of the shipped kernel (grid = SMs x blocks per SM).
__global__ void __launch_bounds__(256) persistent(const uint8_t* __restrict__ rgb, uint8_t* __restrict__ gray,
                                                  int64_t ng, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; g < ng; g += stride) {
    const uint4* s = reinterpret_cast<const uint4*>(rgb) + 3 * g;
    reinterpret_cast<uint4*>(gray)[g] = convert(__ldg(s), __ldg(s + 1), __ldg(s + 2));
  }
  if (blockIdx.x == gridDim.x - 1) tail(rgb, gray, ng * 16, n, threadIdx.x);
}

}  // namespace v

struct Variant {
  std::string name;
  std::function<void(const uint8_t*, uint8_t*, int64_t, cudaStream_t)> launch;
};

static unsigned blocks_for(int64_t items, int per_block) {
  return static_cast<unsigned>(std::max<int64_t>(1, (items + per_block - 1) / per_block));
}

int main(int argc, char** argv) {
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  const int64_t l2 = prop.l2CacheSize;
  std::printf("device %s, %d SMs, L2 %.0f MB\n", prop.name, sms, l2 / 1e6);
  FILE* csv = argc > 1 ? std::fopen(argv[1], "w") : nullptr;
  if (csv) std::fprintf(csv, "variant,height,width,bytes,us,gbps\n");

  std::vector<Variant> vs = {
      {"shipped (vec16, 256 thr)", [](const uint8_t* r, uint8_t* g, int64_t n, cudaStream_t s) {
         CK(static_cast<cudaError_t>(img2gray::launch_img2gray(r, g, n, s))); }},
      {"naive 1 px/thread", [](const uint8_t* r, uint8_t* g, int64_t n, cudaStream_t s) {
         v::naive<<<blocks_for(n, 256), 256, 0, s>>>(r, g, n); }},
      {"vec16 x1, 128 thr", [](const uint8_t* r, uint8_t* g, int64_t n, cudaStream_t s) {
         v::multi<1, false><<<blocks_for(n / 16, 128), 128, 0, s>>>(r, g, n / 16, n); }},
      {"vec16 x1, 512 thr", [](const uint8_t* r, uint8_t* g, int64_t n, cudaStream_t s) {
         v::multi<1, false><<<blocks_for(n / 16, 512), 512, 0, s>>>(r, g, n / 16, n); }},
      {"vec16 x2, 256 thr", [](const uint8_t* r, uint8_t* g, int64_t n, cudaStream_t s) {
         v::multi<2, false><<<blocks_for(n / 16, 512), 256, 0, s>>>(r, g, n / 16, n); }},
      {"vec16 x4, 256 thr", [](const uint8_t* r, uint8_t* g, int64_t n, cudaStream_t s) {
         v::multi<4, false><<<blocks_for(n / 16, 1024), 256, 0, s>>>(r, g, n / 16, n); }},
      {"vec16 x1 streaming .cs", [](const uint8_t* r, uint8_t* g, int64_t n, cudaStream_t s) {
         v::multi<1, true><<<blocks_for(n / 16, 256), 256, 0, s>>>(r, g, n / 16, n); }},
      {"smem-staged warp loads", [](const uint8_t* r, uint8_t* g, int64_t n, cudaStream_t s) {
         v::staged<<<blocks_for(n / 16, 256), 256, 0, s>>>(r, g, n / 16, n); }},
      {"persistent SMs x8", [sms](const uint8_t* r, uint8_t* g, int64_t n, cudaStream_t s) {
         v::persistent<<<static_cast<unsigned>(sms * 8), 256, 0, s>>>(r, g, n / 16, n); }},
  };

  const int sizes[][2] = {{1080, 1920}, {2160, 3840}, {4320, 7680}, {8640, 15360}};
  cudaStream_t stream;
  CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  bool all_ok = true;

  explore::warm_up(stream);
  explore::GraphTimer time_graph(stream);

  for (auto& hw : sizes) {
    const int64_t n = static_cast<int64_t>(hw[0]) * hw[1];
    const int64_t moved = 4 * n;
    const int sets = static_cast<int>(std::max<int64_t>(2, std::min<int64_t>(64, (3 * l2 + moved - 1) / moved)));
    std::vector<uint8_t*> in(sets), out(sets), cpy(sets);
    std::vector<uint8_t> h_in(3 * n), h_ref(n), h_out(n);
    uint64_t x = 0x9E3779B97F4A7C15ull ^ n;
    for (auto& b : h_in) {
      x ^= x << 13; x ^= x >> 7; x ^= x << 17;
      b = static_cast<uint8_t>(x >> 24);
    }
    for (int64_t i = 0; i < n; ++i) h_ref[i] = img2gray::luma(h_in[3 * i], h_in[3 * i + 1], h_in[3 * i + 2]);
    for (int i = 0; i < sets; ++i) {
      CK(cudaMalloc(&in[i], 3 * n));
      CK(cudaMalloc(&out[i], n));
      CK(cudaMalloc(&cpy[i], 2 * n));
      CK(cudaMemcpy(in[i], h_in.data(), 3 * n, cudaMemcpyHostToDevice));
    }
    // Same-bytes copy: 2n read + 2n written = 4n bytes, like one img2gray launch.
    const double copy_us = time_graph(sets, [&](int i) {
      CK(cudaMemcpyAsync(cpy[i], in[i], 2 * n, cudaMemcpyDeviceToDevice, stream));
    });
    std::printf("\n%dx%d: %d input sets; same-bytes copy %.2f us = %.0f GB/s\n", hw[0], hw[1], sets, copy_us,
                moved / copy_us / 1e3);
    if (csv) std::fprintf(csv, "copy same bytes,%d,%d,%lld,%.3f,%.1f\n", hw[0], hw[1], (long long)moved, copy_us,
                          moved / copy_us / 1e3);
    for (auto& var : vs) {
      CK(cudaMemsetAsync(out[0], 0xA5, n, stream));  // on the timed stream: no race with the launch
      var.launch(in[0], out[0], n, stream);
      CK(cudaGetLastError());
      CK(cudaStreamSynchronize(stream));
      CK(cudaMemcpy(h_out.data(), out[0], n, cudaMemcpyDeviceToHost));
      const bool ok = std::memcmp(h_out.data(), h_ref.data(), n) == 0;
      all_ok = all_ok && ok;
      const double us = time_graph(sets, [&](int i) { var.launch(in[i], out[i], n, stream); });
      std::printf("  %-26s %8.2f us %7.0f GB/s  %.3fx copy  %s\n", var.name.c_str(), us, moved / us / 1e3,
                  copy_us / us, ok ? "ok" : "WRONG");
      if (csv) std::fprintf(csv, "%s,%d,%d,%lld,%.3f,%.1f\n", var.name.c_str(), hw[0], hw[1], (long long)moved, us,
                            moved / us / 1e3);
    }
    for (int i = 0; i < sets; ++i) {
      CK(cudaFree(in[i]));
      CK(cudaFree(out[i]));
      CK(cudaFree(cpy[i]));
    }
  }
  if (csv) std::fclose(csv);
  std::printf("\n%s\n", all_ok ? "all variants correct" : "SOME VARIANTS WRONG");
  return all_ok ? 0 : 1;
}
