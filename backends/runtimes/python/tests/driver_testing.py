"""What the drivers' tests share: a family Problem as mm sends it, and a driver's answer to it."""

import numpy

import mm_runtime


def problem(op, y_dtype, y_shape, version=13, attributes=None, **inputs):
    """A Problem as mm sends it: inputs read-only, Y's buffer poisoned (0xFF bytes)."""
    for array in inputs.values():
        array.flags.writeable = False
    out = numpy.empty(y_shape, mm_runtime.ELEMENT_DTYPES[y_dtype])
    out.reshape(-1).view(numpy.uint8)[:] = 0xFF
    return mm_runtime.Problem(op, version, inputs, attributes or {}, y_dtype, y_shape, out)


def run(driver, p):
    """`driver`'s Y for problem `p` (its compute writes p.out or returns Y)."""
    result = driver.operators[p.op].compute(p)
    return p.out if result is None else result
