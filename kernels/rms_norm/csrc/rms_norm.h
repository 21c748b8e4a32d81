// RMS norm over the last dimension: input [rows, hidden] -> out [rows, hidden],
//   out = input / sqrt(mean(input^2) + eps) * weight,
// with the mean of squares accumulated in fp32 and every product formed in fp32, rounded once to
// the tensor dtype. This header includes no torch header, so device code compiles without torch.
#pragma once

#include <cstdint>

namespace rms_norm {

enum class DType : int { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };

#if defined(CUDA_KERNEL) || defined(__CUDACC__)
// Launches the kernel on `stream` (a cudaStream_t passed as void* to keep CUDA headers out of C++
// callers). `in` and `out` hold rows * hidden elements, `weight` hidden, all contiguous device
// memory of `dtype`. Returns the cudaError_t of the launch as an int (0 = success).
int launch_rms_norm(DType dtype, void* out, const void* in, const void* weight, int64_t rows, int64_t hidden,
                    float eps, void* stream);
#endif

}  // namespace rms_norm
