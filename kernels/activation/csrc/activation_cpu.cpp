// CPU gated activations, parallel over rows; fp32 arithmetic with the same formulas as the CUDA
// kernels (see activation.h), so the two agree to within fp32 rounding.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <cmath>

#include "activation.h"
#include "activation_args.h"

namespace {

using activation::Act;

template <Act A>
inline float act(float x) {
  if constexpr (A == Act::kSilu) {
    return x / (1.0f + std::exp(-x));
  } else if constexpr (A == Act::kGelu) {
    return 0.5f * x * (1.0f + std::erf(x * activation::kSqrtHalf));
  } else {
    return x / (1.0f + std::exp(-activation::kGeluTanhScale * (x + activation::kGeluTanhCubic * x * x * x)));
  }
}

template <Act A>
void act_and_mul_cpu(const char* op, const at::Tensor& input, at::Tensor& out) {
  activation::check_args(op, input, out);
  TORCH_CHECK(input.device().is_cpu(), op, "_cpu: expected a CPU tensor, got ", input.device());
  const int64_t d = out.size(-1);
  if (out.numel() == 0) return;
  const int64_t rows = out.numel() / d;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, input.scalar_type(), "act_and_mul_cpu", [&] {
    const scalar_t* in = input.const_data_ptr<scalar_t>();
    scalar_t* o = out.mutable_data_ptr<scalar_t>();
    const int64_t grain = std::max<int64_t>(1, (1 << 15) / d);
    at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const scalar_t* gate = in + r * 2 * d;
        const scalar_t* up = gate + d;
        scalar_t* dst = o + r * d;
        for (int64_t j = 0; j < d; ++j) {
          dst[j] = static_cast<scalar_t>(act<A>(static_cast<float>(gate[j])) * static_cast<float>(up[j]));
        }
      }
    });
  });
}

}  // namespace

void silu_and_mul_cpu(const at::Tensor& input, at::Tensor& out) {
  act_and_mul_cpu<Act::kSilu>("silu_and_mul", input, out);
}
void gelu_and_mul_cpu(const at::Tensor& input, at::Tensor& out) {
  act_and_mul_cpu<Act::kGelu>("gelu_and_mul", input, out);
}
void gelu_tanh_and_mul_cpu(const at::Tensor& input, at::Tensor& out) {
  act_and_mul_cpu<Act::kGeluTanh>("gelu_tanh_and_mul", input, out);
}
