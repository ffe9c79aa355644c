// Tests of mm_runtime.js, the JavaScript SDK of the runtime protocol, on its own (ctest
// runtime.js_sdk: node --test); through mm its drivers are tested by the runtime.* ctests.
'use strict';

const assert = require('node:assert/strict');
const {spawnSync} = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const test = require('node:test');
const mm = require('./mm_runtime.js');

// A, B and Y's bytes back to back, as mm sends them.
function dataOf(...arrays) {
  return Buffer.concat(arrays.map((x) => Buffer.from(x.buffer, x.byteOffset, x.byteLength)));
}

// A naive float matmul of 2-D operands into `out`.
function matmul2d(a, b, out) {
  const [m, k] = a.shape;
  const n = b.shape[1];
  for (let i = 0; i < m; ++i) {
    for (let j = 0; j < n; ++j) {
      let sum = 0;
      for (let p = 0; p < k; ++p) sum += a.data[i * k + p] * b.data[p * n + j];
      out.data[i * n + j] = sum;
    }
  }
}

const request = (dtype, a, b, y, id = 1) => ({type: 'matmul', id, dtype, a, b, y});

// A frame as mm writes it: the header's and the data's lengths, the header's JSON, the data.
function frame(header, data = Buffer.alloc(0)) {
  const text = Buffer.from(JSON.stringify(header));
  const prefix = Buffer.alloc(8);
  prefix.writeUInt32LE(text.length, 0);
  prefix.writeUInt32LE(data.length, 4);
  return Buffer.concat([prefix, text, data]);
}

test('the hello declares every dtype: supported, refused or undeclared', async () => {
  const seen = [];
  const hello = await mm.hello(
    {
      runtime: 't',
      version: '1',
      dtypes: {float: 'float', bfloat16: {accumulation: 'float', flushesSubnormals: true,
        conversion: 'bf16 via f32'}},
      refused: {uint64: 'no uint64'},
      setup: (n) => seen.push(n),
      runsOn: (n) => `${n} threads`,
    },
    {type: 'hello', protocol: 2, threads: 3},
  );
  assert.deepEqual(seen, [3]);
  assert.equal(hello.protocol, 2);
  assert.equal(hello.runs_on, '3 threads');
  assert.deepEqual(Object.keys(hello.dtypes).sort(), Object.keys(mm.ARRAYS).sort());
  assert.deepEqual(hello.dtypes.float, {accumulation: 'float', flushes_subnormals: false});
  assert.deepEqual(hello.dtypes.bfloat16,
    {accumulation: 'float', flushes_subnormals: true, conversion: 'bf16 via f32'});
  assert.deepEqual(hello.dtypes.uint64, {refused: 'no uint64'});
  assert.deepEqual(hello.dtypes.int32, {refused: 'not declared by the driver'});
});

test('a declaration\'s source goes into the hello as text, absent when not given', async () => {
  const driver = {
    dtypes: {float: {accumulation: 'float', source: 'the manual, page 3'}, double: 'double'},
    operators: {MatMulInteger: {compute: () => {}, types: {
      'uint8 x int8 -> int32': {accumulation: 'int32', source: 'may saturate without VNNI'}}}},
  };
  const hello = await mm.hello(driver, {type: 'hello', protocol: 2, threads: 1});
  assert.equal(hello.dtypes.float.source, 'the manual, page 3');
  assert.equal('source' in hello.dtypes.double, false);
  assert.deepEqual(hello.operators.MatMulInteger.types['uint8 x int8 -> int32'],
    {accumulation: 'int32', flushes_subnormals: false, source: 'may saturate without VNNI'});
});

test('the hello declares every operator of the family, by default MatMul only', async () => {
  const driver = {
    dtypes: {float: 'float'},
    operators: {
      Gemm: {compute: () => {}, types: {float: 'double', float16: {accumulation: 'float',
        conversion: 'f32'}}, refused: {bfloat16: 'no bfloat16 Gemm'}, versions: [11, 13]},
      QLinearMatMul: 'not yet',
    },
  };
  const hello = await mm.hello(driver, {type: 'hello', protocol: 2, threads: 1});
  assert.deepEqual(hello.operators, {
    Gemm: {
      versions: [11, 13],
      types: {
        float: {accumulation: 'double', flushes_subnormals: false},
        float16: {accumulation: 'float', flushes_subnormals: false, conversion: 'f32'},
        bfloat16: {refused: 'no bfloat16 Gemm'},
      },
    },
    MatMulInteger: {refused: 'the driver declares MatMul only'},
    QLinearMatMul: {refused: 'not yet'},
  });
  const plain = await mm.hello({dtypes: {}}, {type: 'hello', protocol: 2, threads: 1});
  assert.deepEqual(Object.keys(plain.operators), mm.FAMILY);
  for (const name of mm.FAMILY) assert.deepEqual(plain.operators[name], {refused: mm.MATMUL_ONLY});
  // An mm of protocol 1 gets a hello of protocol 1: MatMul only, no operators.
  const old = await mm.hello(driver, {type: 'hello', protocol: 1, threads: 1});
  assert.equal(old.protocol, 1);
  assert.equal(old.operators, undefined);
});

// An operator request: `inputs` is [[name, typed array, dtype, shape]], `y` [dtype, shape].
function operatorRequest(op, version, inputs, attributes, y, id = 1) {
  return {
    type: 'operator', id, op, version, attributes,
    inputs: inputs.map(([name, , dtype, shape]) => ({name, dtype, shape})),
    y: {dtype: y[0], shape: y[1]},
  };
}

// MatMulInteger of 2-D A and B, per-tensor zero points, exactly (int32 wraps as the standard says).
function matmulInteger(problem) {
  const {A, B} = problem.inputs;
  const [m, k] = A.shape;
  const n = B.shape[1];
  const azp = problem.inputs.a_zero_point ? problem.inputs.a_zero_point.data[0] : 0;
  const bzp = problem.inputs.b_zero_point ? problem.inputs.b_zero_point.data[0] : 0;
  const y = new Int32Array(m * n);
  for (let i = 0; i < m; ++i) {
    for (let j = 0; j < n; ++j) {
      let sum = 0;
      for (let p = 0; p < k; ++p) sum += (A.data[i * k + p] - azp) * (B.data[p * n + j] - bzp);
      y[i * n + j] = sum;
    }
  }
  return {data: y, shape: [m, n]};
}

test('an operator request gives its inputs by name with their 8-bit types', async () => {
  let seen;
  const driver = {operators: {MatMulInteger: {types: {'uint8 x int8 -> int32': 'int32'},
    compute: (problem) => { seen = problem; return matmulInteger(problem); }}}};
  const inputs = [['A', new Uint8Array([255, 255]), 'uint8', [1, 2]],
    ['B', new Int8Array([127, 127]), 'int8', [2, 1]],
    ['b_zero_point', new Int8Array([-1]), 'int8', []]];
  const data = dataOf(...inputs.map((x) => x[1]), new Int32Array([-1]));
  const reply = await mm.answerOperator(driver,
    operatorRequest('MatMulInteger', 10, inputs, {}, ['int32', [1, 1]], 4), data);
  assert.deepEqual([seen.op, seen.version, seen.attributes], ['MatMulInteger', 10, {}]);
  assert.deepEqual(Object.keys(seen.inputs), ['A', 'B', 'b_zero_point']);
  assert.ok(seen.inputs.A.data instanceof Uint8Array);
  assert.ok(seen.inputs.B.data instanceof Int8Array);
  assert.deepEqual(seen.inputs.b_zero_point.shape, []);
  assert.deepEqual(seen.y, {dtype: 'int32', shape: [1, 1]});
  assert.deepEqual([...seen.out.data], [-1]);  // The buffer mm offers.
  assert.deepEqual([reply.header.type, reply.header.id, reply.header.dtype, reply.header.shape],
    ['y', 4, 'int32', [1, 1]]);
  assert.equal(reply.data.readInt32LE(0), 255 * 128 * 2);
});

test('Gemm gets its attributes and may compute into out', async () => {
  const gemm = (problem) => {
    const {A, B, C} = problem.inputs;
    const {alpha, transB} = problem.attributes;
    assert.equal(transB, 1);
    // [1,2] x ([1,2] transposed) + C.
    problem.out.data[0] = alpha * (A.data[0] * B.data[0] + A.data[1] * B.data[1]) + C.data[0];
  };
  const driver = {operators: {Gemm: {types: {float: 'float'}, compute: gemm}}};
  const inputs = [['A', new Float32Array([1, 2]), 'float', [1, 2]],
    ['B', new Float32Array([3, 4]), 'float', [1, 2]], ['C', new Float32Array([10]), 'float', [1]]];
  const data = dataOf(...inputs.map((x) => x[1]), new Float32Array(1));
  const attributes = {transA: 0, transB: 1, alpha: 0.5, beta: 1};
  const reply = await mm.answerOperator(driver,
    operatorRequest('Gemm', 13, inputs, attributes, ['float', [1, 1]]), data);
  assert.equal(reply.header.type, 'y', JSON.stringify(reply.header));
  assert.equal(reply.data.readFloatLE(0), 15.5);
});

test('an undeclared operator, a bad request or an exception is an error or refusal', async () => {
  const a = ['A', new Uint8Array(1), 'uint8', [1, 1]];
  const b = ['B', new Int8Array(1), 'int8', [1, 1]];
  const data = dataOf(a[1], b[1], new Int32Array(1));
  const undeclared = await mm.answerOperator({operators: {Gemm: 'later'}},
    operatorRequest('Gemm', 13, [a, b], {}, ['int32', [1, 1]]), data);
  assert.equal(undeclared.header.type, 'error');
  assert.match(undeclared.header.message, /operator "Gemm" is not declared by the driver/);
  const picky = {rules: [[/no batches/, 'shape']], operators: {MatMulInteger: {types: {},
    compute: () => { throw new Error('no batches'); }}}};
  const request5 = operatorRequest('MatMulInteger', 10, [a, b], {}, ['int32', [1, 1]], 5);
  assert.deepEqual((await mm.answerOperator(picky, request5, data)).header,
    {type: 'refused', id: 5, what: 'shape', why: 'Error: no batches'});
  const short = await mm.answerOperator(picky, request5, Buffer.alloc(3));
  assert.match(short.header.message, /3 data bytes for 6 in 3 tensors/);
});

test('computes into out and sends Y with its dtype, shape and time', async () => {
  const a = new Float32Array([1, 2, 3, 4, 5, 6]);
  const b = new Float32Array([1, 0, 0, 1, 1, 1]);
  const poison = new Float32Array(4).fill(NaN);
  const driver = {dtypes: {float: 'float'}, matmul: (x, y, out) => matmul2d(x, y, out)};
  const reply = await mm.answer(driver, request('float', [2, 3], [3, 2], [2, 2]),
    dataOf(a, b, poison));
  assert.equal(reply.header.type, 'y');
  assert.deepEqual([reply.header.dtype, reply.header.shape], ['float', [2, 2]]);
  assert.ok(reply.header.seconds >= 0);
  assert.deepEqual([...new Float32Array(reply.data.buffer.slice(reply.data.byteOffset,
    reply.data.byteOffset + 16))], [4, 5, 10, 11]);
});

test('maps every dtype to its typed array; bfloat16 as bits, 0-d and empty tensors', async () => {
  for (const [dtype, Array] of Object.entries(mm.ARRAYS)) {
    let seen;
    const driver = {matmul: (a, b, out, name) => { seen = {a, b, out, name}; }};
    const big = Array === BigInt64Array || Array === BigUint64Array;
    const a = new Array(3).fill(big ? 7n : 7);
    const data = dataOf(a, new Array(0), new Array(1));
    const reply = await mm.answer(driver, request(dtype, [3], [0], []), data);
    assert.equal(reply.header.type, 'y', dtype);
    assert.ok(seen.a.data instanceof Array, dtype);
    assert.equal(seen.name, dtype);
    assert.deepEqual([seen.a.shape, seen.b.shape, seen.out.shape], [[3], [0], []]);
    assert.equal(seen.b.data.length, 0);
    assert.equal(seen.out.data.length, 1);  // A 0-d tensor has one element.
    assert.deepEqual(reply.header.shape, []);
    assert.equal(reply.header.dtype, dtype);  // Uint16Array of a bfloat16 request stays bfloat16.
    assert.equal(reply.data.length, Array.BYTES_PER_ELEMENT);
  }
});

test('returned Y goes back as the runtime made it; a driver may give its own time', async () => {
  const driver = {
    acceptsOut: false,
    matmul: (a, b, out) => {
      assert.equal(out, null);
      return {data: new Float64Array([1, 2, 3]), shape: [3], seconds: 0.25};
    },
  };
  const data = dataOf(new Float32Array(2), new Float32Array(2), new Float32Array(1));
  const reply = await mm.answer(driver, request('float', [1, 2], [2, 1], [1, 1]), data);
  assert.deepEqual([reply.header.dtype, reply.header.shape], ['double', [3]]);
  assert.equal(reply.header.seconds, 0.25);
  assert.equal(reply.data.length, 24);
});

test('exceptions become refusals by the rules, else errors with their words', async () => {
  class ShapeError extends Error {}
  const throwing = (e) => ({
    rules: [[ShapeError, 'shape'], [/no kernel/, 'dtype']],
    matmul: () => { throw e; },
  });
  const data = dataOf(new Float32Array(1), new Float32Array(1), new Float32Array(1));
  const ask = (e) => mm.answer(throwing(e), request('float', [1, 1], [1, 1], [1, 1], 9), data);
  assert.deepEqual((await ask(new ShapeError('rank < 2'))).header,
    {type: 'refused', id: 9, what: 'shape', why: 'Error: rank < 2'});
  assert.equal((await ask(new Error('no kernel for it'))).header.what, 'dtype');
  assert.deepEqual((await ask(new RangeError('out of memory'))).header,
    {type: 'error', id: 9, message: 'RangeError: out of memory'});
  const async = {matmul: async () => { throw new TypeError('late'); }};
  assert.equal((await mm.answer(async, request('float', [1, 1], [1, 1], [1, 1]), data))
    .header.message, 'TypeError: late');
});

test('a message too long for a frame is cut to fit, between characters, with a marker',
  async () => {
    // 30000 emoji: surrogate pairs, 4 UTF-8 bytes each, far over 64 KiB; the cut may fall
    // between the two halves of one, and must not.
    const longText = '\u{1F600}'.repeat(30000);
    const data = dataOf(new Float32Array(1), new Float32Array(1), new Float32Array(1));
    for (const [rules, key] of [[[], 'message'], [[[Error, 'shape']], 'why']]) {
      const driver = {rules, matmul: () => { throw new Error(longText); }};
      const {header} = await mm.answer(driver, request('float', [1, 1], [1, 1], [1, 1]), data);
      const encoded = Buffer.from(JSON.stringify(header), 'utf8');
      assert.ok(encoded.length <= mm.MAX_HEADER_BYTES, `${encoded.length} bytes`);
      assert.ok(encoded.length > mm.MAX_HEADER_BYTES - 64, `${encoded.length} bytes`);
      const text = header[key];
      assert.ok(text.endsWith('; 30007 characters in all]'), text.slice(-80));
      const kept = text.slice(0, text.indexOf(' [... cut'));
      assert.equal(kept, `Error: ${longText}`.slice(0, kept.length));
      // Whole characters: the UTF-8 of what is kept decodes back to it.
      assert.equal(Buffer.from(kept, 'utf8').toString('utf8'), kept);
      assert.ok(!/[\ud800-\udbff]$/.test(kept));
    }
    // Wherever the limit falls, before or inside a pair (prefixes of 0 to 3 units shift it).
    for (let pad = 0; pad < 4; ++pad) {
      const cut = mm.fitHeader({type: 'error', id: 1, message: 'a'.repeat(pad) + longText},
        'message').message;
      assert.ok(!/[\ud800-\udbff]$/.test(cut.slice(0, cut.indexOf(' [... cut'))), `pad ${pad}`);
    }
    const short = {type: 'error', id: 1, message: 'x'.repeat(1000)};
    assert.deepEqual(mm.fitHeader(short, 'message'), short);
  });

test('a request whose data does not match its shapes is an error, not a crash', async () => {
  const reply = await mm.answer({matmul: () => {}}, request('float', [2, 2], [2, 2], [2, 2]),
    Buffer.alloc(8));
  assert.equal(reply.header.type, 'error');
  assert.match(reply.header.message, /8 data bytes for 48/);
  const unknown = await mm.answer({matmul: () => {}}, request('int8', [1], [1], []),
    Buffer.alloc(3));
  assert.match(unknown.header.message, /unknown dtype "int8"/);
});

test('serve speaks frames over stdin and stdout, and console.log goes to stderr', () => {
  const driver = `
    const mm = require(${JSON.stringify(path.join(__dirname, 'mm_runtime.js'))});
    mm.serve({runtime: 'echo', version: '1', dtypes: {int32: 'int32'},
      matmul: (a, b, out) => { console.log('noise'); out.data[0] = a.data[0] * b.data[0]; },
      operators: {MatMulInteger: {types: {'int8 x int8 -> int32': 'int32'},
        compute: (p) => { p.out.data[0] = p.inputs.A.data[0] * p.inputs.B.data[0]; }}}});`;
  const int8 = [['A', new Int8Array([-128]), 'int8', [1, 1]],
    ['B', new Int8Array([-128]), 'int8', [1, 1]]];
  const input = Buffer.concat([
    frame({type: 'hello', protocol: 2, threads: 1}),
    frame(request('int32', [1, 1], [1, 1], [1, 1], 5),
      dataOf(new Int32Array([6]), new Int32Array([7]), new Int32Array([-1]))),
    frame(operatorRequest('MatMulInteger', 10, int8, {}, ['int32', [1, 1]], 6),
      dataOf(int8[0][1], int8[1][1], new Int32Array([-1]))),
  ]);
  const run = spawnSync(process.execPath, ['-e', driver], {input});
  assert.equal(run.status, 0, String(run.stderr));
  assert.match(String(run.stderr), /noise/);
  const out = run.stdout;
  const frames = [];
  for (let at = 0; at < out.length;) {
    const h = out.readUInt32LE(at);
    const d = out.readUInt32LE(at + 4);
    frames.push({header: JSON.parse(out.subarray(at + 8, at + 8 + h)),
      data: out.subarray(at + 8 + h, at + 8 + h + d)});
    at += 8 + h + d;
  }
  assert.equal(frames.length, 3);
  assert.equal(frames[0].header.runtime, 'echo');
  assert.equal(frames[0].header.protocol, 2);
  assert.deepEqual(frames[0].header.operators.MatMulInteger.types['int8 x int8 -> int32'],
    {accumulation: 'int32', flushes_subnormals: false});
  assert.deepEqual(frames[0].header.dtypes.int32, {accumulation: 'int32',
    flushes_subnormals: false});
  assert.equal(frames[1].header.id, 5);
  assert.equal(frames[1].data.readInt32LE(0), 42);
  assert.deepEqual([frames[2].header.id, frames[2].header.dtype], [6, 'int32']);
  assert.equal(frames[2].data.readInt32LE(0), 16384);
});

test('idle runs after each answer is written, before the next request is computed', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-runtime-idle-'));
  const ask = (id) => frame(request('int32', [1, 1], [1, 1], [1, 1], id),
    dataOf(new Int32Array([id]), new Int32Array([2]), new Int32Array([-1])));
  fs.writeFileSync(path.join(dir, 'in'), Buffer.concat([
    frame({type: 'hello', protocol: 2, threads: 1}), ask(1), ask(2)]));
  const input = fs.openSync(path.join(dir, 'in'), 'r');
  const output = fs.openSync(path.join(dir, 'out'), 'w');
  const seen = [];
  let computed = 0;
  await mm.serve({runtime: 'idle', version: '1', dtypes: {int32: 'int32'},
    matmul: (a, b, out) => { computed += 1; out.data[0] = a.data[0] * b.data[0]; },
    idle: async () => { seen.push([computed, fs.fstatSync(output).size]); }}, input, output);
  fs.closeSync(input);
  fs.closeSync(output);
  const out = fs.readFileSync(path.join(dir, 'out'));
  fs.rmSync(dir, {recursive: true});
  const ends = [];
  for (let at = 0; at < out.length;) {
    at += 8 + out.readUInt32LE(at) + out.readUInt32LE(at + 4);
    ends.push(at);
  }
  assert.equal(ends.length, 3);  // The hello and two answers.
  assert.deepEqual(seen, [[1, ends[1]], [2, ends[2]]]);
});

test('a frame is written whole, its data small (one write) or large (two)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-runtime-write-'));
  const file = path.join(dir, 'out');
  const output = fs.openSync(file, 'w');
  const channel = new mm.Channel(-1, output);
  const small = Buffer.from([1, 2, 3]);
  const large = Buffer.alloc(70 * 1024, 7);
  channel.write({type: 'y', id: 1}, small);
  channel.write({type: 'y', id: 2}, large);
  fs.closeSync(output);
  const out = fs.readFileSync(file);
  fs.rmSync(dir, {recursive: true});
  assert.deepEqual(out, Buffer.concat([frame({type: 'y', id: 1}, small),
    frame({type: 'y', id: 2}, large)]));
});
