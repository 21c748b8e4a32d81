"""Neuron (AWS), TPU (Google) and CANN (Huawei Ascend): backends of pure-Python kernels only (their
``torch-neuron``, ``torch-tpu`` and ``torch-npu`` variants). Nothing here is compiled for them, so
their facts say all there is."""

from __future__ import annotations

from .base import BaseBackend


class Neuron(BaseBackend):
    pass


class Tpu(BaseBackend):
    pass


class Cann(BaseBackend):
    pass
