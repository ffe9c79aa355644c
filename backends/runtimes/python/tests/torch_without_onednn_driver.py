"""Test-only: the torch driver with torch's oneDNN path turned off (torch.backends.mkldnn, a
documented switch), so that torch 1.13 computes every bfloat16 product with ATen's own GEMM, as
it does on a CPU without AVX512BW/VL/DQ. Lets ctest prove on any CPU that the declared deviations
of that path (expectations/torch.json, "unless_cpu_has") catch what it does. Run it with
`mm-conformance --backend-cmd torch-aten="python3 THIS_FILE" --backend torch-aten`."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

import mm_runtime  # noqa: E402
import torch_driver  # noqa: E402

if __name__ == "__main__":
    torch.backends.mkldnn.enabled = False
    mm_runtime.serve(torch_driver.DRIVER)
