#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  // Gray value of each uint8 RGB pixel of input [..., 3], written into output [...].
  ops.def("img2gray(Tensor input, Tensor! output) -> ()");
  ops.impl("img2gray", c10::DeviceType::CPU, &img2gray_cpu);
#if defined(CUDA_KERNEL)
  ops.impl("img2gray", c10::DeviceType::CUDA, &img2gray_cuda);
#endif
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
