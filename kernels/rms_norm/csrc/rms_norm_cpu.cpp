// CPU RMS norm, parallel over rows; the same fp32 arithmetic as the CUDA kernel (see rms_norm.h).
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <cmath>

#include "rms_norm.h"
#include "rms_norm_args.h"

void rms_norm_cpu(const at::Tensor& input, const at::Tensor& weight, double eps, at::Tensor& out) {
  rms_norm::check_args(input, weight, out);
  TORCH_CHECK(input.device().is_cpu(), "rms_norm_cpu: expected a CPU tensor, got ", input.device());
  if (out.numel() == 0) return;
  const int64_t hidden = input.size(-1);
  const int64_t rows = input.numel() / hidden;
  const float inv_h = 1.0f / static_cast<float>(hidden);
  const float e = static_cast<float>(eps);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, input.scalar_type(), "rms_norm_cpu", [&] {
    const scalar_t* x = input.const_data_ptr<scalar_t>();
    const scalar_t* w = weight.const_data_ptr<scalar_t>();
    scalar_t* y = out.mutable_data_ptr<scalar_t>();
    const int64_t grain = std::max<int64_t>(1, (1 << 15) / hidden);
    at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const scalar_t* xr = x + r * hidden;
        scalar_t* yr = y + r * hidden;
        float ss = 0.0f;
        for (int64_t i = 0; i < hidden; ++i) {
          const float f = static_cast<float>(xr[i]);
          ss += f * f;
        }
        const float rstd = 1.0f / std::sqrt(ss * inv_h + e);
        for (int64_t i = 0; i < hidden; ++i) {
          yr[i] = static_cast<scalar_t>(static_cast<float>(xr[i]) * rstd * static_cast<float>(w[i]));
        }
      }
    });
  });
}
