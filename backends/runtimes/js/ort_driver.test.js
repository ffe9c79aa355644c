// Tests of ort_driver.js's one-node model (ctest runtime.ort_driver_model: node --test, with the
// npm packages of build/runtimes-npm): what ONNX Runtime is asked to run, field by field, read
// back with the same generated onnx.proto classes it was written with.
'use strict';

const assert = require('node:assert/strict');
const test = require('node:test');
const {matmulModel, MAX_SESSIONS, onnxProto, ortDriver, processLimits, sessionsKept, TYPES} =
  require('./ort_driver.js');

const onnx = onnxProto();

const dims = (valueInfo) => valueInfo.type.tensorType.shape.dim.map((d) => d.dimParam);

test('the model is MatMul-13 of A and B into Y, IR version 8', () => {
  const model = onnx.ModelProto.decode(matmulModel('float', 2, 2));
  assert.equal(Number(model.irVersion), 8);
  assert.deepEqual(model.opsetImport.map((o) => [o.domain, Number(o.version)]), [['', 13]]);
  assert.equal(model.graph.node.length, 1);
  const [node] = model.graph.node;
  assert.deepEqual([node.opType, node.input, node.output], ['MatMul', ['A', 'B'], ['Y']]);
});

test('each dtype is its ONNX element type, on the inputs and on Y', () => {
  for (const [dtype, [elemType]] of Object.entries(TYPES)) {
    const {graph} = onnx.ModelProto.decode(matmulModel(dtype, 1, 1));
    const types = [...graph.input, ...graph.output].map((v) => v.type.tensorType.elemType);
    assert.deepEqual(types, [elemType, elemType, elemType], dtype);
  }
});

test('the inputs have one symbolic dimension per rank, Y no shape', () => {
  const {graph} = onnx.ModelProto.decode(matmulModel('double', 3, 1));
  assert.deepEqual(graph.input.map((v) => v.name), ['A', 'B']);
  assert.deepEqual(dims(graph.input[0]), ['a0', 'a1', 'a2']);
  assert.deepEqual(dims(graph.input[1]), ['b0']);
  assert.equal(graph.output[0].name, 'Y');
  assert.equal(graph.output[0].type.tensorType.shape, null);
});

test('without ranks the inputs have no shape: one model serves A and B of every rank', () => {
  const {graph} = onnx.ModelProto.decode(matmulModel('double'));
  assert.deepEqual(graph.input.map((v) => [v.name, v.type.tensorType.elemType]),
    [['A', 11], ['B', 11]]);
  assert.deepEqual(graph.input.map((v) => v.type.tensorType.shape), [null, null]);
});

// MatMul's family (ort_family.js): the one-node model of a problem's signature, and what the hello
// declares from ONNX Runtime's answers to the probes.
const family = require('./ort_family.js');

const tensor = (dtype, shape) => ({dtype, shape, data: null});
const gemmProblem = (attributes, withC = true) => ({
  op: 'Gemm', version: 11, attributes, y: {dtype: 'float', shape: [2, 4]},
  inputs: {A: tensor('float', [3, 2]), B: tensor('float', [3, 4]),
    ...(withC ? {C: tensor('float', [4])} : {})},
});
const modelOf = (problem) =>
  onnx.ModelProto.decode(family.familyModel(onnx, family.signatureOf(problem)));

test('a Gemm model is its version\'s node, attributes typed as ONNX types them', () => {
  const model = modelOf(gemmProblem({transA: 1, transB: 0, alpha: 0.5, beta: -2}));
  assert.deepEqual(model.opsetImport.map((o) => Number(o.version)), [11]);
  assert.equal(Number(model.irVersion), 8);
  const [node] = model.graph.node;
  assert.deepEqual([node.opType, node.input, node.output], ['Gemm', ['A', 'B', 'C'], ['Y']]);
  const attributes = Object.fromEntries(node.attribute.map((a) => [a.name, a]));
  assert.equal(attributes.alpha.type, 1);  // FLOAT
  assert.equal(attributes.alpha.f, 0.5);
  assert.equal(attributes.beta.f, -2);
  assert.equal(attributes.transA.type, 2);  // INT
  assert.equal(Number(attributes.transA.i), 1);
  assert.deepEqual(dims(model.graph.input[2]), ['C_0']);
  assert.deepEqual(model.graph.input.map((v) => v.type.tensorType.elemType), [1, 1, 1]);
});

test('a signature holds what the model depends on: attributes, inputs present, their ranks', () => {
  const key = (p) => JSON.stringify(family.signatureOf(p));
  const base = gemmProblem({alpha: 0.5});
  assert.notEqual(key(base), key(gemmProblem({alpha: 0.25})));
  assert.notEqual(key(base), key(gemmProblem({alpha: 0.5}, false)));
  const scalarC = gemmProblem({alpha: 0.5});
  scalarC.inputs.C = tensor('float', []);
  assert.notEqual(key(base), key(scalarC));
  const other = gemmProblem({alpha: 0.5});
  other.inputs.A = tensor('float', [5, 7]);  // Same ranks, other extents: the same session.
  assert.equal(key(base), key(other));
});

test('a signature without ranks is one for every rank, its model\'s inputs without shape', () => {
  const key = (p) => JSON.stringify(family.signatureOf(p, {ranks: false}));
  const base = gemmProblem({alpha: 0.5});
  const scalarC = gemmProblem({alpha: 0.5});
  scalarC.inputs.C = tensor('float', []);
  assert.equal(key(base), key(scalarC));
  assert.notEqual(key(base), key(gemmProblem({alpha: 0.5}, false)));
  assert.notEqual(key(base), key(gemmProblem({alpha: 0.25})));
  const model = onnx.ModelProto.decode(
    family.familyModel(onnx, family.signatureOf(base, {ranks: false})));
  assert.deepEqual(model.graph.input.map((v) => [v.name, v.type.tensorType.shape]),
    [['A', null], ['B', null], ['C', null]]);
  assert.deepEqual(model.graph.node[0].input, ['A', 'B', 'C']);
});

test('an absent optional input is an empty name before a present one, dropped at the end', () => {
  const problem = (inputs) => ({op: 'MatMulInteger', version: 10, attributes: {},
    y: {dtype: 'int32', shape: [2, 2]}, inputs});
  const onlyB = modelOf(problem({A: tensor('uint8', [2, 3]), B: tensor('int8', [3, 2]),
    b_zero_point: tensor('int8', [1, 2])}));
  assert.deepEqual(onlyB.graph.node[0].input, ['A', 'B', '', 'b_zero_point']);
  assert.deepEqual(onlyB.graph.input.map((v) => [v.name, v.type.tensorType.elemType]),
    [['A', 2], ['B', 3], ['b_zero_point', 3]]);
  assert.equal(onlyB.graph.output[0].type.tensorType.elemType, 6);
  const none = modelOf(problem({A: tensor('int8', [3]), B: tensor('int8', [3, 2])}));
  assert.deepEqual(none.graph.node[0].input, ['A', 'B']);
  assert.deepEqual(dims(none.graph.input[0]), ['A_0']);
});

test('QLinearMatMul-21 is written at IR version 10, its eight inputs in the node\'s order', () => {
  const entry = family.typeKeys('QLinearMatMul')
    .find((e) => e.key === 'uint8 x int8 -> uint8, float16 scales');
  const model = modelOf(family.probeProblem('QLinearMatMul', 21, entry));
  assert.equal(Number(model.irVersion), 10);
  assert.deepEqual(model.graph.node[0].input, family.inputNames('QLinearMatMul', 21));
  assert.deepEqual(model.graph.input.map((v) => v.type.tensorType.elemType),
    [2, 10, 2, 3, 10, 3, 10, 2]);
});

test('the hello declares the versions that run and refuses a type in the runtime\'s words',
  async () => {
    // A runtime without Gemm before version 7, Gemm in float and double only, and
    // QLinearMatMul only where y's type is a's.
    const compute = async (p) => {
      if (p.op === 'Gemm' && p.version < 7) throw new Error(`no Gemm(${p.version})`);
      if (p.op === 'Gemm' && !['float', 'double'].includes(p.y.dtype)) {
        throw new Error(`no Gemm of ${p.y.dtype}`);
      }
      if (p.op === 'QLinearMatMul' && p.y.dtype !== p.inputs.a.dtype) throw new Error('no kernel');
    };
    const declared = await family.declareFamily(compute);
    assert.deepEqual(declared.Gemm.versions, [7, 9, 11, 13]);
    assert.deepEqual(Object.keys(declared.Gemm.types), ['float', 'double']);
    assert.equal(declared.Gemm.types.float.accumulation, 'float');
    assert.equal(declared.Gemm.refused.int32, 'Gemm-9: no Gemm of int32');
    assert.equal(declared.Gemm.refused.float16, 'Gemm-7: no Gemm of float16');
    assert.deepEqual(declared.MatMulInteger.versions, [10]);
    assert.equal(Object.keys(declared.MatMulInteger.types).length, 4);
    assert.equal(declared.QLinearMatMul.refused['uint8 x int8 -> int8, float scales'],
      'QLinearMatMul-10: no kernel');
    assert.ok(declared.QLinearMatMul.types['int8 x uint8 -> int8, bfloat16 scales']);
    for (const [key, arithmetic] of Object.entries(declared.MatMulInteger.types)) {
      assert.equal(arithmetic.accumulation, 'int32', key);
      assert.equal(arithmetic.source.includes('VPMADDUBSW'), key === 'uint8 x int8 -> int32', key);
    }
  });

test('an operator no version of which runs is refused with the runtime\'s first words', async () => {
  const declared = await family.declareFamily(async (p) => {
    if (p.op === 'QLinearMatMul') throw new Error(`no ${p.op}(${p.version})`);
  });
  assert.equal(declared.QLinearMatMul, 'QLinearMatMul-10: no QLinearMatMul(10)');
  assert.deepEqual(declared.Gemm.versions, [1, 6, 7, 9, 11, 13]);
});

// A fake of ONNX Runtime's module: every model runs, giving a float Y of one element; each
// session records its thread count and whether it was released.
function fakeOrt() {
  const sessions = [];
  class Tensor {
    constructor(type, data, dims) {
      Object.assign(this, {type, data, dims});
    }
  }
  const create = async (model, options) => {
    const session = {threads: options.intraOpNumThreads, released: false,
      run: async () => ({Y: new Tensor('float32', new Float32Array(1), [1])}),
      release: async () => { session.released = true; }};
    sessions.push(session);
    return session;
  };
  return {ort: {Tensor, InferenceSession: {create}}, sessions};
}

const floats = (...shape) => ({shape, data: new Float32Array(shape.reduce((n, d) => n * d, 1))});
const gemmOf = (alpha) => ({op: 'Gemm', version: 13, attributes: {alpha},
  inputs: {A: {dtype: 'float', ...floats(1, 1)}, B: {dtype: 'float', ...floats(1, 1)}},
  y: {dtype: 'float', shape: [1, 1]}});

test('the hello probes at one thread, releasing each probe; problems run at mm\'s threads',
  async () => {
    const {ort, sessions} = fakeOrt();
    const driver = ortDriver({ort, runtime: 'fake', version: '0', options: {}, runsOn: 'fake'});
    await driver.setup(2);
    const probes = sessions.length;
    assert.ok(probes > Object.keys(TYPES).length);
    assert.ok(sessions.every((s) => s.threads === 1 && s.released));
    await driver.matmul(floats(2, 3), floats(3), null, 'float');
    await driver.matmul(floats(4, 2, 3), floats(3, 5), null, 'float');
    await driver.operators.Gemm.compute(gemmOf(0.5));
    const used = sessions.slice(probes);
    assert.equal(used.length, 2);  // One MatMul float session for both ranks, one Gemm.
    assert.ok(used.every((s) => s.threads === 2 && !s.released));
  });

test('a session displaced from the cache is released when the driver is idle, not before',
  async () => {
    const {ort, sessions} = fakeOrt();
    const driver = ortDriver({ort, runtime: 'fake', version: '0', options: {}, runsOn: 'fake'});
    await driver.setup(2);
    const first = sessions.length;
    for (let alpha = 0; alpha <= MAX_SESSIONS; alpha++) {
      await driver.operators.Gemm.compute(gemmOf(alpha));
    }
    const used = () => sessions.slice(first).map((s) => s.released);
    assert.deepEqual(used(), Array(MAX_SESSIONS + 1).fill(false));
    await driver.idle();
    assert.deepEqual(used(), [true, ...Array(MAX_SESSIONS).fill(false)]);
    await driver.operators.Gemm.compute(gemmOf(1));  // Kept: no new session.
    assert.equal(sessions.length - first, MAX_SESSIONS + 1);
  });

test('the sessions kept leave half the data limit to their pool threads\' stacks', () => {
  const MiB = 1024 * 1024;
  const limits = processLimits([
    'Limit                     Soft Limit           Hard Limit           Units     ',
    'Max data size             536870912            unlimited            bytes     ',
    'Max stack size            8388608              unlimited            bytes     ',
  ].join('\n'));
  assert.deepEqual(limits, {data: 512 * MiB, stack: 8 * MiB});
  assert.equal(sessionsKept(2, limits), 32);  // 31 more threads than 32 * 8 MiB fit 256 MiB.
  assert.equal(sessionsKept(5, limits), 8);
  assert.equal(sessionsKept(1, limits), MAX_SESSIONS);  // No pool thread at one thread.
  assert.equal(sessionsKept(2, {data: Infinity, stack: 8 * MiB}), MAX_SESSIONS);
  assert.equal(sessionsKept(2, {data: 4096 * MiB, stack: 8 * MiB}), MAX_SESSIONS);
  assert.equal(sessionsKept(2, {data: 512 * MiB, stack: Infinity}), 32);
  assert.equal(sessionsKept(64, {data: 16 * MiB, stack: 8 * MiB}), 1);
  assert.equal(sessionsKept(2, null), MAX_SESSIONS);
  assert.equal(processLimits('Max open files 1024 1024 files'), null);
  const unlimited = processLimits('Max data size             unlimited            unlimited ');
  assert.deepEqual(unlimited, {data: Infinity, stack: Infinity});
});

test('a driver under a data limit keeps the sessions that fit it', async () => {
  const {ort, sessions} = fakeOrt();
  const MiB = 1024 * 1024;
  const driver = ortDriver({ort, runtime: 'fake', version: '0', options: {}, runsOn: 'fake',
    limits: {data: 32 * MiB, stack: 8 * MiB}});
  await driver.setup(2);  // 16 MiB for stacks: 2 sessions of one pool thread each.
  const first = sessions.length;
  for (const alpha of [1, 2, 3]) await driver.operators.Gemm.compute(gemmOf(alpha));
  await driver.idle();
  assert.deepEqual(sessions.slice(first).map((s) => s.released), [true, false, false]);
});
