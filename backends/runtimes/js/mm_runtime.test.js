// Tests of mm_runtime.js, the JavaScript SDK of the runtime protocol, on its own (ctest
// runtime.js_sdk: node --test); through mm its drivers are tested by the runtime.* ctests.
'use strict';

const assert = require('node:assert/strict');
const {spawnSync} = require('node:child_process');
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
    {type: 'hello', protocol: 1, threads: 3},
  );
  assert.deepEqual(seen, [3]);
  assert.equal(hello.protocol, 1);
  assert.equal(hello.runs_on, '3 threads');
  assert.deepEqual(Object.keys(hello.dtypes).sort(), Object.keys(mm.ARRAYS).sort());
  assert.deepEqual(hello.dtypes.float, {accumulation: 'float', flushes_subnormals: false});
  assert.deepEqual(hello.dtypes.bfloat16,
    {accumulation: 'float', flushes_subnormals: true, conversion: 'bf16 via f32'});
  assert.deepEqual(hello.dtypes.uint64, {refused: 'no uint64'});
  assert.deepEqual(hello.dtypes.int32, {refused: 'not declared by the driver'});
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
      matmul: (a, b, out) => { console.log('noise'); out.data[0] = a.data[0] * b.data[0]; }});`;
  const frame = (header, data = Buffer.alloc(0)) => {
    const text = Buffer.from(JSON.stringify(header));
    const prefix = Buffer.alloc(8);
    prefix.writeUInt32LE(text.length, 0);
    prefix.writeUInt32LE(data.length, 4);
    return Buffer.concat([prefix, text, data]);
  };
  const input = Buffer.concat([
    frame({type: 'hello', protocol: 1, threads: 1}),
    frame(request('int32', [1, 1], [1, 1], [1, 1], 5),
      dataOf(new Int32Array([6]), new Int32Array([7]), new Int32Array([-1]))),
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
  assert.equal(frames.length, 2);
  assert.equal(frames[0].header.runtime, 'echo');
  assert.deepEqual(frames[0].header.dtypes.int32, {accumulation: 'int32',
    flushes_subnormals: false});
  assert.equal(frames[1].header.id, 5);
  assert.equal(frames[1].data.readInt32LE(0), 42);
});
