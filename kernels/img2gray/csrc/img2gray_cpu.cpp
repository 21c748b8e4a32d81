// CPU img2gray, parallel over pixels; same rounding as the CUDA kernel (see img2gray.h).
#include <ATen/Parallel.h>

#include "img2gray.h"
#include "img2gray_args.h"

void img2gray_cpu(const at::Tensor& input, at::Tensor& output) {
  img2gray::check_args(input, output);
  TORCH_CHECK(input.device().is_cpu(), "img2gray_cpu: expected a CPU tensor, got ", input.device());
  const int64_t n = output.numel();
  if (n == 0) return;
  const uint8_t* rgb = input.const_data_ptr<uint8_t>();
  uint8_t* gray = output.mutable_data_ptr<uint8_t>();
  at::parallel_for(0, n, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const uint8_t* p = rgb + 3 * i;
      gray[i] = img2gray::luma(p[0], p[1], p[2]);
    }
  });
}
