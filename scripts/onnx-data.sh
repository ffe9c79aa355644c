# Sourced by scripts/test.sh and scripts/conformance.sh (not run on its own): when MM_ONNX_DATA is
# unset and the project's shared folder sits beside the repository, point the harness at the 7
# official ONNX MatMul node tests there, exactly as CI does. A caller's MM_ONNX_DATA (even empty,
# which selects the built-in defaults) always wins.
if [[ -z "${MM_ONNX_DATA+set}" && -d ../shared/onnx-node-tests/node ]]; then
  MM_ONNX_DATA="$(cd ../shared/onnx-node-tests/node && pwd)"
  export MM_ONNX_DATA
fi
# Likewise MM_FAMILY_DATA: the 20 official node tests of MatMul's family (Gemm, MatMulInteger,
# QLinearMatMul) beside them; scripts/conformance.sh adds it to the gate's data roots.
if [[ -z "${MM_FAMILY_DATA+set}" && -d ../shared/onnx-node-tests/matmul-family ]]; then
  MM_FAMILY_DATA="$(cd ../shared/onnx-node-tests/matmul-family && pwd)"
  export MM_FAMILY_DATA
fi
