// CUDA img2gray: one thread per pixel, grid-stride loop over the flattened image.
#include <cuda_runtime.h>

#include <cstdint>

#include "img2gray.h"

namespace img2gray {

namespace {

// rgb: [n_pixels, 3] uint8, gray: [n_pixels] uint8, both contiguous.
__global__ void img2gray_kernel(const uint8_t* __restrict__ rgb, uint8_t* __restrict__ gray,
                                int64_t n_pixels) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n_pixels;
       i += stride) {
    const uint8_t* p = rgb + 3 * i;
    gray[i] = luma(p[0], p[1], p[2]);
  }
}

}  // namespace

int launch_img2gray(const uint8_t* rgb, uint8_t* gray, int64_t n_pixels, void* stream) {
  if (n_pixels == 0) return 0;
  constexpr int kThreads = 256;
  int64_t blocks = (n_pixels + kThreads - 1) / kThreads;
  if (blocks > 65535 * 32) blocks = 65535 * 32;
  img2gray_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      rgb, gray, n_pixels);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace img2gray
