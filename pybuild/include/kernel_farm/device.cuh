// What launch heuristics read of a device beyond its plain attributes.
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

}  // namespace farm_device

#endif  // KERNEL_FARM_DEVICE_CUH_
