#include "conformance/worker_protocol.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>

namespace mm::conformance {

void WireWriter::U64(std::uint64_t value) {
  char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>((value >> (8 * i)) & 0xff);
  out_.append(bytes, 8);
}

void WireWriter::F64(double value) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  U64(bits);
}

void WireWriter::Str(std::string_view text) {
  const auto size = static_cast<std::uint32_t>(text.size());
  for (int i = 0; i < 4; ++i) out_.push_back(static_cast<char>((size >> (8 * i)) & 0xff));
  out_.append(text);
}

void WireWriter::DimsOf(const Dims& dims) {
  U64(dims.size());
  for (const std::int64_t d : dims) I64(d);
}

bool WireReader::Take(std::size_t n, const char*& bytes) {
  if (!ok_ || in_.size() < n) {
    ok_ = false;
    return false;
  }
  bytes = in_.data();
  in_.remove_prefix(n);
  return true;
}

std::uint8_t WireReader::U8() {
  const char* bytes = nullptr;
  return Take(1, bytes) ? static_cast<std::uint8_t>(bytes[0]) : 0;
}

std::uint64_t WireReader::U64() {
  const char* bytes = nullptr;
  if (!Take(8, bytes)) return 0;
  std::uint64_t value = 0;
  for (int i = 0; i < 8; ++i)
    value |= std::uint64_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  return value;
}

double WireReader::F64() {
  const std::uint64_t bits = U64();
  double value = 0;
  std::memcpy(&value, &bits, sizeof(value));
  return value;
}

std::string WireReader::Str() {
  const char* bytes = nullptr;
  if (!Take(4, bytes)) return {};
  std::uint32_t size = 0;
  for (int i = 0; i < 4; ++i)
    size |= std::uint32_t{static_cast<unsigned char>(bytes[i])} << (8 * i);
  if (!Take(size, bytes)) return {};
  return std::string(bytes, size);
}

Dims WireReader::DimsOf() {
  const std::uint64_t count = U64();
  // Each dim takes 8 bytes: a count the rest of the payload cannot hold is garbled, and must not
  // size an allocation.
  if (count > in_.size() / 8) {
    ok_ = false;
    return {};
  }
  Dims dims(count);
  for (std::int64_t& d : dims) d = I64();
  return dims;
}

namespace {

void EncodeWorst(const std::optional<WorstElement>& worst, WireWriter& out) {
  out.U8(worst.has_value());
  if (!worst) return;
  out.I64(worst->flat_index);
  out.DimsOf(worst->index);
  out.Str(worst->expected);
  out.Str(worst->actual);
  out.F64(worst->expected_value);
  out.F64(worst->actual_value);
  out.F64(worst->abs_error);
  out.F64(worst->rel_error);
  out.F64(worst->allowed);
}

// A flag byte that must be 0 or 1.
bool Flag(WireReader& in) {
  const std::uint8_t flag = in.U8();
  if (flag > 1) in.Fail();
  return flag == 1;
}

void DecodeWorst(WireReader& in, std::optional<WorstElement>& worst) {
  worst.reset();
  if (!Flag(in)) return;
  WorstElement& w = worst.emplace();
  w.flat_index = in.I64();
  w.index = in.DimsOf();
  w.expected = in.Str();
  w.actual = in.Str();
  w.expected_value = in.F64();
  w.actual_value = in.F64();
  w.abs_error = in.F64();
  w.rel_error = in.F64();
  w.allowed = in.F64();
}

void EncodeComparison(const std::optional<Comparison>& c, WireWriter& out) {
  out.U8(c.has_value());
  if (!c) return;
  out.U8(c->match);
  out.Str(c->mismatch);
  out.I64(c->elements);
  out.I64(c->differing);
  out.U8(c->bitwise_equal);
  out.F64(c->max_abs_error);
  out.F64(c->max_rel_error);
  EncodeWorst(c->worst, out);
}

void DecodeComparison(WireReader& in, std::optional<Comparison>& c) {
  c.reset();
  if (!Flag(in)) return;
  Comparison& x = c.emplace();
  x.match = Flag(in);
  x.mismatch = in.Str();
  x.elements = in.I64();
  x.differing = in.I64();
  x.bitwise_equal = Flag(in);
  x.max_abs_error = in.F64();
  x.max_rel_error = in.F64();
  DecodeWorst(in, x.worst);
}

void EncodeBound(const std::optional<BoundCheck>& b, WireWriter& out) {
  out.U8(b.has_value());
  if (!b) return;
  out.I64(b->elements);
  out.I64(b->outside);
  out.I64(b->unbounded);
  EncodeWorst(b->worst, out);
}

void DecodeBound(WireReader& in, std::optional<BoundCheck>& b) {
  b.reset();
  if (!Flag(in)) return;
  BoundCheck& x = b.emplace();
  x.elements = in.I64();
  x.outside = in.I64();
  x.unbounded = in.I64();
  DecodeWorst(in, x.worst);
}

constexpr std::uint8_t kNoDType = 0xff;

// The figures in their order in CallResources.
constexpr std::int64_t CallResources::*kCallFigures[] = {&CallResources::process,
                                                         &CallResources::call,
                                                         &CallResources::rss_bytes,
                                                         &CallResources::rss_growth_bytes,
                                                         &CallResources::fds,
                                                         &CallResources::fd_growth,
                                                         &CallResources::threads,
                                                         &CallResources::thread_growth,
                                                         &CallResources::spinning_threads};

void EncodeResources(const std::optional<CallResources>& resources, WireWriter& out) {
  out.U8(resources.has_value());
  if (!resources) return;
  for (auto figure : kCallFigures) out.I64((*resources).*figure);
}

void DecodeResources(WireReader& in, std::optional<CallResources>& resources) {
  resources.reset();
  if (!Flag(in)) return;
  CallResources& r = resources.emplace();
  for (auto figure : kCallFigures) r.*figure = in.I64();
}

void EncodeProgress(const CaseProgress& at, WireWriter& out) {
  out.U64(at.data_set);
  out.U64(at.backend);
  out.Str(at.reference_missing);
}

CaseProgress DecodeProgress(WireReader& in) {
  CaseProgress at;
  at.data_set = in.U64();
  at.backend = in.U64();
  at.reference_missing = in.Str();
  return at;
}

}  // namespace

void EncodeResult(const Result& r, WireWriter& out) {
  out.Str(r.case_name);
  out.I64(r.case_index);
  out.Str(r.source);
  out.Str(r.data_set);
  out.Str(r.backend);
  out.U8(r.dtype ? static_cast<std::uint8_t>(*r.dtype) : kNoDType);
  out.DimsOf(r.a_dims);
  out.DimsOf(r.b_dims);
  out.U8(static_cast<std::uint8_t>(r.verdict));
  out.Str(r.message);
  out.Str(r.support_note);
  out.Str(r.implementation);
  out.Str(r.expectation);
  out.Str(r.data_suspect);
  out.F64(r.seconds);
  EncodeComparison(r.vs_expected, out);
  EncodeBound(r.vs_bound, out);
  out.Str(r.vs_reference);
  EncodeComparison(r.vs_reference_comparison, out);
  EncodeResources(r.resources, out);
}

bool DecodeResult(WireReader& in, Result& r) {
  r.case_name = in.Str();
  r.case_index = in.I64();
  r.source = in.Str();
  r.data_set = in.Str();
  r.backend = in.Str();
  const std::uint8_t dtype = in.U8();
  r.dtype.reset();
  if (dtype != kNoDType) {
    if (dtype >= kAllDTypes.size()) in.Fail();
    r.dtype = static_cast<DType>(dtype);
  }
  r.a_dims = in.DimsOf();
  r.b_dims = in.DimsOf();
  const std::uint8_t verdict = in.U8();
  if (verdict >= kAllVerdicts.size()) in.Fail();
  r.verdict = static_cast<Verdict>(verdict);
  r.message = in.Str();
  r.support_note = in.Str();
  r.implementation = in.Str();
  r.expectation = in.Str();
  r.data_suspect = in.Str();
  r.seconds = in.F64();
  DecodeComparison(in, r.vs_expected);
  DecodeBound(in, r.vs_bound);
  r.vs_reference = in.Str();
  DecodeComparison(in, r.vs_reference_comparison);
  DecodeResources(in, r.resources);
  return in.ok();
}

std::string EncodeTask(const TaskMessage& task) {
  std::string payload;
  WireWriter out(payload);
  out.U64(task.case_index);
  EncodeProgress(task.from, out);
  out.U8(task.entry ? 1 : 0);
  if (task.entry) {
    const CaseEntry& entry = *task.entry;
    out.Str(entry.name);
    out.Str(entry.source());
    out.U8(static_cast<std::uint8_t>(entry.dir_is));
    out.Str(entry.model.encoded());
    const std::string dir = entry.dir();
    const std::optional<MatMulModel> model =
        entry.model ? std::optional<MatMulModel>(*entry.model) : std::nullopt;
    out.U64(entry.data_sets.size());
    for (std::size_t d = 0; d < entry.data_sets.size(); ++d) {
      const DataSetFiles files =
          model ? entry.data_sets.files(d, dir, *model) : DataSetFiles{entry.data_sets.name(d)};
      out.Str(files.name);
      out.Str(files.a);
      out.Str(files.b);
      out.Str(files.y);
    }
  }
  out.U64(task.id);
  return payload;
}

std::optional<TaskMessage> DecodeTask(std::string_view payload) {
  WireReader in(payload);
  TaskMessage task;
  task.case_index = in.U64();
  task.from = DecodeProgress(in);
  const std::uint8_t has_entry = in.U8();
  if (has_entry > 1) in.Fail();
  if (has_entry == 1) {
    CaseEntry& entry = task.entry.emplace();
    entry.name = in.Str();
    entry.shared_source = std::make_shared<const std::string>(in.Str());
    const std::uint8_t dir_is = in.U8();
    if (dir_is > static_cast<std::uint8_t>(CaseEntry::DirIs::kSourceSlashName)) in.Fail();
    entry.dir_is = static_cast<CaseEntry::DirIs>(dir_is);
    entry.model = CompactModel::FromEncoded(in.Str());
    // Each data set takes at least its four lengths: a larger count is garbled, not allocated.
    const std::uint64_t count = in.U64();
    if (count > payload.size() / 16) in.Fail();
    for (std::uint64_t d = 0; in.ok() && d < count; ++d) {
      DataSetFiles files;
      files.name = in.Str();
      files.a = in.Str();
      files.b = in.Str();
      files.y = in.Str();
      entry.data_sets.push_back(std::move(files));
    }
  }
  task.id = in.U64();
  if (!in.ok() || !in.at_end()) return std::nullopt;
  return task;
}

std::string EncodeStage(CaseEvents::Stage stage, const CaseProgress& at, const Result& about) {
  std::string payload;
  WireWriter out(payload);
  out.U8(static_cast<std::uint8_t>(stage));
  EncodeProgress(at, out);
  EncodeResult(about, out);
  return payload;
}

std::optional<StageMessage> DecodeStage(std::string_view payload) {
  WireReader in(payload);
  StageMessage message;
  const std::uint8_t stage = in.U8();
  if (stage > static_cast<std::uint8_t>(CaseEvents::Stage::kBackend)) in.Fail();
  message.stage = static_cast<CaseEvents::Stage>(stage);
  message.at = DecodeProgress(in);
  if (!DecodeResult(in, message.about) || !in.at_end()) return std::nullopt;
  return message;
}

std::string EncodeStrings(const std::vector<std::string>& strings) {
  std::string payload;
  WireWriter out(payload);
  out.U64(strings.size());
  for (const std::string& s : strings) out.Str(s);
  return payload;
}

std::optional<std::vector<std::string>> DecodeStrings(std::string_view payload) {
  WireReader in(payload);
  const std::uint64_t count = in.U64();
  // Each string takes at least its 4-byte length.
  if (count > payload.size() / 4) return std::nullopt;
  std::vector<std::string> strings(count);
  for (std::string& s : strings) s = in.Str();
  if (!in.ok() || !in.at_end()) return std::nullopt;
  return strings;
}

bool WriteAll(int fd, std::string_view bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    // MSG_NOSIGNAL: a dead peer is an error here, not a SIGPIPE that kills the process.
    const ssize_t n = send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

void AppendFrame(std::string& out, MessageType type, std::string_view payload) {
  const auto size = static_cast<std::uint32_t>(payload.size());
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((size >> (8 * i)) & 0xff));
  out.push_back(type);
  out.append(payload);
}

void AppendAnswer(std::string& out, MessageType type, const AnswerTag& tag,
                  std::string_view payload) {
  std::string tagged;
  tagged.reserve(12 + payload.size());
  WireWriter writer(tagged);
  writer.U64(tag.task_id);
  for (int i = 0; i < 4; ++i) writer.U8(static_cast<std::uint8_t>((tag.number >> (8 * i)) & 0xff));
  tagged.append(payload);
  AppendFrame(out, type, tagged);
}

std::optional<std::pair<AnswerTag, std::string_view>> SplitAnswer(std::string_view payload) {
  if (payload.size() < 12) return std::nullopt;
  WireReader reader(payload.substr(0, 12));
  AnswerTag tag;
  tag.task_id = reader.U64();
  for (int i = 0; i < 4; ++i) tag.number |= std::uint32_t{reader.U8()} << (8 * i);
  return std::pair{tag, payload.substr(12)};
}

bool SendFrame(int fd, MessageType type, std::string_view payload) {
  if (payload.size() > std::numeric_limits<std::uint32_t>::max()) return false;
  std::string frame;
  frame.reserve(5 + payload.size());
  AppendFrame(frame, type, payload);
  return WriteAll(fd, frame);
}

void FrameReader::Append(const char* bytes, std::size_t n) {
  // Drop what was consumed once it is most of the buffer: one move per many frames.
  if (start_ > 0 && start_ >= buffer_.size() / 2) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  buffer_.append(bytes, n);
}

std::optional<Frame> FrameReader::Pop() {
  const std::size_t available = buffer_.size() - start_;
  if (available < 5) return std::nullopt;
  const char* head = buffer_.data() + start_;
  std::uint32_t size = 0;
  for (int i = 0; i < 4; ++i) size |= std::uint32_t{static_cast<unsigned char>(head[i])} << (8 * i);
  if (available < 5 + std::size_t{size}) return std::nullopt;
  Frame frame{static_cast<MessageType>(head[4]), std::string_view(head + 5, size)};
  start_ += 5 + std::size_t{size};
  return frame;
}

void FrameReader::Clear() {
  buffer_.clear();
  start_ = 0;
}

std::optional<Frame> ReadFrame(int fd, FrameReader& reader) {
  char chunk[4096];
  while (true) {
    if (auto frame = reader.Pop()) return frame;
    const ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    reader.Append(chunk, static_cast<std::size_t>(n));
  }
}

}  // namespace mm::conformance
