#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  // out = silu(input[..., :d]) * input[..., d:], silu(x) = x * sigmoid(x).
  ops.def("silu_and_mul(Tensor input, Tensor! out) -> ()");
  // out = gelu(input[..., :d]) * input[..., d:], exact (erf) gelu.
  ops.def("gelu_and_mul(Tensor input, Tensor! out) -> ()");
  // out = gelu(input[..., :d]) * input[..., d:], tanh-approximated gelu.
  ops.def("gelu_tanh_and_mul(Tensor input, Tensor! out) -> ()");
  ops.impl("silu_and_mul", c10::DeviceType::CPU, &silu_and_mul_cpu);
  ops.impl("gelu_and_mul", c10::DeviceType::CPU, &gelu_and_mul_cpu);
  ops.impl("gelu_tanh_and_mul", c10::DeviceType::CPU, &gelu_tanh_and_mul_cpu);
#if defined(CUDA_KERNEL)
  ops.impl("silu_and_mul", c10::DeviceType::CUDA, &silu_and_mul_cuda);
  ops.impl("gelu_and_mul", c10::DeviceType::CUDA, &gelu_and_mul_cuda);
  ops.impl("gelu_tanh_and_mul", c10::DeviceType::CUDA, &gelu_tanh_and_mul_cuda);
#endif
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
