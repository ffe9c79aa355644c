// The wire form of an isolated run's messages: whatever a worker sends, the parent reads back
// equal, and bytes that were cut short or garbled are refused, never trusted and never a crash.
#include "mm/conformance/isolation/worker_protocol.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "mm/conformance/loader/catalog.h"
#include "mm/conformance/results/result_json.h"
#include "onnx_fixtures.h"

namespace mm::conformance {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// A NaN with a payload of its own and a sign: the wire keeps bits, not just "nan".
double OddNan() { return std::bit_cast<double>(std::uint64_t{0xfff8'0000'dead'beefULL}); }

// A result with every field set to something other than its default, optional parts included.
Result EveryFieldSet() {
  Result r;
  r.case_name = "test_mm_fuzz_s1_float_70228";
  r.case_index = 123456789012LL;
  r.source = "/data/corpus";
  r.data_set = "test_data_set_3";
  r.backend = "openblas";
  r.op = "QLinearMatMul";   // Not the default: a codec that drops the field loses it.
  r.dtype = DType::kUInt8;  // The last element type: a codec that clips the enum loses it.
  r.a_dims = {1LL << 40, 0, 3};
  r.b_dims = {3};
  r.verdict = Verdict::kImprecise;
  r.message = std::string("a NUL \0 inside, and bad \xFF bytes", 32);
  r.support_note = "f16 via f32";
  r.implementation = "OpenBLAS sgemm_ (Y^T = B^T A^T)";
  r.expectation = "known (https://example.org/1)";
  r.seconds = 1.25e-6;
  Comparison c;
  c.match = true;
  c.mismatch = "shape [2,3] against [3,2]";
  c.elements = 6;
  c.differing = 1;
  c.bitwise_equal = true;
  c.max_abs_error = kInfinity;
  c.max_rel_error = OddNan();
  c.worst = WorstElement{3, {1, 1}, "nan", "1.5", OddNan(), -0.0, kInfinity, 0.1, 2e-300};
  r.vs_expected = c;
  BoundCheck bound;
  bound.elements = 6;
  bound.outside = 4;
  bound.unbounded = 2;
  bound.worst = WorstElement{5, {1, 2}, "0.25", "0.2500001", 0.25, 0.2500001, 1e-7, 4e-7, 3e-6};
  r.vs_bound = bound;
  r.vs_reference = "differs: 1 of 6";
  c.match = false;
  c.differing = 2;
  c.worst.reset();
  r.vs_reference_comparison = c;
  r.resources = CallResources{.process = 4242,
                              .call = 17,
                              .rss_bytes = 3LL << 33,  // Past 32 bits.
                              .rss_growth_bytes = -(1LL << 20),
                              .fds = 12,
                              .fd_growth = -1,
                              .threads = 9,
                              .thread_growth = 2,
                              .spinning_threads = 1};
  return r;
}

std::string Encoded(const Result& r) {
  std::string bytes;
  WireWriter out(bytes);
  EncodeResult(r, out);
  return bytes;
}

// Every field the reports show, as text (NaN payloads aside, which the next checks hold).
std::string Shown(const Result& r) {
  return ResultToJson(r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

TEST(WorkerProtocolTest, EveryFieldOfAResultReadsBackEqualBitForBit) {
  const Result r = EveryFieldSet();
  const std::string bytes = Encoded(r);
  WireReader in(bytes);
  Result back;
  ASSERT_TRUE(DecodeResult(in, back));
  EXPECT_TRUE(in.at_end());
  EXPECT_EQ(Shown(back), Shown(r));
  EXPECT_EQ(back.message, r.message);  // The NUL and the invalid byte, unreplaced.
  EXPECT_EQ(back.dtype, DType::kUInt8);
  EXPECT_EQ(back.op, "QLinearMatMul");
  EXPECT_EQ(back.a_dims, r.a_dims);
  EXPECT_EQ(back.verdict, Verdict::kImprecise);
  ASSERT_TRUE(back.vs_expected && back.vs_expected->worst);
  EXPECT_EQ(std::bit_cast<std::uint64_t>(back.vs_expected->max_rel_error),
            std::bit_cast<std::uint64_t>(OddNan()));
  EXPECT_TRUE(std::signbit(back.vs_expected->worst->actual_value));
  EXPECT_EQ(back.vs_expected->worst->allowed, 2e-300);
  EXPECT_TRUE(back.vs_expected->match);
  EXPECT_TRUE(back.vs_expected->bitwise_equal);
  ASSERT_TRUE(back.vs_reference_comparison);
  EXPECT_FALSE(back.vs_reference_comparison->match);
  EXPECT_FALSE(back.vs_reference_comparison->worst.has_value());
  ASSERT_TRUE(back.vs_bound && back.vs_bound->worst);
  EXPECT_EQ(back.vs_bound->outside, 4);
  EXPECT_EQ(back.vs_bound->worst->index, (Dims{1, 2}));
  ASSERT_TRUE(back.resources);
  EXPECT_EQ(back.resources->rss_bytes, 3LL << 33);
  EXPECT_EQ(back.resources->rss_growth_bytes, -(1LL << 20));
  EXPECT_EQ(back.resources->spinning_threads, 1);
}

TEST(WorkerProtocolTest, AResultWithNothingOptionalReadsBackWithNothingOptional) {
  Result r;  // An ERROR with no dtype, no comparison, no bound: a case that could not be read.
  r.case_name = "test_bad";
  r.message = "model.onnx: not a protobuf";
  const std::string bytes = Encoded(r);
  WireReader in(bytes);
  Result back = EveryFieldSet();  // Decoding must clear what the target held.
  ASSERT_TRUE(DecodeResult(in, back));
  EXPECT_EQ(Shown(back), Shown(r));
  EXPECT_FALSE(back.dtype.has_value());
  EXPECT_FALSE(back.vs_expected.has_value());
  EXPECT_FALSE(back.vs_bound.has_value());
  EXPECT_FALSE(back.vs_reference_comparison.has_value());
  EXPECT_FALSE(back.resources.has_value());
}

TEST(WorkerProtocolTest, EveryTruncationOfAResultIsRefused) {
  const std::string bytes = Encoded(EveryFieldSet());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    WireReader in(std::string_view(bytes).substr(0, n));
    Result back;
    EXPECT_FALSE(DecodeResult(in, back)) << "decoded from the first " << n << " bytes";
  }
}

TEST(WorkerProtocolTest, AVerdictOrDTypeThatDoesNotExistIsRefused) {
  const Result r = EveryFieldSet();
  const std::string bytes = Encoded(r);
  // Where the dtype byte is: after the strings and the case index that come first.
  const std::size_t dtype_at = 4 + r.case_name.size() + 8 + 4 + r.source.size() + 4 +
                               r.data_set.size() + 4 + r.backend.size() + 4 + r.op.size();
  ASSERT_EQ(bytes[dtype_at], static_cast<char>(DType::kUInt8));
  std::string bad_dtype = bytes;
  bad_dtype[dtype_at] = static_cast<char>(kAllElementTypes.size());
  Result back;
  WireReader dtype_in(bad_dtype);
  EXPECT_FALSE(DecodeResult(dtype_in, back));
  const std::size_t verdict_at =
      dtype_at + 1 + 8 * (1 + r.a_dims.size()) + 8 * (1 + r.b_dims.size());
  ASSERT_EQ(bytes[verdict_at], static_cast<char>(Verdict::kImprecise));
  std::string bad_verdict = bytes;
  bad_verdict[verdict_at] = static_cast<char>(kAllVerdicts.size());
  WireReader verdict_in(bad_verdict);
  EXPECT_FALSE(DecodeResult(verdict_in, back));
}

TEST(WorkerProtocolTest, AHugeCountIsRefusedWithoutSizingAnAllocation) {
  std::string bytes;
  WireWriter out(bytes);
  out.U64(std::uint64_t{1} << 60);  // 2^60 dims, in a payload of 8 bytes.
  WireReader in(bytes);
  EXPECT_TRUE(in.DimsOf().empty());
  EXPECT_FALSE(in.ok());
  EXPECT_FALSE(DecodeStrings(bytes).has_value());
}

TEST(WorkerProtocolTest, TasksStagesAndStringListsReadBackAndRefuseTrailingBytes) {
  TaskMessage task;
  task.case_index = 987654;
  task.from = {2, 5, "n/a (reference crashed: SIGSEGV (signal 11))"};
  const std::optional<TaskMessage> task_back = DecodeTask(EncodeTask(task));
  ASSERT_TRUE(task_back.has_value());
  EXPECT_EQ(task_back->case_index, 987654u);
  EXPECT_EQ(task_back->from.data_set, 2u);
  EXPECT_EQ(task_back->from.backend, 5u);
  EXPECT_EQ(task_back->from.reference_missing, task.from.reference_missing);
  EXPECT_FALSE(DecodeTask(EncodeTask(task) + "x").has_value());

  const Result about = EveryFieldSet();
  const std::string stage = EncodeStage(CaseEvents::Stage::kReference, task.from, about);
  const std::optional<StageMessage> stage_back = DecodeStage(stage);
  ASSERT_TRUE(stage_back.has_value());
  EXPECT_EQ(stage_back->stage, CaseEvents::Stage::kReference);
  EXPECT_EQ(stage_back->at.backend, 5u);
  EXPECT_EQ(Shown(stage_back->about), Shown(about));
  EXPECT_FALSE(DecodeStage(stage + "x").has_value());
  std::string bad_stage = stage;
  bad_stage[0] = 3;  // Past kBackend.
  EXPECT_FALSE(DecodeStage(bad_stage).has_value());

  const std::vector<std::string> strings = {"oneDNN 2.6.3", "", "failed to start: no"};
  EXPECT_EQ(DecodeStrings(EncodeStrings(strings)), strings);
  EXPECT_FALSE(DecodeStrings(EncodeStrings(strings) + "x").has_value());
}

// What a data set holds, as text, to compare two loads of it.
std::string Loaded(const CaseEntry& entry, std::size_t index) {
  auto set = LoadCaseDataSet(entry, index);
  if (!set.ok()) return "error: " + set.status().message();
  std::string text = set->name;
  for (const Tensor* t : {&set->a, &set->b, &set->y}) {
    text += " " + DimsToString(t->dims()) + ":";
    text.append(static_cast<const char*>(t->raw_data()), t->NumBytes());
  }
  return text;
}

// A worker forked by a launcher holds no catalog: the task brings the case, and the worker loads
// from it exactly what the run's catalog entry loads (a case of a folder of cases, and a built-in
// one whose data set has no files).
TEST(WorkerProtocolTest, ATaskCarriesItsIdAndEveryAnswerItsTaskAndNumber) {
  TaskMessage task{12, {0, 1, ""}, std::nullopt, 0x0102030405060708};
  const std::optional<TaskMessage> back = DecodeTask(EncodeTask(task));
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->id, 0x0102030405060708u);

  std::string frames;
  AppendAnswer(frames, kDone, {77, 3}, "x");
  FrameReader reader;
  reader.Append(frames.data(), frames.size());
  const std::optional<Frame> frame = reader.Pop();
  ASSERT_TRUE(frame.has_value());
  EXPECT_EQ(frame->type, kDone);
  const auto split = SplitAnswer(frame->payload);
  ASSERT_TRUE(split.has_value());
  EXPECT_EQ(split->first.task_id, 77u);
  EXPECT_EQ(split->first.number, 3u);
  EXPECT_EQ(split->second, "x");
  EXPECT_FALSE(SplitAnswer("too short").has_value()) << "an answer without its task";
}

TEST(WorkerProtocolTest, ATaskCarriesItsCaseAndTheWorkerLoadsTheSameDataSets) {
  testing::TempDir root;
  testing::WriteFloatCase(root.path(), "test_sent", {2, 3}, {3, 4});
  const Catalog catalog = Discover({{root.path(), "--data-dir"}}, {.builtin = true, .select = {}});
  ASSERT_GE(catalog.cases.size(), 2u);
  // The first case and the last of MatMul's built-ins (the family's come after them and travel
  // without their maker: BuiltinFamilyCasesTest).
  std::size_t last = catalog.cases.size() - 1;
  while (last > 0 && !catalog.cases[last].model.has_value()) --last;
  for (const std::size_t index : {std::size_t{0}, last}) {
    const CaseEntry& entry = catalog.cases[index];
    SCOPED_TRACE(entry.name);
    ASSERT_TRUE(entry.model.has_value());
    const std::string bytes = EncodeTask({index, {0, 1, ""}, entry});
    const std::optional<TaskMessage> back = DecodeTask(bytes);
    ASSERT_TRUE(back.has_value());
    ASSERT_TRUE(back->entry.has_value());
    const CaseEntry& sent = *back->entry;
    EXPECT_EQ(back->case_index, index);
    EXPECT_EQ(sent.name, entry.name);
    EXPECT_EQ(sent.source(), entry.source());
    EXPECT_EQ(sent.dir(), entry.dir());
    EXPECT_EQ(sent.model.encoded(), entry.model.encoded());
    ASSERT_EQ(sent.data_sets.size(), entry.data_sets.size());
    for (std::size_t d = 0; d < entry.data_sets.size(); ++d) {
      EXPECT_EQ(sent.data_sets.name(d), entry.data_sets.name(d));
      const std::string expected = Loaded(entry, d);
      EXPECT_THAT(expected, ::testing::Not(::testing::StartsWith("error")));
      EXPECT_EQ(Loaded(sent, d), expected);
    }
    for (std::size_t n = 0; n < bytes.size(); ++n) {
      EXPECT_FALSE(DecodeTask(std::string_view(bytes).substr(0, n)).has_value())
          << "decoded from the first " << n << " bytes";
    }
  }
}

// Frames as a socket delivers them: in pieces of any size, several at once.
std::string Framed(MessageType type, std::string_view payload) {
  std::string frame;
  for (int i = 0; i < 4; ++i)
    frame.push_back(static_cast<char>((payload.size() >> (8 * i)) & 0xff));
  frame.push_back(type);
  frame.append(payload);
  return frame;
}

TEST(WorkerProtocolTest, FramesArriveWholeHoweverTheBytesAreCut) {
  const std::string result = Encoded(EveryFieldSet());
  const std::string stream =
      Framed(kResult, result) + Framed(kDone, std::string(1, '\1')) + Framed(kRetire, "");
  for (std::size_t piece = 1; piece <= stream.size(); ++piece) {
    FrameReader reader;
    std::vector<std::pair<MessageType, std::string>> frames;
    for (std::size_t at = 0; at < stream.size(); at += piece) {
      reader.Append(stream.data() + at, std::min(piece, stream.size() - at));
      while (const std::optional<Frame> frame = reader.Pop()) {
        frames.emplace_back(frame->type, std::string(frame->payload));
      }
    }
    ASSERT_EQ(frames.size(), 3u) << "in pieces of " << piece;
    EXPECT_EQ(frames[0].first, kResult);
    EXPECT_EQ(frames[0].second, result);
    EXPECT_EQ(frames[1].first, kDone);
    EXPECT_EQ(frames[1].second, "\1");
    EXPECT_EQ(frames[2].first, kRetire);
    EXPECT_EQ(frames[2].second, "");
  }
}

TEST(WorkerProtocolTest, AFrameCutShortIsNotGivenUntilItIsWhole) {
  const std::string frame = Framed(kResult, Encoded(EveryFieldSet()));
  FrameReader reader;
  reader.Append(frame.data(), frame.size() - 1);
  EXPECT_FALSE(reader.Pop().has_value());
  reader.Append(frame.data() + frame.size() - 1, 1);
  EXPECT_TRUE(reader.Pop().has_value());
  EXPECT_FALSE(reader.Pop().has_value());
}

}  // namespace
}  // namespace mm::conformance
