#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "registration.h"
#include "torch_binding.h"

namespace {

// The allocating form of an out= implementation: out is made here, in C++, so that a plain call
// from Python is one dispatcher call (a torch.empty_like from Python costs about as much again).
template <void (*Impl)(const at::Tensor&, const at::Tensor&, double, at::Tensor&)>
at::Tensor allocating(const at::Tensor& input, const at::Tensor& weight, double eps) {
  at::Tensor out = at::empty(input.sizes(), input.options());
  Impl(input, weight, eps, out);
  return out;
}

}  // namespace

TORCH_LIBRARY_EXPAND(TORCH_EXTENSION_NAME, ops) {
  // RMS norm over the last dimension of input, scaled by weight, written into out (same shape).
  ops.def("rms_norm(Tensor input, Tensor weight, float eps, Tensor! out) -> ()");
  // The same, returning a new contiguous tensor.
  ops.def("rms_norm_alloc(Tensor input, Tensor weight, float eps) -> Tensor");
  ops.impl("rms_norm", c10::DeviceType::CPU, TORCH_FN(rms_norm_cpu));
  ops.impl("rms_norm_alloc", c10::DeviceType::CPU, TORCH_FN(allocating<rms_norm_cpu>));
#if defined(CUDA_KERNEL)
  ops.impl("rms_norm", c10::DeviceType::CUDA, TORCH_FN(rms_norm_cuda));
  ops.impl("rms_norm_alloc", c10::DeviceType::CUDA, TORCH_FN(allocating<rms_norm_cuda>));
#endif
}

REGISTER_EXTENSION(TORCH_EXTENSION_NAME)
