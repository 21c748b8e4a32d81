// CUDA img2gray: uint8 RGB [n_pixels, 3] -> uint8 gray [n_pixels]. Purely memory-bound
// (3 bytes read + 1 written per pixel), so the work is in moving bytes with wide accesses.
//
// Fast path (rgb and gray both 16-byte aligned, the case for fresh torch allocations): each thread
// converts one group of 16 pixels: three 16-byte loads bring its 48 input bytes, one 16-byte store
// writes its 16 gray bytes. A warp's three loads cover 1536 contiguous bytes, so every sector is
// used; the overlap between neighbouring loads is served by L1. Loads are plain and the store
// streaming (.cs, evict-first: each byte is touched once). Streaming loads gain little on large
// images and make the time depend on where the output lands (memory another kernel has just
// released or not), so the loads stay plain. Per pixel: one
// byte_perm gathers (R, G, B) into a word, one dp4a forms 21 R + 72 G + 7 B + 50, and the division
// by the constant 100 compiles to a multiply-high and a shift. The n_pixels % 16 pixels past the last full group
// are converted by a scalar path in the same launch. Unaligned pointers (a view at an odd storage
// offset) take a scalar grid-stride kernel.
#include <cuda_runtime.h>

#include <cstdint>

#include <kernel_farm/pdl.cuh>

#include "img2gray.h"

namespace img2gray {

namespace {

constexpr int kThreads = 256;
constexpr int kGroup = 16;  // pixels per thread on the fast path

// (R, G, B, x) weights for dp4a; the fourth byte is ignored (weight 0).
constexpr uint32_t kWeights = 21u | (72u << 8) | (7u << 16);

// Gray value of pixel p (0..15) of a group whose 48 bytes are w[0..11] (little-endian words).
template <int P>
__device__ __forceinline__ uint32_t group_luma(const uint32_t (&w)[12]) {
  constexpr int kByte = 3 * P;
  constexpr int kWord = kByte / 4;
  constexpr int kOff = kByte % 4;
  // Bytes kOff..kOff+2 of the 8 bytes (w[kWord], w[kWord + 1]): the pixel's R, G, B.
  constexpr uint32_t kSel = 0x3210u + 0x1111u * kOff;
  const uint32_t hi = kOff <= 1 ? w[kWord] : w[kWord + 1];  // a pixel at offset 0/1 lies in one word
  const uint32_t rgb = __byte_perm(w[kWord], hi, kSel);
  const uint32_t sum = __dp4a(rgb, kWeights, 50u);  // 21 R + 72 G + 7 B + 50, at most 25550
  return sum / 100u;                                // same rounding as luma() in img2gray.h
}

template <int J>
__device__ __forceinline__ uint32_t pack4(const uint32_t (&w)[12]) {
  return group_luma<4 * J>(w) | (group_luma<4 * J + 1>(w) << 8) | (group_luma<4 * J + 2>(w) << 16) |
         (group_luma<4 * J + 3>(w) << 24);
}

// rgb: [n_groups * 16 + tail, 3], gray: [n_groups * 16 + tail]; both 16-byte aligned.
// Thread i < n_groups converts group i; thread n_groups + j (j < tail) converts pixel 16 n_groups + j.
__global__ void __launch_bounds__(kThreads) img2gray_vec16_kernel(const uint8_t* __restrict__ rgb,
                                                                  uint8_t* __restrict__ gray,
                                                                  int64_t n_groups, int tail, bool trigger) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  const uint4* src = reinterpret_cast<const uint4*>(rgb) + 3 * i;
  farm_pdl::wait_for_previous_grid(src);
  uint4 a, b, c;
  if (i < n_groups) {
    a = src[0];
    b = src[1];
    c = src[2];
  }
  farm_pdl::allow_next_grid(trigger);
  if (i < n_groups) {
    const uint32_t w[12] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w, c.x, c.y, c.z, c.w};
    uint4 out;
    out.x = pack4<0>(w);
    out.y = pack4<1>(w);
    out.z = pack4<2>(w);
    out.w = pack4<3>(w);
    __stcs(reinterpret_cast<uint4*>(gray) + i, out);
  } else if (i - n_groups < tail) {
    const int64_t p = n_groups * kGroup + (i - n_groups);
    gray[p] = luma(rgb[3 * p], rgb[3 * p + 1], rgb[3 * p + 2]);
  }
}

// Any alignment: one pixel per thread, grid-stride.
__global__ void img2gray_scalar_kernel(const uint8_t* __restrict__ rgb, uint8_t* __restrict__ gray,
                                       int64_t n_pixels, bool trigger) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  farm_pdl::wait_for_previous_grid();
  farm_pdl::allow_next_grid(trigger);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n_pixels;
       i += stride) {
    const uint8_t* p = rgb + 3 * i;
    gray[i] = luma(p[0], p[1], p[2]);
  }
}

bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

// Every img2gray launch, with or without the PDL attribute (pdl.cuh).
int launch_with(const uint8_t* rgb, uint8_t* gray, int64_t n_pixels, cudaStream_t s, bool pdl) {
  if (n_pixels <= 0) return 0;
  if (aligned16(rgb) && aligned16(gray)) {
    const int64_t n_groups = n_pixels / kGroup;
    const int tail = static_cast<int>(n_pixels % kGroup);
    const int64_t blocks = (n_groups + tail + kThreads - 1) / kThreads;
    const bool trigger = pdl && farm_pdl::trigger_pays(int64_t{kThreads} * kGroup * 4);
    farm_pdl::launch(img2gray_vec16_kernel, static_cast<unsigned>(blocks), kThreads, s, pdl, rgb, gray, n_groups, tail,
                     trigger);
  } else {
    int64_t blocks = (n_pixels + kThreads - 1) / kThreads;
    if (blocks > 65535 * 32) blocks = 65535 * 32;
    const bool trigger = pdl && farm_pdl::trigger_pays(4 * n_pixels / blocks);
    farm_pdl::launch(img2gray_scalar_kernel, static_cast<unsigned>(blocks), kThreads, s, pdl, rgb, gray, n_pixels,
                     trigger);
  }
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int launch_img2gray(const uint8_t* rgb, uint8_t* gray, int64_t n_pixels, void* stream) {
  return launch_with(rgb, gray, n_pixels, static_cast<cudaStream_t>(stream), farm_pdl::enabled());
}

}  // namespace img2gray
