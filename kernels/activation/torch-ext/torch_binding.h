#pragma once

#include <ATen/core/Tensor.h>

// out[..., :] = act(input[..., :d]) * input[..., d:] with input [..., 2 d] and out [..., d].
void silu_and_mul_cpu(const at::Tensor& input, at::Tensor& out);
void gelu_and_mul_cpu(const at::Tensor& input, at::Tensor& out);
void gelu_tanh_and_mul_cpu(const at::Tensor& input, at::Tensor& out);
#if defined(CUDA_KERNEL)
void silu_and_mul_cuda(const at::Tensor& input, at::Tensor& out);
void gelu_and_mul_cuda(const at::Tensor& input, at::Tensor& out);
void gelu_tanh_and_mul_cuda(const at::Tensor& input, at::Tensor& out);
#endif
