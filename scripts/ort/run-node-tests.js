// Runs ONNX node tests through ONNX Runtime's CPU execution provider (onnxruntime-node, the version
// package-lock.json pins) and writes what it computed as an outputs tree for
// `mm-conformance --outputs NAME=OUT` (docs/conformance.md, "Judging a runtime from its outputs"):
//   OUT/<case>/test_data_set_N/output_0.pb   a serialized onnx.TensorProto (raw_data)
//   OUT/mm_outputs.json                      the runtime, and a record per data set it wrote no
//                                            output for: "unsupported" when ONNX Runtime has no
//                                            kernel for the model's types, "error" otherwise
//
// usage: node run-node-tests.js --out OUT ROOT...
//   ROOT: a folder of case directories (model.onnx, test_data_set_N/input_K.pb) or one case
//   directory. A case name found again in a later root is left out (the first root wins, as in
//   mm-conformance). OUT must not exist yet or be empty, so no stale output is ever judged.
'use strict';

const fs = require('fs');
const path = require('path');
const ort = require('onnxruntime-node');

// --- onnx.TensorProto, the few fields a node test's tensors use --------------------------------
// Field numbers from onnx.proto: dims 1, data_type 2, float_data 4, int32_data 5, int64_data 7,
// name 8, raw_data 9, double_data 10, uint64_data 11.
const TYPES = {
  1: {name: 'float32', size: 4},
  6: {name: 'int32', size: 4},
  7: {name: 'int64', size: 8},
  10: {name: 'float16', size: 2},
  11: {name: 'float64', size: 8},
  12: {name: 'uint32', size: 4},
  13: {name: 'uint64', size: 8},
  16: {name: 'bfloat16', size: 2},
};
const TYPE_OF_NAME = Object.fromEntries(Object.entries(TYPES).map(([k, v]) => [v.name, +k]));

function readVarint(buf, pos) {
  let value = 0n;
  let shift = 0n;
  for (;;) {
    if (pos >= buf.length) throw new Error('truncated varint');
    const byte = buf[pos++];
    value |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return [value, pos];
    shift += 7n;
  }
}

// Decodes a TensorProto into {dims, dataType, bytes} with the elements as little-endian bytes.
function decodeTensorProto(buf) {
  const dims = [];
  let dataType = 0;
  let raw = null;
  const typed = {4: [], 5: [], 7: [], 10: [], 11: []};
  let pos = 0;
  while (pos < buf.length) {
    let key;
    [key, pos] = readVarint(buf, pos);
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    const pushScalar = (value) => {
      if (field === 1) dims.push(Number(BigInt.asIntN(64, value)));
      else if (field === 2) dataType = Number(value);
      else if (field in typed) typed[field].push(value);
    };
    if (wire === 0) {
      let v;
      [v, pos] = readVarint(buf, pos);
      pushScalar(v);
    } else if (wire === 1) {
      const v = buf.readBigUInt64LE(pos);
      pos += 8;
      if (field === 10) typed[10].push(buf.readDoubleLE(pos - 8));
      else pushScalar(v);
    } else if (wire === 5) {
      if (field === 4) typed[4].push(buf.readFloatLE(pos));
      pos += 4;
    } else if (wire === 2) {
      let len;
      [len, pos] = readVarint(buf, pos);
      const end = pos + Number(len);
      const bytes = buf.subarray(pos, end);
      if (field === 9) {
        raw = Buffer.from(bytes);
      } else if (field === 4) {
        for (let i = 0; i + 4 <= bytes.length; i += 4) typed[4].push(bytes.readFloatLE(i));
      } else if (field === 10) {
        for (let i = 0; i + 8 <= bytes.length; i += 8) typed[10].push(bytes.readDoubleLE(i));
      } else if (field === 1 || field === 5 || field === 7 || field === 11) {
        let p = 0;
        while (p < bytes.length) {
          let v;
          [v, p] = readVarint(bytes, p);
          if (field === 1) dims.push(Number(BigInt.asIntN(64, v)));
          else typed[field].push(v);
        }
      }
      pos = end;
    } else {
      throw new Error(`unsupported wire type ${wire}`);
    }
  }
  const type = TYPES[dataType];
  if (!type) throw new Error(`data_type ${dataType} is not a MatMul type`);
  const count = dims.reduce((a, b) => a * b, 1);
  let bytes = raw;
  if (bytes === null) {
    bytes = Buffer.alloc(count * type.size);
    for (let i = 0; i < count; ++i) {
      switch (type.name) {
        case 'float32': bytes.writeFloatLE(typed[4][i], i * 4); break;
        case 'float64': bytes.writeDoubleLE(typed[10][i], i * 8); break;
        case 'float16': case 'bfloat16': bytes.writeUInt16LE(Number(typed[5][i]), i * 2); break;
        case 'int32': bytes.writeInt32LE(Number(BigInt.asIntN(32, typed[5][i])), i * 4); break;
        case 'int64': bytes.writeBigInt64LE(BigInt.asIntN(64, typed[7][i]), i * 8); break;
        case 'uint32': bytes.writeUInt32LE(Number(typed[11][i]), i * 4); break;
        case 'uint64': bytes.writeBigUInt64LE(typed[11][i], i * 8); break;
      }
    }
  }
  if (bytes.length !== count * type.size) {
    throw new Error(`${bytes.length} data bytes for dims [${dims}] of ${type.name}`);
  }
  return {dims, dataType, bytes};
}

function varint(value) {
  let v = BigInt.asUintN(64, BigInt(value));
  const out = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) byte |= 0x80;
    out.push(byte);
  } while (v !== 0n);
  return Buffer.from(out);
}

// Encodes {dims, dataType, name, bytes} as a TensorProto with raw_data.
function encodeTensorProto({dims, dataType, name, bytes}) {
  const parts = [];
  for (const d of dims) parts.push(varint((1 << 3) | 0), varint(d));
  parts.push(varint((2 << 3) | 0), varint(dataType));
  const nameBytes = Buffer.from(name, 'utf8');
  parts.push(varint((8 << 3) | 2), varint(nameBytes.length), nameBytes);
  parts.push(varint((9 << 3) | 2), varint(bytes.length), bytes);
  return Buffer.concat(parts);
}

// --- ONNX Runtime tensors ------------------------------------------------------------------------
const ARRAYS = {
  float32: Float32Array, float64: Float64Array, float16: Uint16Array, int32: Int32Array,
  int64: BigInt64Array, uint32: Uint32Array, uint64: BigUint64Array,
};

function toOrtTensor({dims, dataType, bytes}) {
  const type = TYPES[dataType];
  const Array = ARRAYS[type.name];
  if (!Array) throw new Error(`onnxruntime-node has no tensor type for ${type.name}`);
  // A copy, so the typed array is aligned whatever the file's layout was.
  const copy = new Uint8Array(bytes);
  return new ort.Tensor(type.name, new Array(copy.buffer, 0, bytes.length / type.size), dims);
}

function fromOrtTensor(tensor, name) {
  const dataType = TYPE_OF_NAME[tensor.type];
  if (!dataType) throw new Error(`output type ${tensor.type} is not a MatMul type`);
  const data = tensor.data;
  const bytes = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  return encodeTensorProto({dims: tensor.dims, dataType, name, bytes});
}

// --- The run -------------------------------------------------------------------------------------
function listCases(roots) {
  const cases = [];
  const seen = new Set();
  for (const root of roots) {
    const dirs = fs.existsSync(path.join(root, 'model.onnx'))
        ? [root]
        : fs.readdirSync(root).sort().map((n) => path.join(root, n));
    for (const dir of dirs) {
      const name = path.basename(dir);
      if (!fs.existsSync(path.join(dir, 'model.onnx')) || seen.has(name)) continue;
      seen.add(name);
      const sets = fs.readdirSync(dir).filter((n) => /^test_data_set_\d+$/.test(n))
          .sort((a, b) => +a.split('_').pop() - +b.split('_').pop());
      cases.push({name, dir, sets});
    }
  }
  return cases;
}

async function main() {
  const args = process.argv.slice(2);
  const outAt = args.indexOf('--out');
  if (outAt < 0 || outAt + 1 >= args.length) {
    console.error('usage: node run-node-tests.js --out OUT ROOT...');
    process.exit(2);
  }
  const out = args[outAt + 1];
  const roots = args.filter((_, i) => i !== outAt && i !== outAt + 1);
  if (roots.length === 0) {
    console.error('run-node-tests.js: no data root given');
    process.exit(2);
  }
  if (fs.existsSync(out) && fs.readdirSync(out).length > 0) {
    console.error(`run-node-tests.js: ${out} is not empty; remove it first`);
    process.exit(2);
  }
  fs.mkdirSync(out, {recursive: true});
  const version = require('onnxruntime-node/package.json').version;
  const options = {
    executionProviders: ['cpu'],
    graphOptimizationLevel: 'disabled',
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
  };
  const records = [];
  let written = 0;
  for (const c of listCases(roots)) {
    let session = null;
    let refusal = null;
    try {
      session = await ort.InferenceSession.create(path.join(c.dir, 'model.onnx'), options);
    } catch (e) {
      refusal = e;
    }
    for (const set of c.sets) {
      const record = (status, message) =>
        records.push({case: c.name, data_set: set, status, message: String(message)});
      if (refusal) {
        // ONNX Runtime's own word that it has no kernel for the node's types: it refused them.
        const msg = refusal.message || String(refusal);
        record(/Could not find an implementation/.test(msg) ? 'unsupported' : 'error', msg);
        continue;
      }
      try {
        const feeds = {};
        session.inputNames.forEach((name, k) => {
          const file = path.join(c.dir, set, `input_${k}.pb`);
          feeds[name] = toOrtTensor(decodeTensorProto(fs.readFileSync(file)));
        });
        const results = await session.run(feeds);
        const name = session.outputNames[0];
        const dir = path.join(out, c.name, set);
        fs.mkdirSync(dir, {recursive: true});
        fs.writeFileSync(path.join(dir, 'output_0.pb'), fromOrtTensor(results[name], name));
        ++written;
      } catch (e) {
        record('error', e.message || e);
      }
    }
  }
  const manifest = {
    runtime: `onnxruntime-node ${version}, CPU execution provider, graphOptimizationLevel ` +
        `${options.graphOptimizationLevel}, intraOpNumThreads ${options.intraOpNumThreads}`,
    records,
  };
  fs.writeFileSync(path.join(out, 'mm_outputs.json'), JSON.stringify(manifest, null, 1) + '\n');
  const unsupported = records.filter((r) => r.status === 'unsupported').length;
  console.log(`run-node-tests.js: ${written} outputs written, ${unsupported} data sets refused ` +
              `(unsupported), ${records.length - unsupported} errors, under ${out}`);
}

main().catch((e) => {
  console.error(`run-node-tests.js: ${e.stack || e}`);
  process.exit(1);
});
