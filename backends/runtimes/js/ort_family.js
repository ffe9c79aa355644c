// MatMul's family (Gemm, MatMulInteger, QLinearMatMul) on ONNX Runtime, for ort_driver.js: each
// problem runs a one-node model of its operator at the opset of its version, whose inputs have no
// shape (any rank), built from the problem's signature (operator, version, element types, the
// inputs present, the attributes) and kept in one session per signature, as the MatMul path keeps
// one per dtype. An exported node test's model (family_node_tests.js) has symbolic dimensions.
//
// What is declared, with the source:
// - which operators, versions and element types: each one ONNX defines is tried once at hello (a
//   2x2 problem through a session of its own); one ONNX Runtime cannot run is refused in its own
//   words (ONNX Runtime 1.30's CPU execution provider runs no Gemm before version 7 and no Gemm
//   of an integer type or bfloat16: "Could not find an implementation for Gemm(9)").
// - Gemm's arithmetic: its T (ONNX's Gemm computes in T; ONNX Runtime 1.30 states no other, and
//   MLAS's SGEMM/DGEMM kernels accumulate in the element type).
// - The integer operators' arithmetic: int32, exact, as ONNX specifies and as protocol 2 carries;
//   for uint8 x int8 (U8S8), ONNX Runtime's quantization documentation says more (U8S8_SATURATION,
//   carried in the declaration's `source`): on x86-64 with AVX2 or AVX-512 and no VNNI its kernels
//   use VPMADDUBSW, whose 16-bit pair sums may saturate. That is not the standard's arithmetic, so
//   it is no declaration of mm's bound: where it shows it is a deviation, declared for CPUs without
//   VNNI in expectations/onnxruntime.json and .fuzz.json.
'use strict';

// ONNX's TensorProto element types and onnxruntime-common's tensor types, by mm's name.
const ELEMENT_TYPES = {
  float: [1, 'float32'],
  uint8: [2, 'uint8'],
  int8: [3, 'int8'],
  int32: [6, 'int32'],
  int64: [7, 'int64'],
  float16: [10, 'float16'],
  double: [11, 'float64'],
  uint32: [12, 'uint32'],
  uint64: [13, 'uint64'],
  bfloat16: [16, 'bfloat16'],
};

// ONNX Runtime's documentation of its U8S8 arithmetic, with its address.
const U8S8_SATURATION =
  'ONNX Runtime documents (https://onnxruntime.ai/docs/performance/model-optimizations/' +
  'quantization.html, "When and why do I need to try U8U8?"): "On x86-64 machines with AVX2 ' +
  'and AVX512 extensions, ONNX Runtime uses the VPMADDUBSW instruction for U8S8 for ' +
  'performance. This instruction might suffer from saturation issues: it can happen that the ' +
  'output does not fit into a 16-bit integer and has to be clamped (saturated) to fit." and ' +
  '"There is no such issue on other CPU architectures (x64 with VNNI and ARM)"';

// The versions ONNX defines for each operator, and the element types of each version.
const VERSIONS = {Gemm: [1, 6, 7, 9, 11, 13], MatMulInteger: [10], QLinearMatMul: [10, 21]};
const GEMM_TYPES = ['float', 'double', 'float16', 'int32', 'int64', 'uint32', 'uint64',
  'bfloat16'];
const EIGHT_BIT = ['uint8', 'int8'];

// Whether Gemm-`version` takes T = `type` (ONNX: float16, float, double; integers from 9;
// bfloat16 from 13).
function gemmTakes(version, type) {
  if (['float', 'double', 'float16'].includes(type)) return true;
  return type === 'bfloat16' ? version >= 13 : version >= 9;
}

// Every element-type key of `op` as mm writes it (docs/runtime-protocol.md), with its inputs'
// types: {key, types: {input name: mm type}, y}.
function typeKeys(op) {
  if (op === 'Gemm') {
    return GEMM_TYPES.map((t) => ({key: t, types: {A: t, B: t, C: t}, y: t}));
  }
  const pairs = EIGHT_BIT.flatMap((a) => EIGHT_BIT.map((b) => [a, b]));
  if (op === 'MatMulInteger') {
    return pairs.map(([a, b]) => ({key: `${a} x ${b} -> int32`,
      types: {A: a, B: b, a_zero_point: a, b_zero_point: b}, y: 'int32'}));
  }
  return pairs.flatMap(([a, b]) => EIGHT_BIT.flatMap((y) =>
    ['float', 'float16', 'bfloat16'].map((s) => ({
      key: `${a} x ${b} -> ${y}, ${s} scales`,
      types: {a, a_scale: s, a_zero_point: a, b, b_scale: s, b_zero_point: b, y_scale: s,
        y_zero_point: y},
      y,
    }))));
}

// Whether `op`-`version` takes the element types of `entry` (a typeKeys entry).
function versionTakes(op, version, entry) {
  if (op === 'Gemm') return gemmTakes(version, entry.y);
  if (op === 'QLinearMatMul' && version === 10) return entry.types.a_scale === 'float';
  return true;
}

// The inputs of `op`-`version` in the node's order.
function inputNames(op, version) {
  if (op === 'Gemm') return ['A', 'B', 'C'];
  if (op === 'MatMulInteger') return ['A', 'B', 'a_zero_point', 'b_zero_point'];
  return ['a', 'a_scale', 'a_zero_point', 'b', 'b_scale', 'b_zero_point', 'y_scale',
    'y_zero_point'];
}

// The ONNX attribute types of Gemm's attributes (AttributeProto: FLOAT 1, INT 2).
const ATTRIBUTE_TYPES = {transA: 2, transB: 2, broadcast: 2, alpha: 1, beta: 1};

// The signature of a problem: what its model depends on (operator, version, per node input its
// type and rank or absence, attributes, Y's type), as {op, version, inputs, attributes, y}; with
// `ranks` false, no input's rank: the model of such a signature takes inputs of any rank.
function signatureOf(problem, {ranks = true} = {}) {
  const inputs = inputNames(problem.op, problem.version).map((name) => {
    const t = problem.inputs[name];
    if (!t) return null;
    return ranks ? {name, dtype: t.dtype, rank: t.shape.length} : {name, dtype: t.dtype};
  });
  while (inputs.length && inputs[inputs.length - 1] === null) inputs.pop();
  return {op: problem.op, version: problem.version, inputs,
    attributes: {...problem.attributes}, y: problem.y.dtype};
}

// The bytes of the one-node model of `signature`, encoded with `onnx` (onnx.proto's generated
// classes): opset = the operator's version, inputs with one symbolic dimension per rank (no shape,
// so of any rank, where the signature holds no rank), Y of unknown shape.
function familyModel(onnx, signature) {
  const dims = (name, rank) => Array.from({length: rank}, (_, i) => ({dimParam: `${name}_${i}`}));
  const tensorType = (i) => {
    const elemType = ELEMENT_TYPES[i.dtype][0];
    return i.rank === undefined ? {elemType} : {elemType, shape: {dim: dims(i.name, i.rank)}};
  };
  const present = signature.inputs.filter((i) => i !== null);
  const attribute = ([name, value]) => {
    const type = ATTRIBUTE_TYPES[name];
    if (!type) throw new Error(`${signature.op}: unknown attribute ${JSON.stringify(name)}`);
    return type === 1 ? {name, type, f: value} : {name, type, i: value};
  };
  const model = {
    irVersion: signature.version >= 21 ? 10 : 8,
    opsetImport: [{domain: '', version: signature.version}],
    graph: {
      name: 'mm',
      node: [{
        input: signature.inputs.map((i) => (i === null ? '' : i.name)),
        output: ['Y'],
        opType: signature.op,
        attribute: Object.entries(signature.attributes).map(attribute),
      }],
      input: present.map((i) => ({name: i.name, type: {tensorType: tensorType(i)}})),
      output: [{name: 'Y', type: {tensorType: {elemType: ELEMENT_TYPES[signature.y][0]}}}],
    },
  };
  return onnx.ModelProto.encode(onnx.ModelProto.fromObject(model)).finish();
}

// A 2x2 problem of `op`-`version` with the element types of `entry`: ones, zero points 0, scales
// 1 (a scale's bits in float16 and bfloat16 are 0x3c00 and 0x3f80), tried at hello.
function probeProblem(op, version, entry) {
  const tensor = (dtype, shape, one) => {
    const n = shape.reduce((p, d) => p * d, 1);
    const Array = {float: Float32Array, double: Float64Array, float16: Uint16Array,
      bfloat16: Uint16Array, int32: Int32Array, int64: BigInt64Array, uint32: Uint32Array,
      uint64: BigUint64Array, int8: Int8Array, uint8: Uint8Array}[dtype];
    return {dtype, shape, data: new Array(n).fill(one)};
  };
  const one = (dtype) => ({float16: 0x3c00, bfloat16: 0x3f80, int64: 1n, uint64: 1n})[dtype] ?? 1;
  const zero = (dtype) => (dtype === 'int64' || dtype === 'uint64' ? 0n : 0);
  const inputs = {};
  for (const name of inputNames(op, version)) {
    const dtype = entry.types[name];
    const scalar = /_scale$|_zero_point$/.test(name);
    const value = name.endsWith('_zero_point') ? zero(dtype) : one(dtype);
    if (op === 'MatMulInteger' && scalar) continue;
    inputs[name] = tensor(dtype, scalar ? [] : [2, 2], value);
  }
  const attributes = op === 'Gemm' && version < 7 ? {broadcast: 0} : {};
  return {op, version, inputs, attributes, y: {dtype: entry.y, shape: [2, 2]}};
}

// The hello's declaration of the family on ONNX Runtime: per operator the versions it runs (those
// where some element types run) and per element types the arithmetic, or its refusal in ONNX
// Runtime's words where a version it runs fails them, by `compute` (async, throws what ONNX
// Runtime throws) on each probe problem.
async function declareFamily(compute) {
  const operators = {};
  for (const op of Object.keys(VERSIONS)) {
    const failures = new Map();  // entry: {version: why}
    const runs = new Set();
    for (const entry of typeKeys(op)) {
      failures.set(entry, {});
      for (const version of VERSIONS[op].filter((v) => versionTakes(op, v, entry))) {
        try {
          await compute(probeProblem(op, version, entry));
          runs.add(version);
        } catch (e) {
          failures.get(entry)[version] = String(e.message || e);
        }
      }
    }
    const versions = VERSIONS[op].filter((v) => runs.has(v));
    const types = {};
    const refused = {};
    for (const [entry, failed] of failures) {
      const taking = versions.filter((v) => versionTakes(op, v, entry));
      const failing = taking.length ? taking.find((v) => failed[v]) : Number(Object.keys(failed)[0]);
      if (failing === undefined) types[entry.key] = arithmeticOf(op, entry);
      else refused[entry.key] = `${op}-${failing}: ${failed[failing]}`;
    }
    operators[op] = versions.length ? {versions, types, refused} : Object.values(refused)[0];
  }
  return operators;
}

// The declared arithmetic of `op` for element types `entry`, with its source.
function arithmeticOf(op, entry) {
  if (op === 'Gemm') {
    const accumulation = ['float16', 'bfloat16'].includes(entry.y) ? 'float' : entry.y;
    return {accumulation, source: 'ONNX Gemm, alpha * A\' * B\' + beta * C in T, float16 by ' +
      'MatMul\'s rule (numpy, float32 sums); ONNX Runtime 1.30 states no other arithmetic for ' +
      'its Gemm kernels'};
  }
  const u8s8 = (entry.types.A || entry.types.a) === 'uint8' &&
    (entry.types.B || entry.types.b) === 'int8';
  const standard = `ONNX ${op}: exact int32 accumulation (no overflow below 32 bits)`;
  return {accumulation: 'int32', source: u8s8 ? `${standard}; ${U8S8_SATURATION}` : standard};
}

module.exports = {ELEMENT_TYPES, U8S8_SATURATION, VERSIONS, typeKeys, inputNames, signatureOf,
  familyModel, probeProblem, declareFamily, arithmeticOf};
