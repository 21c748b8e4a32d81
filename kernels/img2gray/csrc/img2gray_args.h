// Argument checks shared by the CPU and CUDA implementations of img2gray.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

namespace img2gray {

// input: [..., 3] uint8 contiguous; output: input.shape[:-1] uint8 contiguous, same device.
inline void check_args(const at::Tensor& input, const at::Tensor& output) {
  TORCH_CHECK(input.scalar_type() == at::kByte, "img2gray: expected uint8 input, got ",
              input.scalar_type());
  TORCH_CHECK(output.scalar_type() == at::kByte, "img2gray: expected uint8 output, got ",
              output.scalar_type());
  TORCH_CHECK(input.dim() >= 3 && input.size(-1) == 3,
              "img2gray: expected input of shape [..., H, W, 3], got ", input.sizes());
  TORCH_CHECK(output.sizes() == input.sizes().slice(0, input.dim() - 1),
              "img2gray: expected output of shape ", input.sizes().slice(0, input.dim() - 1),
              ", got ", output.sizes());
  TORCH_CHECK(input.device() == output.device(), "img2gray: input is on ", input.device(),
              " but output is on ", output.device());
  TORCH_CHECK(input.is_contiguous(), "img2gray: input must be contiguous (call .contiguous())");
  TORCH_CHECK(output.is_contiguous(), "img2gray: output must be contiguous");
}

}  // namespace img2gray
