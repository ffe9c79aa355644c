// The one description of a conformance Result's fields: their names in the JSON report, their
// order and how each is written. The JSON writers, the JSON reader and the workers' wire codec
// (result_json.cc, worker_protocol.cc) are visitors of these lists, so a new field is one line
// here plus the member in runner.h.
//
// A visitor has one method per kind of field; each takes the JSON key, then the member (const for
// writers, mutable for readers):
//   Text(key, s)                 a string
//   NullableText(key, s)         a string; empty is null in JSON
//   OmittedText(key, s)          a string; empty is left out of JSON
//   OpName(key, s)               the operator's name; read: one of family::kAllOps, "MatMul"
//                                when absent (a report from before the field)
//   Integer(key, i, presence)    an int64 (kOptional: an older report may lack it)
//   NullableInteger(key, i)      an int64; negative is null in JSON (read: absent or null is -1)
//   Real(key, d)                 a double; "nan", "inf", "-inf" in JSON
//   RealOfText(key, d, text)     a double; read from `text` when an older report lacks it
//   Boolean(key, b)
//   Index(key, dims)             an array of int64
//   TypeName(key, dtype)         DTypeName, or null without a dtype
//   Shape(key, dims, dtype)      DimsToString, or null without a dtype (then not read)
//   VerdictName(key, verdict)
//   Derived(key, value)          a figure computed from other fields (null without one): written
//                                to JSON for readers of the report, never read or sent
//   Object(key, optional)        a nested Comparison, BoundCheck or CallResources; null when empty
//   Worst(key, optional, centre, radius)  a WorstElement, left out when empty, its centre and
//                                radius named by the enclosing record
#ifndef MM_CONFORMANCE_RESULTS_RESULT_SCHEMA_H_
#define MM_CONFORMANCE_RESULTS_RESULT_SCHEMA_H_

#include <optional>
#include <string>

#include "mm/conformance/judging/compare.h"
#include "mm/conformance/judging/resources.h"
#include "mm/conformance/judging/result.h"

namespace mm::conformance::schema {

// Whether a reader requires a field.
enum class Presence { kRequired, kOptional };

// The fields of a WorstElement, its centre and radius named `centre` and `radius` ("expected" and
// "allowed" for ONNX's tolerance, "exact" and "bound" for the error bound).
template <class W, class V>
void VisitFields(W& w, V& v, const char* centre, const char* radius) {
  v.Index("index", w.index);
  v.Integer("flat_index", w.flat_index, Presence::kRequired);
  v.Text(centre, w.expected);
  v.Text("actual", w.actual);
  v.RealOfText(std::string(centre) + "_value", w.expected_value, w.expected);
  v.RealOfText("actual_value", w.actual_value, w.actual);
  v.Real("abs_error", w.abs_error);
  v.Real("rel_error", w.rel_error);
  v.Real(radius, w.allowed);
}

// The fields of a Comparison (`C` is Comparison or const Comparison).
template <class C, class V>
requires std::is_same_v<std::remove_const_t<C>, Comparison>
void VisitFields(C& c, V& v) {
  v.Boolean("match", c.match);
  v.Integer("elements", c.elements, Presence::kRequired);
  v.Integer("differing", c.differing, Presence::kRequired);
  v.Boolean("bitwise_equal", c.bitwise_equal);
  v.Real("max_abs_error", c.max_abs_error);
  v.Real("max_rel_error", c.max_rel_error);
  v.OmittedText("mismatch", c.mismatch);
  v.Worst("worst", c.worst, "expected", "allowed");
}

// The fields of a BoundCheck.
template <class B, class V>
requires std::is_same_v<std::remove_const_t<B>, BoundCheck>
void VisitFields(B& b, V& v) {
  v.Integer("elements", b.elements, Presence::kRequired);
  v.Integer("outside", b.outside, Presence::kRequired);
  v.Integer("unbounded", b.unbounded, Presence::kRequired);
  v.Worst("worst", b.worst, "exact", "bound");
}

// The fields of a CallResources.
template <class R, class V>
requires std::is_same_v<std::remove_const_t<R>, CallResources>
void VisitFields(R& r, V& v) {
  v.Integer("process", r.process, Presence::kRequired);
  v.Integer("call", r.call, Presence::kRequired);
  v.Integer("rss_bytes", r.rss_bytes, Presence::kRequired);
  v.Integer("rss_growth_bytes", r.rss_growth_bytes, Presence::kRequired);
  v.Integer("fds", r.fds, Presence::kRequired);
  v.Integer("fd_growth", r.fd_growth, Presence::kRequired);
  v.Integer("threads", r.threads, Presence::kRequired);
  v.Integer("thread_growth", r.thread_growth, Presence::kRequired);
  v.NullableInteger("spinning_threads", r.spinning_threads);
}

// ONNX's errors of a result judged against its expected output, for the report's top level: set
// when the comparison got as far as the elements (no dtype or shape mismatch). A family result's
// comparison holds counts only (conformance/running/family_runner.cc): none.
inline std::optional<double> ExpectedError(const Result& r, double Comparison::*figure) {
  if (!r.vs_expected || !r.vs_expected->mismatch.empty() || r.op != "MatMul") return std::nullopt;
  return (*r.vs_expected).*figure;
}

// The fields of a Result, in the JSON report's order.
template <class R, class V>
requires std::is_same_v<std::remove_const_t<R>, Result>
void VisitFields(R& r, V& v) {
  v.Text("case", r.case_name);
  v.Integer("case_index", r.case_index, Presence::kOptional);
  v.Text("source", r.source);
  v.NullableText("data_set", r.data_set);
  v.Text("backend", r.backend);
  v.OpName("op", r.op);
  v.TypeName("dtype", r.dtype);
  v.Shape("a_shape", r.a_dims, r.dtype);
  v.Shape("b_shape", r.b_dims, r.dtype);
  v.VerdictName("verdict", r.verdict);
  v.Text("message", r.message);
  v.NullableText("support_note", r.support_note);
  v.NullableText("expectation", r.expectation);
  v.NullableText("implementation", r.implementation);
  v.NullableText("data_suspect", r.data_suspect);
  v.Real("seconds", r.seconds);
  v.Derived("max_abs_error", ExpectedError(r, &Comparison::max_abs_error));
  v.Derived("max_rel_error", ExpectedError(r, &Comparison::max_rel_error));
  v.Object("vs_expected", r.vs_expected);
  v.Object("vs_bound", r.vs_bound);
  v.Text("vs_reference", r.vs_reference);
  v.Object("vs_reference_detail", r.vs_reference_comparison);
  v.Object("resources", r.resources);
}

}  // namespace mm::conformance::schema

#endif  // MM_CONFORMANCE_RESULTS_RESULT_SCHEMA_H_
