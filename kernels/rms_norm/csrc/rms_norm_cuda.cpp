// Torch-facing CUDA launcher: checks, device guard, current stream, launch-error check.
// Needs a CUDA build of torch (c10/cuda); the kernel itself is in rms_norm.cu.
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <ATen/ops/empty.h>

#include "rms_norm.h"
#include "rms_norm_args.h"

namespace {

rms_norm::DType dtype_of(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return rms_norm::DType::kFloat32;
    case at::kHalf: return rms_norm::DType::kFloat16;
    case at::kBFloat16: return rms_norm::DType::kBFloat16;
    default: break;
  }
  TORCH_CHECK(false, "rms_norm: unsupported dtype ", t.scalar_type());
  return rms_norm::DType::kFloat32;
}

}  // namespace

void rms_norm_cuda(const at::Tensor& input, const at::Tensor& weight, double eps, at::Tensor& out) {
  rms_norm::check_args(input, weight, out);
  TORCH_CHECK(input.device().is_cuda(), "rms_norm_cuda: expected a CUDA tensor, got ", input.device());
  if (out.numel() == 0) return;
  const int64_t hidden = input.size(-1);
  const c10::cuda::CUDAGuard guard(input.device());
  const auto dtype = dtype_of(input);
  const int64_t rows = input.numel() / hidden;
  // Very wide rows, too few to fill the device, take two kernels that meet in this workspace
  // (from the caching allocator: stream-ordered, and inside a CUDA graph its memory pool).
  const int64_t floats = rms_norm::rms_norm_workspace_floats(dtype, out.const_data_ptr(), input.const_data_ptr(),
                                                             weight.const_data_ptr(), rows, hidden);
  at::Tensor workspace;
  if (floats > 0) workspace = at::empty({floats}, input.options().dtype(at::kFloat));
  const int err = rms_norm::launch_rms_norm(dtype, out.mutable_data_ptr(), input.const_data_ptr(),
                                            weight.const_data_ptr(), rows, hidden, static_cast<float>(eps),
                                            c10::cuda::getCurrentCUDAStream().stream(),
                                            floats > 0 ? workspace.mutable_data_ptr<float>() : nullptr);
  TORCH_CHECK(err == 0, "rms_norm: CUDA kernel launch failed with cudaError ", err);
}
