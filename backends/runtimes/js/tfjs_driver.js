// TensorFlow.js's MatMul judged by mm, through mm_runtime.js: tf.matMul on the backend named by
// the first argument, 'cpu' (npm @tensorflow/tfjs-backend-cpu, plain JavaScript) or 'wasm'
// (npm @tensorflow/tfjs-backend-wasm, XNNPACK under WebAssembly), over @tensorflow/tfjs-core.
//
// tf.matMul multiplies operands of rank 2 or more with broadcast batch dimensions; a 1-D operand
// is promoted as numpy.matmul says (A [K] as [1,K], B [K] as [K,1], the added dimension removed
// from Y), as a converter of ONNX's MatMul to TensorFlow does. TensorFlow.js owns Y's buffer.
// Each dtype it has (float32, int32) is tried once at hello; one the backend cannot multiply is
// refused in its own words; the others do not exist in TensorFlow.js. Declared, with the source:
// float accumulates in float32 on both backends. The cpu one sums blocks of `blockSize` products
// in JavaScript numbers and adds each block's sum into Y's Float32Array
// (@tensorflow/tfjs-backend-cpu 4.22.0, dist/kernels/BatchMatMul.js, batchMatMul: `let sum =
// 0.0; ... resVals[...] += sum`), so its partial sums are float32's; the wasm one hands the
// product to XNNPACK's f32 fully-connected operator (@tensorflow/tfjs-backend-wasm 4.22.0,
// src/cc/batch_mat_mul_impl.cc), whose kernels accumulate in float32. int32 is declared exact
// modulo 2^32, as the int32 dtype promises; the cpu backend computes it through the same float32
// code, a deviation declared in expectations/tfjs.fuzz.json. Every exception on a problem is an
// error of that problem.
'use strict';

const tf = require('@tensorflow/tfjs-core');
const mm = require('./mm_runtime.js');

const backend = process.argv[2] || 'cpu';
const PACKAGE = `@tensorflow/tfjs-backend-${backend}`;
require(PACKAGE);
const version = require(`${PACKAGE}/package.json`).version;
tf.env().set('IS_TEST', true);  // No "install tfjs-node" banner on stdout.

const TYPES = {float: 'float32', int32: 'int32'};
const ARITHMETIC = {float: 'float', int32: 'int32'};

function matmul(a, b, out, dtype) {
  return tf.tidy(() => {
    const rankA = a.shape.length;
    const rankB = b.shape.length;
    let ta = tf.tensor(a.data, a.shape, TYPES[dtype]);
    let tb = tf.tensor(b.data, b.shape, TYPES[dtype]);
    if (rankA === 1) ta = tf.reshape(ta, [1, a.shape[0]]);
    if (rankB === 1) tb = tf.reshape(tb, [b.shape[0], 1]);
    const start = process.hrtime.bigint();
    const y = tf.matMul(ta, tb);
    const data = y.dataSync();
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    const shape = y.shape.slice();
    if (rankB === 1) shape.pop();
    if (rankA === 1) shape.splice(shape.length - (rankB === 1 ? 1 : 2), 1);
    const name = y.dtype === 'float32' ? 'float' : y.dtype;
    return {data, shape, dtype: name, seconds};
  });
}

const driver = {
  runtime: `tfjs-${backend}`,
  version,
  matmul,
  dtypes: {},
  refused: {},
  acceptsOut: false,
  runsOn: () => `tf.matMul on the ${backend} backend, tfjs-core ${tf.version_core}; ` +
    `Node.js ${process.version}`,
  setup: async (threads) => {
    if (!(await tf.setBackend(backend))) throw new Error(`tf.setBackend('${backend}') failed`);
    for (const dtype of Object.keys(mm.ARRAYS)) {
      if (!(dtype in TYPES)) {
        driver.refused[dtype] = `TensorFlow.js has no ${dtype} dtype (only float32 and int32)`;
        continue;
      }
      try {
        const one = {shape: [2, 2], data: new mm.ARRAYS[dtype](4).fill(1)};
        matmul(one, one, null, dtype);
        driver.dtypes[dtype] = ARITHMETIC[dtype];
      } catch (e) {
        driver.refused[dtype] = String(e.message || e);
      }
    }
  },
};
mm.serve(driver);
