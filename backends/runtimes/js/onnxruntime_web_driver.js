// ONNX Runtime Web (npm onnxruntime-web), its WebAssembly backend under Node.js, judged by mm
// (mm-conformance --backend onnxruntime-web); see ort_driver.js. One wasm thread: the threaded
// build needs workers, and mm runs one problem at a time.
'use strict';

const ort = require('onnxruntime-web');
const mm = require('./mm_runtime.js');
const {ortDriver} = require('./ort_driver.js');

ort.env.wasm.numThreads = 1;
ort.env.logLevel = 'error';
const version = ort.env.versions.web;
mm.serve(ortDriver({
  ort,
  runtime: 'onnxruntime-web',
  version,
  options: {executionProviders: ['wasm'], graphOptimizationLevel: 'disabled'},
  threadsFixed: 1,
  runsOn: 'wasm backend (SIMD, 1 thread), graphOptimizationLevel disabled',
}));
