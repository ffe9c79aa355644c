// ONNX Runtime's MatMul judged by mm, through mm_runtime.js: the shared part of the drivers
// onnxruntime_driver.js (npm onnxruntime-node, the CPU execution provider) and
// onnxruntime_web_driver.js (npm onnxruntime-web, its wasm backend under Node).
//
// Each problem runs a one-node MatMul-13 model whose inputs have symbolic dimensions. One session
// per (dtype, rank of A, rank of B) is created on first use and kept, as an application keeps its
// session: ONNX Runtime owns Y's buffer, so an output it leaves unwritten shows whatever an
// earlier problem of the same session left there (the shape-class catalogue's sequences put a
// problem with K > 0 before an empty or K = 0 one). Every dtype is tried once at hello; one ONNX
// Runtime cannot run is refused in its own words. Every exception on a problem is an error of that
// problem (no rule makes one a refusal): a shape class it fails is a finding, never hidden.
// Declared, with the source: each dtype as ONNX's MatMul-13 specifies it, "behaves like
// numpy.matmul" (onnx/defs/math/defs.cc at ONNX 1.12), whose float16 loop sums in float32 and
// rounds once (numpy 1.24, numpy/core/src/umath/matmul.c.src, matmul_inner_noblas: `float sum`);
// so float16 (and bfloat16, which ONNX Runtime 1.30 has no CPU or wasm kernel for and is refused
// at hello) accumulates in float32, float and double in their own type, integers wrap modulo
// 2^bits. ONNX Runtime states no other arithmetic for its CPU and wasm MatMul kernels.
'use strict';

const path = require('node:path');
const mm = require('./mm_runtime.js');
const family = require('./ort_family.js');

// MatMul's dtypes (mm's names): [ONNX TensorProto data type, onnxruntime-common tensor type].
const TYPES = Object.fromEntries(Object.keys(mm.ARRAYS).map((n) => [n, family.ELEMENT_TYPES[n]]));
const MM_NAME = Object.fromEntries(
  Object.entries(family.ELEMENT_TYPES).map(([name, [, ort]]) => [ort, name]));
const ARITHMETIC = {float: 'float', double: 'double', float16: 'float', bfloat16: 'float'};

// onnx.proto's messages as protobufjs generates them: the ONNX encoder ONNX Runtime Web ships
// (lib/onnxjs/ort-schema/protobuf/onnx.js, on protobufjs, both pinned by the npm lock), so the
// drivers carry no protobuf writer of their own. The file is no export of the package: it is found
// from the package's main file; without it every dtype is refused at hello with the error.
function onnxProto() {
  const root = path.join(path.dirname(require.resolve('onnxruntime-web')), '..');
  return require(path.join(root, 'lib/onnxjs/ort-schema/protobuf/onnx.js')).onnx;
}

// The bytes of a model computing Y = MatMul(A, B) (opset 13, IR version 8) for A of rank
// `rankA`, B of rank `rankB`: inputs with symbolic dimensions, Y of unknown shape.
function matmulModel(dtype, rankA, rankB) {
  const elemType = TYPES[dtype][0];
  const symbols = (prefix, rank) =>
    Array.from({length: rank}, (_, i) => ({dimParam: `${prefix}${i}`}));
  const input = (name, dim) => ({name, type: {tensorType: {elemType, shape: {dim}}}});
  const onnx = onnxProto();
  const model = {
    irVersion: 8,
    opsetImport: [{domain: '', version: 13}],
    graph: {
      name: 'mm',
      node: [{input: ['A', 'B'], output: ['Y'], opType: 'MatMul'}],
      input: [input('A', symbols('a', rankA)), input('B', symbols('b', rankB))],
      output: [{name: 'Y', type: {tensorType: {elemType}}}],
    },
  };
  return onnx.ModelProto.encode(onnx.ModelProto.fromObject(model)).finish();
}

// How many sessions a driver keeps (the least recently used one beyond is released).
const MAX_SESSIONS = 64;

// A driver of `ort` (onnxruntime-node's or -web's module), `options` its session options
// without the thread count; `threadsFixed`: the runtime's thread count, whatever mm asks.
function ortDriver({ort, runtime, version, options, runsOn, threadsFixed}) {
  const sessions = new Map();
  let threads = 1;

  // The session of `key`, created from model() on first use and kept while it is among the
  // MAX_SESSIONS used last: the family's signatures include Gemm's alpha and beta, so a fuzz run
  // makes a new one per problem, and each session holds its own thread pool.
  async function session(key, model) {
    let found = sessions.get(key);
    if (found) {
      sessions.delete(key);  // Map keeps insertion order: the key becomes the newest.
    } else {
      found = ort.InferenceSession.create(model(), {...options, intraOpNumThreads: threads});
      found.catch(() => sessions.delete(key));  // A failed creation is retried next time.
    }
    sessions.set(key, found);
    if (sessions.size > MAX_SESSIONS) {
      const [oldest, created] = sessions.entries().next().value;
      sessions.delete(oldest);
      created.then((s) => s.release(), () => {});
    }
    return found;
  }

  // Y of `run` (a session) on `feeds`, with the time of session.run alone.
  async function runOnce(run, feeds) {
    const start = process.hrtime.bigint();
    const {Y} = await run.run(feeds);
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    return {data: Y.data, shape: Y.dims, dtype: MM_NAME[Y.type] || Y.type, seconds};
  }

  // A tensor of ONNX Runtime holding a copy of `t` (ONNX Runtime may keep a tensor's typed array,
  // and mm's views share one buffer).
  const tensorOf = (t) => new ort.Tensor(family.ELEMENT_TYPES[t.dtype][1], t.data.slice(), t.shape);

  async function matmul(a, b, out, dtype) {
    const [rankA, rankB] = [a.shape.length, b.shape.length];
    const run = await session(`MatMul:${dtype}:${rankA}:${rankB}`,
      () => matmulModel(dtype, rankA, rankB));
    return runOnce(run, {A: tensorOf({...a, dtype}), B: tensorOf({...b, dtype})});
  }

  // Y of an operator of MatMul's family (mm_runtime's problem), through the session of its
  // signature.
  async function compute(problem) {
    const signature = family.signatureOf(problem);
    const run = await session(JSON.stringify(signature),
      () => family.familyModel(onnxProto(), signature));
    const feeds = {};
    for (const [name, t] of Object.entries(problem.inputs)) feeds[name] = tensorOf(t);
    return runOnce(run, feeds);
  }

  const driver = {runtime, version, matmul, dtypes: {}, refused: {}, acceptsOut: false,
    operators: {}};
  driver.runsOn = () => `${runsOn}, intraOpNumThreads ${threads}; Node.js ${process.version}`;
  driver.setup = async (n) => {
    threads = threadsFixed || Math.max(1, n);
    for (const dtype of Object.keys(TYPES)) {
      try {
        const Array = mm.ARRAYS[dtype];
        const big = Array === BigInt64Array || Array === BigUint64Array;
        const one = {shape: [2, 2], data: new Array(4).fill(big ? 1n : 1)};
        await matmul(one, one, null, dtype);
        driver.dtypes[dtype] = ARITHMETIC[dtype] || dtype;
      } catch (e) {
        driver.refused[dtype] = String(e.message || e);
      }
    }
    driver.operators = await family.declareFamily(compute);
    for (const operator of Object.values(driver.operators)) {
      if (typeof operator === 'object') operator.compute = compute;
    }
  };
  return driver;
}

module.exports = {matmulModel, onnxProto, ortDriver, TYPES};
