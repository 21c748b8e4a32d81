// Argument checks shared by the CPU and CUDA implementations of the gated activations.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

namespace activation {

// input: [..., 2 d] float32/float16/bfloat16 contiguous; out: [..., d], same dtype and device, contiguous.
inline void check_args(const char* op, const at::Tensor& input, const at::Tensor& out) {
  const auto t = input.scalar_type();
  TORCH_CHECK(t == at::kFloat || t == at::kHalf || t == at::kBFloat16, op,
              ": expected float32, float16 or bfloat16 input, got ", t);
  TORCH_CHECK(out.scalar_type() == t, op, ": expected out of dtype ", t, ", got ", out.scalar_type());
  TORCH_CHECK(input.dim() >= 1 && input.size(-1) % 2 == 0, op,
              ": expected input of shape [..., 2 * d] (even last dimension), got ", input.sizes());
  TORCH_CHECK(out.dim() == input.dim() && out.sizes().slice(0, out.dim() - 1) == input.sizes().slice(0, input.dim() - 1) &&
                  out.size(-1) == input.size(-1) / 2,
              op, ": expected out of shape [..., ", input.size(-1) / 2, "] matching input ", input.sizes(),
              ", got ", out.sizes());
  TORCH_CHECK(input.device() == out.device(), op, ": input is on ", input.device(), " but out is on ", out.device());
  TORCH_CHECK(input.is_contiguous(), op, ": input must be contiguous (call .contiguous())");
  TORCH_CHECK(out.is_contiguous(), op, ": out must be contiguous");
}

}  // namespace activation
