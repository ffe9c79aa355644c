"""The comparison's data for MatMul's family (Gemm, MatMulInteger, QLinearMatMul), beside MatMul's:
mm-fuzz --op per operator over the backends (compare.json's `family.accuracy`), and the arguments
and benchmark filters that make mm-bench time the operators (`--op`, their benchmark names).

The conformance results of the family come from the one mm-conformance run of collect.py, each
naming its operator (compare.sh adds the family's official cases to its data roots).
"""

FAMILY_OPS = ["Gemm", "MatMulInteger", "QLinearMatMul"]
# mm-bench's arguments timing MatMul and every operator of its family in one run.
BENCH_OP_ARGS = [a for op in ["MatMul", *FAMILY_OPS] for a in ("--op", op)]
# The first parts of the benchmark names of MatMul and its family (mm-bench --op).
BENCH_KINDS = "|".join(["matmul", *(op.lower() for op in FAMILY_OPS)])
# Seconds of mm-fuzz per operator (over every backend at once), and its most problems, per mode.
FUZZ = {"quick": {"seconds": 1.0, "cases": 2000}, "full": {"seconds": 20.0, "cases": 1000000}}


def fuzzed_backends(op, backends):
    """(the backends mm-fuzz --op runs, {backend: why not}): every library; a runtime (whose
    driver takes seconds to start) only when mm-bench --mm_describe says it computes some
    description of `op`, else it is left out with its reasons."""
    names, not_fuzzed = [], {}
    for b in backends:
        if "error" in b:
            not_fuzzed[b["name"]] = f"not available: {b['error']}"
            continue
        described = [s for s in b.get("operators") or [] if s.get("op") == op]
        if b.get("runtime") and not any(s.get("level") != "no" for s in described):
            why = "; ".join(dict.fromkeys(str(s.get("note")) for s in described))
            not_fuzzed[b["name"]] = f"refuses {op}: {why or 'mm-bench describes no ' + op}"
            continue
        names.append(b["name"])
    return names, not_fuzzed


def fuzz_operator(run_fuzz, fuzz, out, mode, tool_args, op, backends):
    """One mm-fuzz --op run over the fuzzed backends; when it crashes, one run per backend, so a
    crashing backend (reported with the command) loses only its own figures."""
    settings = FUZZ[mode]
    names, not_fuzzed = fuzzed_backends(op, backends)
    result = {"op": op, "not_fuzzed": not_fuzzed, "crashes": [], "runs": []}
    if not names:
        result["error"] = "no backend to fuzz"
        return result

    def once(selection, seconds):
        args = [*tool_args["fuzz"], "--op", op, *(a for n in selection for a in ("--backend", n))]
        report, run = run_fuzz(fuzz, out, seconds, settings["cases"], args)
        result["runs"].append(run)
        return report, run

    report, run = once(names, settings["seconds"])
    reports = [report] if report is not None else []
    if report is None:
        result["crashes"].append({"backend": ", ".join(names), **_crash(run)})
        for name in names:
            report, run = once([name], settings["seconds"] / len(names))
            if report is None:
                result["crashes"].append({"backend": name, **_crash(run)})
            else:
                reports.append(report)
    result["command"] = result["runs"][0]["command"]
    result["exit_code"] = max(r["exit_code"] for r in result["runs"])
    result["seconds"] = sum(r["seconds"] for r in result["runs"])
    result["reports"] = reports
    return result


def _crash(run):
    return {"error": run.get("error", ""), "command": run["command"]}


def family_accuracy(run_fuzz, merge_fuzz, bin_dir, work, mode, tool_args, backends, progress):
    """compare.json's family.accuracy: per operator, the merged mm-fuzz report ("report"), its
    command, crashes and the backends not fuzzed with why."""
    fuzz = bin_dir / "mm-fuzz"
    if not fuzz.exists():
        return {op: {"error": "mm-fuzz is not in this build"} for op in FAMILY_OPS}
    accuracy = {}
    for op in FAMILY_OPS:
        result = fuzz_operator(run_fuzz, fuzz, work / "fuzz.json", mode, tool_args, op, backends)
        reports = result.pop("reports", [])
        if reports:
            result["report"] = merge_fuzz(reports)
        accuracy[op] = result
        progress.step(op, 1)
    return accuracy
