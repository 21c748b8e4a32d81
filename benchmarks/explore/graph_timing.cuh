// What the design-space explorers (benchmarks/explore/*_variants.cu) share: CUDA error checks, a
// warm-up, and the timing: a CUDA graph holds one launch per input set (sets together past 3x L2,
// so every launch reads DRAM); the result is the median of 30 replays divided by the launches.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#define CK(x)                                                                                 \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

namespace explore {

// Brings the clocks up: ~1 s of 1 GiB device copies on `stream`.
inline void warm_up(cudaStream_t stream) {
  void *a, *b;
  CK(cudaMalloc(&a, 1 << 30));
  CK(cudaMalloc(&b, 1 << 30));
  for (int i = 0; i < 400; ++i) CK(cudaMemcpyAsync(b, a, 1 << 30, cudaMemcpyDeviceToDevice, stream));
  CK(cudaStreamSynchronize(stream));
  CK(cudaFree(a));
  CK(cudaFree(b));
}

// time(sets, one): microseconds per launch, where one(i) issues the launch for input set i.
class GraphTimer {
 public:
  explicit GraphTimer(cudaStream_t stream) : stream_(stream) {
    CK(cudaEventCreate(&e0_));
    CK(cudaEventCreate(&e1_));
  }
  GraphTimer(const GraphTimer&) = delete;
  GraphTimer& operator=(const GraphTimer&) = delete;
  ~GraphTimer() {
    cudaEventDestroy(e0_);
    cudaEventDestroy(e1_);
  }

  double operator()(int sets, const std::function<void(int)>& one) {
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    for (int i = 0; i < sets; ++i) one(i);  // warm-up outside the graph
    CK(cudaStreamSynchronize(stream_));
    CK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < sets; ++i) one(i);
    CK(cudaStreamEndCapture(stream_, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    for (int w = 0; w < 3; ++w) CK(cudaGraphLaunch(exec, stream_));
    std::vector<float> ms;
    for (int r = 0; r < 30; ++r) {
      CK(cudaEventRecord(e0_, stream_));
      CK(cudaGraphLaunch(exec, stream_));
      CK(cudaEventRecord(e1_, stream_));
      CK(cudaEventSynchronize(e1_));
      float t;
      CK(cudaEventElapsedTime(&t, e0_, e1_));
      ms.push_back(t);
    }
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(graph));
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2] * 1e3 / sets;
  }

 private:
  cudaStream_t stream_;
  cudaEvent_t e0_, e1_;
};

}  // namespace explore
