// Torch-facing CUDA launchers: checks, device guard, current stream, launch-error check.
// Needs a CUDA build of torch (c10/cuda); the kernels themselves are in activation.cu.
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "activation.h"
#include "activation_args.h"

namespace {

using activation::Act;
using activation::DType;

DType dtype_of(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return DType::kFloat32;
    case at::kHalf: return DType::kFloat16;
    case at::kBFloat16: return DType::kBFloat16;
    default: break;
  }
  TORCH_CHECK(false, "activation: unsupported dtype ", t.scalar_type());
  return DType::kFloat32;
}

void act_and_mul_cuda(Act act, const char* op, const at::Tensor& input, at::Tensor& out) {
  activation::check_args(op, input, out);
  TORCH_CHECK(input.device().is_cuda(), op, "_cuda: expected a CUDA tensor, got ", input.device());
  const int64_t d = out.size(-1);
  if (out.numel() == 0) return;
  const c10::cuda::CUDAGuard guard(input.device());
  const int err = activation::launch_act_and_mul(act, dtype_of(input), out.mutable_data_ptr(), input.const_data_ptr(),
                                                 out.numel() / d, d, c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == 0, op, ": CUDA kernel launch failed with cudaError ", err);
}

}  // namespace

void silu_and_mul_cuda(const at::Tensor& input, at::Tensor& out) {
  act_and_mul_cuda(Act::kSilu, "silu_and_mul", input, out);
}
void gelu_and_mul_cuda(const at::Tensor& input, at::Tensor& out) {
  act_and_mul_cuda(Act::kGelu, "gelu_and_mul", input, out);
}
void gelu_tanh_and_mul_cuda(const at::Tensor& input, at::Tensor& out) {
  act_and_mul_cuda(Act::kGeluTanh, "gelu_tanh_and_mul", input, out);
}
