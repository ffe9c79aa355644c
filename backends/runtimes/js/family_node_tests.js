// The minimal problems of the deviations mm found in the JavaScript runtimes' operators of
// MatMul's family, written as ONNX node tests into deviations/ (model.onnx and test_data_set_0,
// as ONNX's backend tests are laid out):
//
//   node backends/runtimes/js/family_node_tests.js [OUT_DIR]     (default: deviations/ beside it)
//
// with the npm packages on NODE_PATH (build/runtimes-npm/node_modules). Each problem is written
// out by hand: its inputs and Y as the standard defines it (mm's oracle judges the runtime's Y
// against its own exact value, and marks a data set whose Y is not that value as suspect). Each
// test is declared in expectations/<runtime>.json and listed in docs/runtimes.md; its README says
// how to run it. mm-fuzz's replay lines find the fuzz findings again.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const {onnxProto} = require('./ort_driver.js');
const family = require('./ort_family.js');

// Each test: name, the backend it shows the deviation on, what it shows, the problem (op,
// version, inputs {name: [dtype, shape, values]} in the node's order, attributes) and Y.
const TESTS = [
  {
    name: 'test_mm_family_onnxruntime_matmulinteger_u8s8_saturation_k2',
    backend: 'onnxruntime',
    shows: 'uint8 255 x int8 127 summed over K = 2: 64770 exactly (the standard forbids any ' +
      'overflow below 32 bits); VPMADDUBSW\'s saturating 16-bit pair sum gives 32767, on an x86-64 ' +
      'CPU without AVX512-VNNI or AVX-VNNI (issue 54; ONNX Runtime\'s quantization documentation)',
    op: 'MatMulInteger', version: 10,
    inputs: {A: ['uint8', [1, 2], [255, 255]], B: ['int8', [2, 1], [127, 127]]},
    y: ['int32', [1, 1], [64770]],
  },
  {
    name: 'test_mm_family_onnxruntime_gemm_k0_beta',
    backend: 'onnxruntime',
    shows: 'Gemm with K = 0 is beta * C; ONNX Runtime answers C, unscaled (2 for 1)',
    op: 'Gemm', version: 13,
    inputs: {A: ['float', [1, 0], []], B: ['float', [0, 1], []], C: ['float', [], [2]]},
    attributes: {beta: 0.5},
    y: ['float', [1, 1], [1]],
  },
  {
    name: 'test_mm_family_onnxruntime_matmulinteger_zero_point_per_row',
    backend: 'onnxruntime',
    shows: 'a per-row a_zero_point (the standard\'s [M] form) is refused: "MatmulInteger : input1 ' +
      'zero point must be a scalar or 1D tensor of size 1"',
    op: 'MatMulInteger', version: 10,
    inputs: {A: ['uint8', [2, 1], [3, 5]], B: ['uint8', [1, 1], [2]],
      a_zero_point: ['uint8', [2], [1, 2]]},
    y: ['int32', [2, 1], [4, 6]],
  },
  {
    name: 'test_mm_family_onnxruntime_qlinearmatmul_zero_point_per_row',
    backend: 'onnxruntime',
    shows: 'a per-row a_zero_point and a_scale (the standard\'s [M, 1] form) are refused: ' +
      '"QLinearMatmul : input zero point must be a scalar or 1D tensor of size 1"',
    op: 'QLinearMatMul', version: 10,
    inputs: {a: ['uint8', [2, 1], [3, 5]], a_scale: ['float', [2, 1], [1, 1]],
      a_zero_point: ['uint8', [2, 1], [1, 2]], b: ['uint8', [1, 1], [2]],
      b_scale: ['float', [], [1]], b_zero_point: ['uint8', [], [0]],
      y_scale: ['float', [], [1]], y_zero_point: ['uint8', [], [0]]},
    y: ['uint8', [2, 1], [4, 6]],
  },
  {
    name: 'test_mm_family_onnxruntime_matmulinteger_k0_zero_point_per_column',
    backend: 'onnxruntime',
    shows: 'K = 0 with a per-column b_zero_point: Y is zeros; onnxruntime-node dies of SIGFPE ' +
      '(an integer division by zero), onnxruntime-web throws "RuntimeError: divide by zero"',
    op: 'MatMulInteger', version: 10,
    inputs: {A: ['uint8', [1, 0], []], B: ['uint8', [0, 2], []],
      b_zero_point: ['uint8', [1, 2], [1, 2]]},
    y: ['int32', [1, 2], [0, 0]],
  },
  {
    name: 'test_mm_family_onnxruntime_matmulinteger_k0_1d_a',
    backend: 'onnxruntime',
    shows: 'K = 0 with a 1-D A: Y is zeros; ONNX Runtime leaves Y unwritten (whatever its memory ' +
      'held: 972339660 in one run, zeros by luck in others)',
    op: 'MatMulInteger', version: 10,
    inputs: {A: ['uint8', [0], []], B: ['int8', [0, 1], []], a_zero_point: ['uint8', [], [0]],
      b_zero_point: ['int8', [1], [3]]},
    y: ['int32', [1], [0]],
  },
  {
    name: 'test_mm_family_onnxruntime_qlinearmatmul_k0_y_zero_point',
    backend: 'onnxruntime',
    shows: 'QLinearMatMul with K = 0 is saturate(0 + y_zero_point): 89 here; ONNX Runtime answers 0 ' +
      '(or, after other problems of its session, whatever Y\'s memory held)',
    op: 'QLinearMatMul', version: 10,
    inputs: {a: ['uint8', [1, 0], []], a_scale: ['float', [], [1]],
      a_zero_point: ['uint8', [], [0]], b: ['uint8', [0, 1], []], b_scale: ['float', [], [1]],
      b_zero_point: ['uint8', [], [0]], y_scale: ['float', [], [1]],
      y_zero_point: ['uint8', [], [89]]},
    y: ['uint8', [1, 1], [89]],
  },
  {
    name: 'test_mm_family_onnxruntime_matmulinteger_m0_1d_b',
    backend: 'onnxruntime',
    shows: 'MatMulInteger with M = 0 and a 1-D B ([0,1] x [1]) is an empty Y of shape [0]; ONNX ' +
      'Runtime refuses it: "left operand cannot broadcast on dim 0" (as its MatMul does)',
    op: 'MatMulInteger', version: 10,
    inputs: {A: ['uint8', [0, 1], []], B: ['int8', [1], [5]]},
    y: ['int32', [0], []],
  },
];

// The bytes of `values` as a tensor of `dtype`.
function rawData(dtype, values) {
  const Array = {float: Float32Array, int32: Int32Array, int8: Int8Array, uint8: Uint8Array}[dtype];
  const array = Array.from(values);
  return Buffer.from(array.buffer, array.byteOffset, array.byteLength);
}

// A serialized TensorProto named `name`.
function tensorProto(onnx, name, [dtype, shape, values]) {
  const tensor = onnx.TensorProto.fromObject({name, dims: shape,
    dataType: family.ELEMENT_TYPES[dtype][0], rawData: rawData(dtype, values)});
  return onnx.TensorProto.encode(tensor).finish();
}

// The README of test `t`.
function readme(t) {
  return `# ${t.op}: ${t.backend}\n\n${t.shows}.\n\nRun this node test on the backend (XFAIL ` +
    `where expectations/${t.backend}.json declares it):\n\n    mm-conformance --data-dir ` +
    `backends/runtimes/js/deviations/${t.name} --no-builtin --backend ${t.backend}\n`;
}

// Writes test `t` into `out`/its name.
function write(onnx, t, out) {
  const dir = path.join(out, t.name);
  const problem = {op: t.op, version: t.version, attributes: t.attributes || {},
    inputs: Object.fromEntries(Object.entries(t.inputs).map(([n, [dtype, shape]]) =>
      [n, {dtype, shape}])), y: {dtype: t.y[0]}};
  fs.mkdirSync(path.join(dir, 'test_data_set_0'), {recursive: true});
  fs.writeFileSync(path.join(dir, 'model.onnx'),
    family.familyModel(onnx, family.signatureOf(problem)));
  Object.entries(t.inputs).forEach(([name, tensor], i) => {
    fs.writeFileSync(path.join(dir, 'test_data_set_0', `input_${i}.pb`),
      tensorProto(onnx, name, tensor));
  });
  fs.writeFileSync(path.join(dir, 'test_data_set_0', 'output_0.pb'),
    tensorProto(onnx, 'Y', t.y));
  fs.writeFileSync(path.join(dir, 'README.md'), readme(t));
}

if (require.main === module) {
  const out = process.argv[2] || path.join(__dirname, 'deviations');
  const onnx = onnxProto();
  for (const t of TESTS) write(onnx, t, out);
}

module.exports = {TESTS};
