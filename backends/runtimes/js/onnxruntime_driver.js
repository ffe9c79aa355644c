// ONNX Runtime for Node.js (npm onnxruntime-node), its CPU execution provider, judged by mm
// (mm-conformance --backend onnxruntime); see ort_driver.js.
'use strict';

const ort = require('onnxruntime-node');
const mm = require('./mm_runtime.js');
const {ortDriver} = require('./ort_driver.js');

ort.env.logLevel = 'error';  // No warning on stderr for an old opset's probe model.
const version = require('onnxruntime-node/package.json').version;
mm.serve(ortDriver({
  ort,
  runtime: 'onnxruntime-node',
  version,
  // No spinning: every kept session owns a thread pool, and idle spinning pools (one per Gemm
  // alpha and beta a fuzz run tries) would take the CPU from the one that runs.
  options: {executionProviders: ['cpu'], graphOptimizationLevel: 'disabled', interOpNumThreads: 1,
    logSeverityLevel: 3, extra: {session: {intra_op: {allow_spinning: '0'}}}},
  runsOn: 'CPU execution provider (MLAS), graphOptimizationLevel disabled, no spinning',
}));
