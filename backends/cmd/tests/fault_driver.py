"""A runtime-protocol driver that misbehaves on request, for mm's tests (cmd_backend_test.cc).

Written against docs/runtime-protocol.md with the standard library only (no SDK, no numpy), so it
also checks that the document suffices. It computes float (float32) 2-D products in Python and
refuses every other dtype at hello. `fault_driver.py FAULT` misbehaves as FAULT says on every
request whose K is 7 (A's last dim) and answers the others correctly, so a test sees the fault
and then a call that works on the driver mm started anew. The faults whose names start with
"hello_" strike at the hello instead, every time the driver starts; "protocol_1" answers mm's
hello in protocol version 1 (a driver of before the family's operators). A second argument "slow"
makes every answer take 20 ms.

Where $MM_TEST_HANG_MARKER names a file, a driver about to hang (a "hang" fault) creates it first,
so a test knows the call is in flight. The faults "hello_hang_after_first" and
"hello_closes_stdout_elsewhere" use the file $MM_TEST_HELLO_MARKER: the first hello creates it with
the process id of the driver's parent and answers; later, the first fault hangs at every hello, the
second closes stdin and stdout and lives on at a hello whose parent is another process (a child
of mm's that asks the backend to describe itself) and answers the others.
"""

import json
import os
import signal
import struct
import sys
import time

FAULT = sys.argv[1] if len(sys.argv) > 1 else "none"
SLOW = sys.argv[2:3] == ["slow"]
DTYPES = ["double", "float16", "bfloat16", "int32", "int64", "uint32", "uint64"]


def read_exact(n):
    data = b""
    while len(data) < n:
        chunk = os.read(0, n - len(data))
        if not chunk:
            sys.exit(0)
        data += chunk
    return data


def read_frame():
    header_bytes, data_bytes = struct.unpack("<II", read_exact(8))
    return json.loads(read_exact(header_bytes)), read_exact(data_bytes)


def write_frame(header, data=b""):
    text = json.dumps(header).encode()
    os.write(1, struct.pack("<II", len(text), len(data)) + text + data)


def leave_process(detach, keep_socket):
    """Forks a process that sleeps and outlives this driver unless mm ends it: a helper (a pool, a
    server) in the driver's process group, or with `detach` a daemon in a session of its own; it
    holds the driver's stdin and stdout only with `keep_socket`."""
    if os.fork() != 0:
        return
    if detach:
        os.setsid()
    if not keep_socket:
        os.close(0)
        os.close(1)
    time.sleep(1000)
    os._exit(0)


def announce_hang():
    """Creates $MM_TEST_HANG_MARKER (when set): this driver is about to hang."""
    marker = os.environ.get("MM_TEST_HANG_MARKER")
    if marker:
        with open(marker, "w") as file:
            file.write("%d\n" % os.getpid())


def first_hello_parent():
    """The process id of the parent at the first hello of this test's drivers (the file
    $MM_TEST_HELLO_MARKER holds it), or None when this is that first hello (recorded now)."""
    marker = os.environ["MM_TEST_HELLO_MARKER"]
    if not os.path.exists(marker):
        with open(marker, "w") as file:
            file.write("%d\n" % os.getppid())
        return None
    with open(marker) as file:
        return int(file.read())


def close_stdio_and_sleep():
    """Lives on without stdin and stdout (a runtime that closes "unused" descriptors)."""
    os.close(0)
    os.close(1)
    time.sleep(1000)


def hello(request):
    declared = {"float": {"accumulation": "double"}}
    for name in DTYPES:
        declared[name] = {"refused": "this test driver computes float only"}
    # "bad_hello" speaks a version no mm speaks; "protocol_1" the first (MatMul only), whatever mm
    # speaks; the others answer in mm's version.
    protocol = {"bad_hello": 99, "protocol_1": 1}.get(FAULT, request["protocol"])
    if FAULT == "hello_crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif FAULT == "hello_closes_stdout":
        close_stdio_and_sleep()
    elif FAULT == "hello_hang":
        announce_hang()
        time.sleep(1000)
    elif FAULT == "hello_hang_after_first":
        if first_hello_parent() is not None:
            announce_hang()
            time.sleep(1000)
    elif FAULT == "hello_closes_stdout_elsewhere":
        parent = first_hello_parent()
        if parent is not None and parent != os.getppid():
            announce_hang()
            close_stdio_and_sleep()
    elif FAULT == "hello_leaves_helper":
        leave_process(detach=False, keep_socket=False)
    elif FAULT == "hello_leaves_daemon":
        leave_process(detach=True, keep_socket=False)
    write_frame(
        {
            "type": "hello",
            "protocol": protocol,
            "runtime": "fault",
            "version": "1",
            "dtypes": declared,
        }
    )


def product(request, data):
    m, k = request["a"]
    n = request["b"][1]
    a = struct.unpack("<%df" % (m * k), data[: 4 * m * k])
    b = struct.unpack("<%df" % (k * n), data[4 * m * k : 4 * (m * k + k * n)])
    y = [sum(a[i * k + p] * b[p * n + j] for p in range(k)) for i in range(m) for j in range(n)]
    return struct.pack("<%df" % len(y), *y)


def misbehave(request, y):
    rid = request["id"]
    answer = {"type": "y", "id": rid, "dtype": "float", "shape": request["y"]}
    if FAULT == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif FAULT == "exit":
        sys.exit(3)
    elif FAULT == "hang":
        announce_hang()
        time.sleep(1000)
    elif FAULT == "closes_stdout":
        close_stdio_and_sleep()
    elif FAULT == "hang_holding_socket":
        # A daemon that holds the socket, then a hang: mm's timeout kills the driver's group.
        leave_process(detach=True, keep_socket=True)
        time.sleep(1000)
    elif FAULT == "truncated":
        text = json.dumps(answer).encode()
        os.write(1, struct.pack("<II", len(text), len(y)) + text + y[: len(y) // 2])
        sys.exit(0)
    elif FAULT == "huge_header":
        os.write(1, struct.pack("<II", 0x7FFFFFFF, 0))
    elif FAULT == "wrong_shape":
        write_frame(dict(answer, shape=[len(y) // 4]), y)
    elif FAULT == "wrong_dtype":
        write_frame(dict(answer, dtype="double"), y)
    elif FAULT == "wrong_id":
        write_frame(dict(answer, id=rid + 1), y)
    elif FAULT == "refuse_shape":
        write_frame({"type": "refused", "id": rid, "what": "shape", "why": "K = 7 is unlucky"})
    elif FAULT == "error":
        write_frame({"type": "error", "id": rid, "message": "out of luck: K = 7"})
    elif FAULT == "print":
        os.write(1, b"hello from the runtime\n")
        write_frame(answer, y)
    elif FAULT == "extra":
        text = json.dumps(answer).encode()
        frame = struct.pack("<II", len(text), len(y)) + text + y
        os.write(1, frame + frame)
    elif FAULT == "memory":
        # Slowly enough for mm's sampling to see it pass the limit before RLIMIT_DATA stops it.
        hogs = []
        for _ in range(50):
            hogs.append(b"\x01" * (20 << 20))  # Written whole, so resident at once.
            time.sleep(0.05)
        time.sleep(1000)
    elif FAULT == "stderr":
        sys.stderr.write("x" * 200000 + "\n")
        sys.stderr.flush()
        write_frame(answer, y)
    else:
        write_frame(answer, y)


def main():
    request, _ = read_frame()
    hello(request)
    while True:
        request, data = read_frame()
        y = product(request, data)
        if request["a"][-1] == 7:
            if FAULT == "huge_data":
                text = json.dumps(
                    {"type": "y", "id": request["id"], "dtype": "float", "shape": request["y"]}
                ).encode()
                os.write(1, struct.pack("<II", len(text), 0xFFFFFFF0) + text)
                continue
            misbehave(request, y)
        else:
            if SLOW:
                time.sleep(0.02)
            sys.stderr.write("answered request %d\n" % request["id"])
            write_frame(
                {"type": "y", "id": request["id"], "dtype": "float", "shape": request["y"]}, y
            )


if __name__ == "__main__":
    main()
