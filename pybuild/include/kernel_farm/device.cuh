// What launch heuristics read of a device: its peak memory bandwidth, and any lookup kept per device.
//
// One of the farm's shared kernel headers: pybuild ships them and adds their folder to every
// generated CMake project, so a kernel includes it as <kernel_farm/device.cuh> and carries no copy.
#ifndef KERNEL_FARM_DEVICE_CUH_
#define KERNEL_FARM_DEVICE_CUH_

#include <cuda_runtime.h>

namespace farm_device {

// The peak memory bandwidth of device `dev` in GB/s (2 x memory clock x bus width), or 0 where the
// driver does not report the clock or the bus width. An attribute the driver does not report is
// not the caller's error: the error is cleared (and only it).
inline double peak_memory_gbps(int dev) {
  int mem_khz = 0, bus_bits = 0;
  if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev) != cudaSuccess) {
    mem_khz = 0;
    cudaGetLastError();
  }
  if (cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev) != cudaSuccess) {
    bus_bits = 0;
    cudaGetLastError();
  }
  return 2.0 * mem_khz * 1e3 * (bus_bits / 8) / 1e9;
}

// lookup(dev) for the current device, computed on the first call for that device and kept
// (devices 0-63); a default-constructed value where the current device cannot be read. Each call
// site passes a lambda of its own type, so each keeps its own values:
//   Shape shape() { return farm_device::per_device([](int dev) { Shape s; ...; return s; }); }
template <typename Lookup>
auto per_device(Lookup lookup) -> decltype(lookup(0)) {
  using T = decltype(lookup(0));
  static T cache[64];
  static bool known[64] = {};
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return T{};
  if (!known[dev]) {
    cache[dev] = lookup(dev);
    known[dev] = true;
  }
  return cache[dev];
}

}  // namespace farm_device

#endif  // KERNEL_FARM_DEVICE_CUH_
