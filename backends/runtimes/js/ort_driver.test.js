// Tests of ort_driver.js's one-node model (ctest runtime.ort_driver_model: node --test, with the
// npm packages of build/runtimes-npm): what ONNX Runtime is asked to run, field by field, read
// back with the same generated onnx.proto classes it was written with.
'use strict';

const assert = require('node:assert/strict');
const test = require('node:test');
const {matmulModel, onnxProto, TYPES} = require('./ort_driver.js');

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
