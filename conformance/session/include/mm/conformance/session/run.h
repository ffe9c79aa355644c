// A run: every selected case on every selected backend, in this process or in worker processes
// (conformance/isolation), its results handed on in catalog order with the run's expectations
// applied. One case's execution and judgement is conformance/running/runner.h's.
#ifndef MM_CONFORMANCE_SESSION_RUN_H_
#define MM_CONFORMANCE_SESSION_RUN_H_

#include <cstdint>
#include <map>
#include <vector>

#include "mm/conformance/judging/result.h"
#include "mm/conformance/loader/catalog.h"
#include "mm/conformance/running/runner.h"
#include "mm/engine/registry.h"

namespace mm::conformance {

// Results given by case index (std::multimap: several per case, in order), such as the ERRORs of
// an outputs tree's files that no case reads (ExtraOutputResults,
// conformance/running/outputs_backend.h).
using ExtraResults = std::multimap<std::int64_t, Result>;

// Runs `cases` (in catalog order) like RunConformance, handing each result to `sink` as soon as it
// and every result before it are finished, so a run keeps only the cases in flight in memory.
// Each of `extras` is given after the last result of its case (before the first of a later case,
// or at the end of a finished run). Every result, extras included, has options.expectations
// applied once, here (ApplyExpectation), in-process and isolated alike.
// Returns false when options.stop ended the run early (the results given are then exactly those
// finished: cases in flight give the results they had finished; extras not given are dropped).
bool RunConformanceStreaming(const Catalog& catalog, const BackendRegistry& registry,
                             const RunOptions& options, const std::vector<CaseStart>& cases,
                             ResultSink& sink, ExtraResults extras = {});

// Runs every case of `catalog` in `options.shard` on every backend of `options`, and returns one
// Result per (case, data set, backend) in catalog order, then data set, then backend order,
// whatever `jobs` is. Tensors are read when their data set runs and released after. Each backend
// is created once per process; a backend that fails to start gives ERROR results. Invalid cases
// give one ERROR result per backend. Never throws: an exception escaping a backend is an ERROR; in
// isolated runs a crash (signal) is an ERROR naming the signal and the backend, and a hang past
// the timeout is an ERROR; all other results are unaffected.
std::vector<Result> RunConformance(const Catalog& catalog, const BackendRegistry& registry,
                                   const RunOptions& options);

}  // namespace mm::conformance

#endif  // MM_CONFORMANCE_SESSION_RUN_H_
