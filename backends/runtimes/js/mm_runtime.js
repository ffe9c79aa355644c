// mm's runtime protocol for JavaScript: a MatMul of any Node.js runtime judged by mm.
//
// A driver is a function from (A, B) to Y plus a declaration; serve() speaks the protocol of
// docs/runtime-protocol.md over stdin and stdout (Node.js 20, no dependency):
//
//   const mm = require('./mm_runtime.js');
//   mm.serve({
//     runtime: 'mine', version: '1.0',
//     dtypes: {float: 'float', int32: 'int32'},   // dtype: its accumulation
//     refused: {bfloat16: 'mine has no bfloat16'},
//     matmul: async (a, b, out, dtype) => mine.matmul(a, b),  // returns {data, shape}
//   });
//
// Then `mm-conformance --backend-cmd mine="node my_driver.js" --backend mine`.
//
// - A and B are tensors {dtype, shape, data}: `data` a typed array of the request's dtype
//   (float Float32Array, double Float64Array, float16 and bfloat16 Uint16Array of their bits,
//   int32 Int32Array, int64 BigInt64Array, uint32 Uint32Array, uint64 BigUint64Array), of the
//   request's shape (0-d: one element; empty: none). Treat them as read-only.
// - `out` is a tensor of Y's shape holding the bytes mm offers (poisoned, so an element the
//   runtime leaves unwritten shows), or null when the driver sets acceptsOut: false.
// - matmul (sync or async) returns Y, {data, shape[, dtype]} (dtype defaults to the request's),
//   or undefined when it wrote `out`. Y goes back as it is: mm judges its dtype and shape.
// - `seconds` in the answer is the time of the matmul call alone, without the pipe; a driver
//   that times the runtime's own call more closely returns it as Y's `seconds`.
// - Exceptions become answers by the driver's rules: `rules` is a list of [match, what], what
//   being 'shape' or 'dtype' and match an Error class, a RegExp tested on "Name: message", or a
//   function of the error; the first match refuses that (in the error's words), any other
//   exception is an error ("Name: message"). mm shows a refusal of a dtype the hello declares
//   supported as a conformance gap, never as UNSUPPORTED: refuse unsupported dtypes in the hello.
// - setup(threads) (sync or async) runs at hello with mm's thread count; runsOn is a string or a
//   function of the thread count.
// - idle() (sync or async), when given, runs after each answer is written and before the next
//   request is read: work that need not delay an answer (releasing what the runtime no longer
//   needs) then overlaps mm's judging of it.
// - What JavaScript writes to stdout (console.log, process.stdout) goes to stderr: the protocol
//   keeps stdout. Native code writing to fd 1 itself would break the frames.
// - The operators of MatMul's family beyond MatMul (protocol 2: Gemm, MatMulInteger,
//   QLinearMatMul) are declared in `operators`: per name, a string (why it is refused) or
//   {compute, types, refused, versions}; an operator not named is refused ("the driver declares
//   MatMul only"). `types` is keyed by mm's description of the element types: 'float' (Gemm's T),
//   'uint8 x int8 -> int32' (MatMulInteger), 'uint8 x int8 -> uint8, float scales'
//   (QLinearMatMul), each with its accumulation as for `dtypes` ('int32' for the integer
//   operators); `versions` the versions it computes (every one when absent). compute(problem)
//   (sync or async) gets {op, version, inputs, attributes, y: {dtype, shape}, out}: inputs by ONNX
//   name ({A, B, C} or {A, B, a_zero_point, ...}; int8 as Int8Array, uint8 as Uint8Array), Gemm's
//   attributes {transA, transB, alpha, beta} (broadcast too for versions 1 and 6), and returns Y
//   as matmul does.
'use strict';

const fs = require('fs');

// The newest protocol version this module speaks; it answers mm's hello in the older of mm's and
// its own (an mm of version 1 gets a version 1 hello: MatMul only).
const PROTOCOL = 2;

// mm's dtype names and the typed array that holds each (float16, bfloat16: their bits).
const ARRAYS = {
  float: Float32Array,
  double: Float64Array,
  float16: Uint16Array,
  bfloat16: Uint16Array,
  int32: Int32Array,
  int64: BigInt64Array,
  uint32: Uint32Array,
  uint64: BigUint64Array,
};

// The element types of the family's operators: MatMul's and int8, uint8.
const ELEMENT_ARRAYS = {...ARRAYS, int8: Int8Array, uint8: Uint8Array};
// The operators of MatMul's family a driver may declare beside MatMul.
const FAMILY = ['Gemm', 'MatMulInteger', 'QLinearMatMul'];
// Why an operator a driver does not name is refused.
const MATMUL_ONLY = 'the driver declares MatMul only';

class ProtocolError extends Error {}

function elements(shape) {
  return shape.reduce((n, d) => n * d, 1);
}

// One declaration of an arithmetic: 'float' or {accumulation, flushesSubnormals, conversion,
// source}; `source` (what the runtime documents about it, and where) is for whoever reads the
// hello: mm does not judge by it.
function entry(arithmetic) {
  if (typeof arithmetic === 'string') arithmetic = {accumulation: arithmetic};
  const declared = {
    accumulation: arithmetic.accumulation,
    flushes_subnormals: Boolean(arithmetic.flushesSubnormals),
  };
  if (arithmetic.conversion) declared.conversion = arithmetic.conversion;
  if (arithmetic.source) declared.source = String(arithmetic.source);
  return declared;
}

// The hello's per-dtype declarations: every mm dtype, supported, refused or undeclared.
function declarations(driver) {
  const declared = {};
  for (const name of Object.keys(ARRAYS)) {
    const refused = (driver.refused || {})[name];
    const arithmetic = (driver.dtypes || {})[name];
    if (refused !== undefined) {
      declared[name] = {refused: String(refused)};
    } else if (arithmetic !== undefined) {
      declared[name] = entry(arithmetic);
    } else {
      declared[name] = {refused: 'not declared by the driver'};
    }
  }
  return declared;
}

// The hello's per-operator declarations: every operator of the family, declared or refused.
function operatorDeclarations(driver) {
  const operators = driver.operators || {};
  const declared = {};
  for (const name of [...FAMILY, ...Object.keys(operators).filter((n) => !FAMILY.includes(n))]) {
    const operator = operators[name] === undefined ? MATMUL_ONLY : operators[name];
    if (typeof operator !== 'object' || operator === null) {
      declared[name] = {refused: String(operator)};
      continue;
    }
    const types = {};
    for (const [key, arithmetic] of Object.entries(operator.types || {})) {
      types[key] = entry(arithmetic);
    }
    for (const [key, why] of Object.entries(operator.refused || {})) {
      types[key] = {refused: String(why)};
    }
    declared[name] = {types};
    if (operator.versions) declared[name].versions = operator.versions.slice();
  }
  return declared;
}

// The hello header answering mm's `request`; runs the driver's setup with mm's threads first.
async function hello(driver, request) {
  const threads = Number(request.threads || 1);
  if (driver.setup) await driver.setup(threads);
  const runsOn = typeof driver.runsOn === 'function' ? driver.runsOn(threads) : driver.runsOn;
  const protocol = Math.min(PROTOCOL, Number(request.protocol || 1));
  const header = {
    type: 'hello',
    protocol,
    runtime: driver.runtime,
    version: driver.version,
    runs_on: runsOn || '',
    dtypes: declarations(driver),
  };
  if (protocol >= 2) header.operators = operatorDeclarations(driver);
  return header;
}

// The tensors of `specs` ({dtype, shape}) back to back in `data` (a Buffer, exactly their bytes),
// copied where a typed array needs alignment.
function tensors(specs, data) {
  const arrays = specs.map((spec) => {
    const Array = ELEMENT_ARRAYS[spec.dtype];
    if (!Array) throw new ProtocolError(`unknown dtype ${JSON.stringify(spec.dtype)}`);
    return Array;
  });
  const counts = specs.map((spec) => elements(spec.shape));
  const total = counts.reduce((sum, n, i) => sum + n * arrays[i].BYTES_PER_ELEMENT, 0);
  if (total !== data.length) {
    throw new ProtocolError(`${data.length} data bytes for ${total} in ${specs.length} tensors`);
  }
  let offset = 0;
  return specs.map((spec, i) => {
    const Array = arrays[i];
    const bytes = counts[i] * Array.BYTES_PER_ELEMENT;
    const start = data.byteOffset + offset;
    offset += bytes;
    const buffer =
      start % Array.BYTES_PER_ELEMENT === 0
        ? data.buffer
        : data.buffer.slice(start, start + bytes);
    const at = buffer === data.buffer ? start : 0;
    return {dtype: spec.dtype, shape: spec.shape.slice(), data: new Array(buffer, at, counts[i])};
  });
}

// A, B and Y of a matmul request as tensors over `data`.
function operands(request, data) {
  if (!ARRAYS[request.dtype]) {
    throw new ProtocolError(`unknown dtype ${JSON.stringify(request.dtype)}`);
  }
  const shapes = [request.a, request.b, request.y];
  return tensors(shapes.map((shape) => ({dtype: request.dtype, shape})), data);
}

// The largest frame header mm accepts (docs/runtime-protocol.md): a longer one is refused whole.
const MAX_HEADER_BYTES = 64 * 1024;

// `header` as it is when its JSON fits MAX_HEADER_BYTES; else with its text `key` (an
// exception's message, say) cut between characters and ended by a marker saying its whole length,
// so that the cut header fits.
function fitHeader(header, key) {
  const bytes = (h) => Buffer.byteLength(JSON.stringify(h), 'utf8');
  if (bytes(header) <= MAX_HEADER_BYTES) return header;
  const whole = String(header[key]);
  const characters = Array.from(whole).length;
  const marker = ` [... cut to fit mm's 64 KiB frame header; ${characters} characters in all]`;
  const cut = (n) => ({...header, [key]: whole.slice(0, n) + marker});
  // The longest prefix that fits. It never ends inside a surrogate pair (which would not be
  // UTF-8): a lone half is escaped in 6 bytes, the whole pair is 4, so the prefix one unit longer
  // fits too and the search goes past it.
  let low = 0;
  let high = whole.length;
  while (low < high) {
    const middle = Math.ceil((low + high) / 2);
    if (bytes(cut(middle)) <= MAX_HEADER_BYTES) low = middle;
    else high = middle - 1;
  }
  return cut(low);
}

// The refusal or error an exception becomes by the driver's rules.
function refusalOrError(driver, id, e) {
  const text = e instanceof Error ? `${e.name}: ${e.message}` : `Error: ${String(e)}`;
  for (const [match, what] of driver.rules || []) {
    const isClass = match === Error || (match && match.prototype instanceof Error);
    let hit;
    if (match instanceof RegExp) hit = match.test(text);
    else if (isClass) hit = e instanceof match;
    else hit = Boolean(match(e));
    if (hit) {
      return {header: fitHeader({type: 'refused', id, what, why: text}, 'why'),
        data: Buffer.alloc(0)};
    }
  }
  return {header: fitHeader({type: 'error', id, message: text}, 'message'),
    data: Buffer.alloc(0)};
}

// Y's dtype name: the one it says, else the request's when its array is of that dtype.
function dtypeOf(y, requested) {
  if (y.dtype) return y.dtype;
  if (y.data instanceof ELEMENT_ARRAYS[requested]) return requested;
  const found = Object.keys(ELEMENT_ARRAYS).find((n) => y.data instanceof ELEMENT_ARRAYS[n]);
  return found || (y.data && y.data.constructor ? y.data.constructor.name : typeof y.data);
}

// The reply to request `id` whose computation `run` (async) does, giving {result, offered,
// dtype, seconds}: Y (the result, else the offered buffer), or its exception as a refusal or
// error by the driver's rules.
async function reply(driver, id, run) {
  let y;
  let dtype;
  let seconds;
  try {
    const done = await run();
    dtype = done.dtype;
    seconds = done.seconds;
    const result = done.result;
    if (result && typeof result.seconds === 'number') seconds = result.seconds;
    y = result === undefined || result === null ? done.offered : result;
    if (!y || !y.data || !ArrayBuffer.isView(y.data) || !Array.isArray(y.shape)) {
      throw new TypeError('the driver returned no {data: typed array, shape: array}');
    }
  } catch (e) {
    return refusalOrError(driver, id, e);
  }
  const header = {type: 'y', id, dtype: dtypeOf(y, dtype), shape: y.shape.map(Number), seconds};
  return {header, data: Buffer.from(y.data.buffer, y.data.byteOffset, y.data.byteLength)};
}

// The time of `call` (async) in seconds, with its result.
async function timed(call) {
  const start = process.hrtime.bigint();
  const result = await call();
  return {result, seconds: Number(process.hrtime.bigint() - start) / 1e9};
}

// The reply to one matmul request: {header, data}.
async function answer(driver, request, data) {
  return reply(driver, request.id || 0, async () => {
    const [a, b, offered] = operands(request, data);
    const out = driver.acceptsOut === false ? null : offered;
    const {result, seconds} = await timed(() => driver.matmul(a, b, out, request.dtype));
    return {result, offered, dtype: request.dtype, seconds};
  });
}

// The problem of an operator request: {op, version, inputs (by name), attributes, y, out}.
function problemOf(request, data, acceptsOut = true) {
  const specs = [...request.inputs, request.y];
  const all = tensors(specs, data);
  const inputs = {};
  request.inputs.forEach((spec, i) => { inputs[spec.name] = all[i]; });
  return {
    op: request.op,
    version: Number(request.version),
    inputs,
    attributes: {...(request.attributes || {})},
    y: {dtype: request.y.dtype, shape: request.y.shape.slice()},
    out: acceptsOut ? all[all.length - 1] : null,
    offered: all[all.length - 1],
  };
}

// The reply to one operator request (Gemm, MatMulInteger, QLinearMatMul): {header, data},
// computed by the driver's operator of that name.
async function answerOperator(driver, request, data) {
  return reply(driver, request.id || 0, async () => {
    const operator = (driver.operators || {})[request.op];
    if (typeof operator !== 'object' || operator === null) {
      const named = JSON.stringify(request.op);
      throw new ProtocolError(`operator ${named} is not declared by the driver`);
    }
    const problem = problemOf(request, data, driver.acceptsOut !== false);
    const {result, seconds} = await timed(() => operator.compute(problem));
    return {result, offered: problem.offered, dtype: problem.y.dtype, seconds};
  });
}

// The largest data a frame is copied with into one write.
const SMALL_FRAME_BYTES = 64 * 1024;

// Blocking frame I/O on two file descriptors (stdin and stdout are one socket).
class Channel {
  constructor(readFd, writeFd) {
    this.readFd = readFd;
    this.writeFd = writeFd;
    this.pause = new Int32Array(new SharedArrayBuffer(4));
  }

  // Retries what a non-blocking descriptor defers, pausing a millisecond.
  retry(call) {
    for (;;) {
      try {
        return call();
      } catch (e) {
        if (e.code !== 'EAGAIN' && e.code !== 'EINTR') throw e;
        Atomics.wait(this.pause, 0, 0, 1);
      }
    }
  }

  // `n` bytes, or null at the end of the input.
  readExact(n) {
    const buffer = Buffer.allocUnsafe(n);
    let got = 0;
    while (got < n) {
      const k = this.retry(() => fs.readSync(this.readFd, buffer, got, n - got, null));
      if (k === 0) return null;
      got += k;
    }
    return buffer;
  }

  // The next {header, data}, or null at the end of stdin.
  read() {
    const prefix = this.readExact(8);
    if (prefix === null) return null;
    const header = this.readExact(prefix.readUInt32LE(0));
    const data = this.readExact(prefix.readUInt32LE(4));
    if (header === null || data === null) return null;
    return {header: JSON.parse(header.toString('utf8')), data};
  }

  // One write for a small frame (each write may wake mm), two for a large one (no copy of Y).
  write(header, data = Buffer.alloc(0)) {
    const text = Buffer.from(JSON.stringify(header), 'utf8');
    const prefix = Buffer.alloc(8);
    prefix.writeUInt32LE(text.length, 0);
    prefix.writeUInt32LE(data.length, 4);
    if (data.length <= SMALL_FRAME_BYTES) {
      this.writeAll(Buffer.concat([prefix, text, data]));
      return;
    }
    this.writeAll(Buffer.concat([prefix, text]));
    this.writeAll(data);
  }

  writeAll(bytes) {
    let done = 0;
    while (done < bytes.length) {
      done += this.retry(() => fs.writeSync(this.writeFd, bytes, done, bytes.length - done));
    }
  }
}

// JavaScript's stdout (console.log, process.stdout) becomes stderr: the frames own fd 1.
function keepStdout() {
  Object.defineProperty(process, 'stdout', {configurable: true, get: () => process.stderr});
  for (const level of ['log', 'info', 'debug']) console[level] = console.error;
}

// Answers mm until stdin ends.
async function serve(driver, readFd = 0, writeFd = 1) {
  if (writeFd === 1) keepStdout();
  const channel = new Channel(readFd, writeFd);
  const first = channel.read();
  if (first === null) return;
  channel.write(await hello(driver, first.header));
  for (;;) {
    const message = channel.read();
    if (message === null) return;
    const {header, data} = message;
    let answered;
    if (header.type === 'matmul') {
      answered = await answer(driver, header, data);
    } else if (header.type === 'operator') {
      answered = await answerOperator(driver, header, data);
    } else {
      answered = {header: {type: 'error', id: header.id || 0, message: 'unknown request'}};
    }
    channel.write(answered.header, answered.data);
    if (driver.idle) await driver.idle();
  }
}

module.exports = {
  PROTOCOL, MAX_HEADER_BYTES, ARRAYS, ELEMENT_ARRAYS, FAMILY, MATMUL_ONLY, ProtocolError, elements,
  hello, answer, answerOperator, problemOf, serve, Channel, fitHeader,
};
