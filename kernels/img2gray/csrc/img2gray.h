// img2gray: uint8 RGB pixels (HWC) -> uint8 luma, gray = 0.21 R + 0.72 G + 0.07 B.
//
// Rounding rule, identical on every backend: gray = (21 R + 72 G + 7 B + 50) / 100 in integer
// arithmetic (round half up). The weights sum to 100, so the result is always in [0, 255].
// This header includes no torch header, so device code compiles without torch.
#pragma once

#include <cstdint>

namespace img2gray {

// Weighted sum of one pixel, exact in integers.
#if defined(__CUDACC__)
__host__ __device__
#endif
inline uint8_t luma(uint32_t r, uint32_t g, uint32_t b) {
  return static_cast<uint8_t>((21u * r + 72u * g + 7u * b + 50u) / 100u);
}

#if defined(CUDA_KERNEL) || defined(__CUDACC__)
// Launches the CUDA kernel on `stream` (a cudaStream_t passed as void* to keep CUDA headers out of
// C++ callers). `rgb` holds n_pixels * 3 bytes, `gray` n_pixels bytes; both device pointers.
// Returns the cudaError_t of the launch as an int (0 = success).
int launch_img2gray(const uint8_t* rgb, uint8_t* gray, int64_t n_pixels, void* stream);
#endif

}  // namespace img2gray
