// Gated activations: input [rows, 2 d] -> out [rows, d], out = act(input[:, :d]) * input[:, d:],
// computed in fp32 and rounded once to the tensor dtype.
//   silu:      act(x) = x / (1 + exp(-x))
//   gelu:      act(x) = x / 2 * (1 + erf(x / sqrt(2)))                       (exact; CUDA evaluates
//              erf to within 1.5e-7, the CPU with std::erf)
//   gelu_tanh: act(x) = x / 2 * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3)))
//                     = x / (1 + exp(-2 sqrt(2 / pi) * (x + 0.044715 x^3)))  (the same function)
// This header includes no torch header, so device code compiles without torch.
#pragma once

#include <cstdint>

namespace activation {

enum class Act : int { kSilu = 0, kGelu = 1, kGeluTanh = 2 };
enum class DType : int { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };

// 2 sqrt(2 / pi): gelu_tanh written as a logistic function.
constexpr float kGeluTanhScale = 1.5957691216057308f;
constexpr float kGeluTanhCubic = 0.044715f;
constexpr float kSqrtHalf = 0.7071067811865476f;

#if defined(CUDA_KERNEL) || defined(__CUDACC__)
// Launches out = act(in[:, :d]) * in[:, d:] on `stream` (a cudaStream_t passed as void* to keep CUDA
// headers out of C++ callers). `in` holds rows * 2 d elements, `out` rows * d, both contiguous device
// memory of `dtype`. Returns the cudaError_t of the launch as an int (0 = success).
int launch_act_and_mul(Act act, DType dtype, void* out, const void* in, int64_t rows, int64_t d, void* stream);
#endif

}  // namespace activation
