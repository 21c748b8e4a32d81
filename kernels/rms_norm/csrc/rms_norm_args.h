// Argument checks shared by the CPU and CUDA implementations of rms_norm.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

namespace rms_norm {

// input: [..., hidden] float32/float16/bfloat16 contiguous; weight: [hidden]; out: like input.
inline void check_args(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& out) {
  const auto t = input.scalar_type();
  TORCH_CHECK(t == at::kFloat || t == at::kHalf || t == at::kBFloat16,
              "rms_norm: expected float32, float16 or bfloat16 input, got ", t);
  TORCH_CHECK(weight.scalar_type() == t, "rms_norm: expected weight of dtype ", t, ", got ", weight.scalar_type());
  TORCH_CHECK(out.scalar_type() == t, "rms_norm: expected out of dtype ", t, ", got ", out.scalar_type());
  TORCH_CHECK(input.dim() >= 1 && input.size(-1) > 0, "rms_norm: expected input of shape [..., hidden], got ",
              input.sizes());
  TORCH_CHECK(weight.dim() == 1 && weight.size(0) == input.size(-1), "rms_norm: expected weight of shape [",
              input.size(-1), "], got ", weight.sizes());
  TORCH_CHECK(out.sizes() == input.sizes(), "rms_norm: expected out of shape ", input.sizes(), ", got ", out.sizes());
  TORCH_CHECK(input.device() == out.device() && input.device() == weight.device(), "rms_norm: input is on ",
              input.device(), ", weight on ", weight.device(), ", out on ", out.device(), "; use one device");
  TORCH_CHECK(input.is_contiguous(), "rms_norm: input must be contiguous (call .contiguous())");
  TORCH_CHECK(weight.is_contiguous(), "rms_norm: weight must be contiguous");
  TORCH_CHECK(out.is_contiguous(), "rms_norm: out must be contiguous");
}

}  // namespace rms_norm
