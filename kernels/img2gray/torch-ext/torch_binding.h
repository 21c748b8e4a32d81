#pragma once

#include <ATen/core/Tensor.h>

// output[..., h, w] = gray value of input[..., h, w, :] (uint8 RGB -> uint8 luma).
void img2gray_cpu(const at::Tensor& input, at::Tensor& output);
#if defined(CUDA_KERNEL)
void img2gray_cuda(const at::Tensor& input, at::Tensor& output);
#endif
