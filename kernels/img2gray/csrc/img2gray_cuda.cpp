// Torch-facing CUDA launcher: checks, device guard, current stream, launch-error check.
// Needs a CUDA build of torch (c10/cuda); the kernel itself is in img2gray.cu.
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "img2gray.h"
#include "img2gray_args.h"

void img2gray_cuda(const at::Tensor& input, at::Tensor& output) {
  img2gray::check_args(input, output);
  TORCH_CHECK(input.device().is_cuda(), "img2gray_cuda: expected a CUDA tensor, got ", input.device());
  const int64_t n = output.numel();
  if (n == 0) return;
  const c10::cuda::CUDAGuard guard(input.device());
  const int err = img2gray::launch_img2gray(input.const_data_ptr<uint8_t>(),
                                            output.mutable_data_ptr<uint8_t>(), n,
                                            c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == 0, "img2gray: CUDA kernel launch failed with cudaError ", err);
}
