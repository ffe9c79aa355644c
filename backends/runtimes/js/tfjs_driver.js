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
//
// Gemm (float) is computed as a converter of ONNX's Gemm to TensorFlow emits it, onnx-tf's
// handler (onnx_tf/handlers/backend/gemm.py: A and B transposed where transA and transB say,
// `alpha * tf.matmul(x, y) + beta * z`, z = 0 without C): tf.transpose, tf.matMul, tf.mul by
// alpha, tf.mul of C by beta, tf.add (C broadcast by tf.add as numpy does). Declared: float32
// accumulation, each operation a float32 one. Its integer types are refused: TensorFlow.js's
// tf.mul needs both dtypes equal, so an int32 product cannot be scaled by Gemm's float alpha as
// the converter writes it. MatMulInteger and QLinearMatMul are refused: TensorFlow.js has no int8
// or uint8 dtype and no integer matmul of 8-bit operands.
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

// Y of a float Gemm problem (mm_runtime's problem), as onnx-tf's Gemm handler computes it.
function gemm(problem) {
  return tf.tidy(() => {
    const {A, B, C} = problem.inputs;
    const {transA = 0, transB = 0, alpha = 1, beta = 1} = problem.attributes;
    let x = tf.tensor(A.data, A.shape, 'float32');
    let y = tf.tensor(B.data, B.shape, 'float32');
    const z = C ? tf.tensor(C.data, C.shape, 'float32') : tf.scalar(0, 'float32');
    const start = process.hrtime.bigint();
    if (transA) x = tf.transpose(x);
    if (transB) y = tf.transpose(y);
    const product = tf.mul(tf.scalar(alpha, 'float32'), tf.matMul(x, y));
    const out = tf.add(product, tf.mul(tf.scalar(beta, 'float32'), z));
    const data = out.dataSync();
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    return {data, shape: out.shape.slice(), dtype: out.dtype === 'float32' ? 'float' : out.dtype,
      seconds};
  });
}

const NO_INT8 = 'TensorFlow.js has no int8 or uint8 dtype and no integer matmul of 8-bit operands';
const GEMM_INTEGERS = 'TensorFlow.js cannot scale an integer product by Gemm\'s float alpha as ' +
  'a converter writes it (tf.mul needs both dtypes equal)';

const driver = {
  runtime: `tfjs-${backend}`,
  version,
  matmul,
  dtypes: {},
  refused: {},
  acceptsOut: false,
  operators: {
    Gemm: {
      compute: gemm,
      types: {float: {accumulation: 'float', source: 'onnx-tf\'s Gemm handler (tf.matmul, ' +
        'tf.multiply, tf.add, each float32); TensorFlow.js\'s float32 matMul'}},
      refused: {
        ...Object.fromEntries(['int32', 'int64', 'uint32', 'uint64'].map((t) => [t, GEMM_INTEGERS])),
        double: 'TensorFlow.js has no double dtype (only float32 and int32)',
        float16: 'TensorFlow.js has no float16 dtype (only float32 and int32)',
        bfloat16: 'TensorFlow.js has no bfloat16 dtype (only float32 and int32)',
      },
    },
    MatMulInteger: NO_INT8,
    QLinearMatMul: NO_INT8,
  },
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
