#pragma once

#include <ATen/core/Tensor.h>

// out = input / sqrt(mean(input^2, -1) + eps) * weight, for input [..., hidden] and weight [hidden].
void rms_norm_cpu(const at::Tensor& input, const at::Tensor& weight, double eps, at::Tensor& out);
#if defined(CUDA_KERNEL)
void rms_norm_cuda(const at::Tensor& input, const at::Tensor& weight, double eps, at::Tensor& out);
#endif
