#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  // RMS norm over the last dimension of input, scaled by weight, written into out (same shape).
  ops.def("rms_norm(Tensor input, Tensor weight, float eps, Tensor! out) -> ()");
  ops.impl("rms_norm", c10::DeviceType::CPU, &rms_norm_cpu);
#if defined(CUDA_KERNEL)
  ops.impl("rms_norm", c10::DeviceType::CUDA, &rms_norm_cuda);
#endif
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
