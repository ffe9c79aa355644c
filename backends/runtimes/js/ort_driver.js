// ONNX Runtime's MatMul judged by mm, through mm_runtime.js: the shared part of the drivers
// onnxruntime_driver.js (npm onnxruntime-node, the CPU execution provider) and
// onnxruntime_web_driver.js (npm onnxruntime-web, its wasm backend under Node).
//
// Each problem runs a one-node MatMul-13 model whose inputs have no shape (ONNX: rank unknown), so
// that one session per dtype serves every shape: it is created on first use and kept, as an
// application keeps its session: ONNX Runtime owns Y's buffer, so an output it leaves unwritten
// shows whatever an earlier problem of the same session left there (the shape-class catalogue's
// sequences put a problem with K > 0 before an empty or K = 0 one). Every dtype is tried once at hello; one ONNX
// Runtime cannot run is refused in its own words. Every exception on a problem is an error of that
// problem (no rule makes one a refusal): a shape class it fails is a finding, never hidden.
// Declared, with the source: each dtype as ONNX's MatMul-13 specifies it, "behaves like
// numpy.matmul" (onnx/defs/math/defs.cc at ONNX 1.12), whose float16 loop sums in float32 and
// rounds once (numpy 1.24, numpy/core/src/umath/matmul.c.src, matmul_inner_noblas: `float sum`);
// so float16 (and bfloat16, which ONNX Runtime 1.30 has no CPU or wasm kernel for and is refused
// at hello) accumulates in float32, float and double in their own type, integers wrap modulo
// 2^bits. ONNX Runtime states no other arithmetic for its CPU and wasm MatMul kernels.
'use strict';

const fs = require('node:fs');
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
// Found once: resolving the file is a search of the module paths.
let onnxClasses = null;
function onnxProto() {
  if (onnxClasses) return onnxClasses;
  const root = path.join(path.dirname(require.resolve('onnxruntime-web')), '..');
  onnxClasses = require(path.join(root, 'lib/onnxjs/ort-schema/protobuf/onnx.js')).onnx;
  return onnxClasses;
}

// The bytes of a model computing Y = MatMul(A, B) (opset 13, IR version 8) for A of rank
// `rankA`, B of rank `rankB`: inputs with symbolic dimensions, Y of unknown shape; inputs without
// a shape (of any rank) where the ranks are not given.
function matmulModel(dtype, rankA, rankB) {
  const elemType = TYPES[dtype][0];
  const symbols = (prefix, rank) =>
    Array.from({length: rank}, (_, i) => ({dimParam: `${prefix}${i}`}));
  const input = (name, rank) => ({name, type: {tensorType: rank === undefined ? {elemType} :
    {elemType, shape: {dim: symbols(name.toLowerCase(), rank)}}}});
  const onnx = onnxProto();
  const model = {
    irVersion: 8,
    opsetImport: [{domain: '', version: 13}],
    graph: {
      name: 'mm',
      node: [{input: ['A', 'B'], output: ['Y'], opType: 'MatMul'}],
      input: [input('A', rankA), input('B', rankB)],
      output: [{name: 'Y', type: {tensorType: {elemType}}}],
    },
  };
  return onnx.ModelProto.encode(onnx.ModelProto.fromObject(model)).finish();
}

// How many sessions a driver keeps (the least recently used one beyond is released): every
// dtype's MatMul and the signatures of one family operator's small problems but Gemm's (whose
// alpha, beta and transposes make hundreds); each holds a thread pool, whose threads' stacks
// count in the data limit mm may set on a driver.
const MAX_SESSIONS = 64;

// A thread's stack where RLIMIT_STACK is unlimited (glibc's default then is smaller).
const DEFAULT_STACK_BYTES = 8 * 1024 * 1024;

// The soft data and stack limits of this process in bytes (Infinity: unlimited), from `text`
// (/proc/self/limits), or null where it says neither.
function processLimits(text) {
  const soft = (name) => {
    const found = text.match(new RegExp(`^Max ${name} size\\s+(\\S+)`, 'm'));
    if (!found) return undefined;
    return found[1] === 'unlimited' ? Infinity : Number(found[1]);
  };
  const data = soft('data');
  return data === undefined ? null : {data, stack: soft('stack') ?? Infinity};
}

// How many sessions at `threads` intra-op threads to keep under `limits` (processLimits):
// MAX_SESSIONS, fewer where their pool threads' stacks (threads - 1 per session) would take more
// than half the data limit, which mm sets on a driver from --memory-limit and which counts
// thread stacks: past it ONNX Runtime cannot create a session ("pthread_create failed").
function sessionsKept(threads, limits) {
  if (threads <= 1 || !limits || !Number.isFinite(limits.data)) return MAX_SESSIONS;
  const stack = Number.isFinite(limits.stack) ? limits.stack : DEFAULT_STACK_BYTES;
  const fit = Math.floor(limits.data / 2 / ((threads - 1) * stack));
  return Math.max(1, Math.min(MAX_SESSIONS, fit));
}

// This process's limits, or null where /proc cannot say.
function ownLimits() {
  try {
    return processLimits(fs.readFileSync('/proc/self/limits', 'utf8'));
  } catch {
    return null;  // No /proc (not Linux): no limit known, MAX_SESSIONS kept.
  }
}

// A driver of `ort` (onnxruntime-node's or -web's module), `options` its session options
// without the thread count; `threadsFixed`: the runtime's thread count, whatever mm asks;
// `limits` the process's (processLimits), read from /proc at hello when not given.
function ortDriver({ort, runtime, version, options, runsOn, threadsFixed, limits}) {
  const sessions = new Map();
  const retired = [];  // Sessions out of `sessions`, released when the driver is idle.
  let threads = 1;
  let kept = MAX_SESSIONS;

  // A session of `model` (bytes) at `n` intra-op threads.
  const create = (model, n) => ort.InferenceSession.create(model, {...options, intraOpNumThreads: n});

  // The session of `key`, created from model() on first use and kept while it is among the
  // `kept` used last: a session's thread pool is made at its creation and joined at its
  // release, which costs more than a small problem's run, so the one it displaces is released
  // after the answer (driver.idle), while mm judges.
  async function session(key, model) {
    let found = sessions.get(key);
    if (found) {
      sessions.delete(key);  // Map keeps insertion order: the key becomes the newest.
    } else {
      found = create(model(), threads);
      found.catch(() => sessions.delete(key));  // A failed creation is retried next time.
    }
    sessions.set(key, found);
    while (sessions.size > kept) {
      const [oldest, created] = sessions.entries().next().value;
      sessions.delete(oldest);
      retired.push(created);
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

  // Y of `model` on feeds() through a session of its own at one thread, released after: a probe
  // of the hello. Whether ONNX Runtime runs a model does not depend on its thread count, and
  // making and joining a thread pool per probe (most of the family's fail) would cost more than
  // the probe; a signature used later gets its session at mm's thread count then.
  async function probe(model, feeds) {
    const run = await create(model, 1);
    try {
      return await runOnce(run, feeds());  // After the session: its error comes first.
    } finally {
      await run.release();
    }
  }

  // A tensor of ONNX Runtime holding a copy of `t` (ONNX Runtime may keep a tensor's typed array,
  // and mm's views share one buffer).
  const tensorOf = (t) => new ort.Tensor(family.ELEMENT_TYPES[t.dtype][1], t.data.slice(), t.shape);
  const matmulFeeds = (a, b, dtype) => ({A: tensorOf({...a, dtype}), B: tensorOf({...b, dtype})});
  const familyFeeds = (problem) => Object.fromEntries(
    Object.entries(problem.inputs).map(([name, t]) => [name, tensorOf(t)]));
  const familyModel = (signature) => family.familyModel(onnxProto(), signature);
  const signatureOf = (problem) => family.signatureOf(problem, {ranks: false});

  async function matmul(a, b, out, dtype) {
    const run = await session(`MatMul:${dtype}`, () => matmulModel(dtype));
    return runOnce(run, matmulFeeds(a, b, dtype));
  }

  // Y of an operator of MatMul's family (mm_runtime's problem), through the session of its
  // signature without ranks.
  async function compute(problem) {
    const signature = signatureOf(problem);
    const run = await session(JSON.stringify(signature), () => familyModel(signature));
    return runOnce(run, familyFeeds(problem));
  }

  const driver = {runtime, version, matmul, dtypes: {}, refused: {}, acceptsOut: false,
    operators: {}};
  driver.idle = async () => {
    while (retired.length) {
      const created = retired.shift();
      const run = await created.catch(() => null);  // A failed creation holds nothing.
      if (run) await run.release();
    }
  };
  driver.runsOn = () => `${runsOn}, intraOpNumThreads ${threads}; Node.js ${process.version}`;
  driver.setup = async (n) => {
    threads = threadsFixed || Math.max(1, n);
    kept = sessionsKept(threads, limits === undefined ? ownLimits() : limits);
    for (const dtype of Object.keys(TYPES)) {
      try {
        const Array = mm.ARRAYS[dtype];
        const big = Array === BigInt64Array || Array === BigUint64Array;
        const one = {shape: [2, 2], data: new Array(4).fill(big ? 1n : 1)};
        await probe(matmulModel(dtype), () => matmulFeeds(one, one, dtype));
        driver.dtypes[dtype] = ARITHMETIC[dtype] || dtype;
      } catch (e) {
        driver.refused[dtype] = String(e.message || e);
      }
    }
    driver.operators = await family.declareFamily(
      (problem) => probe(familyModel(signatureOf(problem)), () => familyFeeds(problem)));
    for (const operator of Object.values(driver.operators)) {
      if (typeof operator === 'object') operator.compute = compute;
    }
  };
  return driver;
}

module.exports = {matmulModel, MAX_SESSIONS, onnxProto, ortDriver, processLimits, sessionsKept,
  TYPES};
