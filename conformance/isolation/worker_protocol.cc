#include "mm/conformance/isolation/worker_protocol.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <memory>

#include "mm/conformance/results/result_schema.h"

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

// A flag byte that must be 0 or 1.
bool Flag(WireReader& in) {
  const std::uint8_t flag = in.U8();
  if (flag > 1) in.Fail();
  return flag == 1;
}

constexpr std::uint8_t kNoDType = 0xff;

// Writes a record's fields by its schema (result_schema.h), in the schema's order.
class WireEncoder {
 public:
  explicit WireEncoder(WireWriter& out) : out_(out) {}

  void Text(std::string_view, const std::string& s) { out_.Str(s); }
  void NullableText(std::string_view, const std::string& s) { out_.Str(s); }
  void OmittedText(std::string_view, const std::string& s) { out_.Str(s); }
  void OpName(std::string_view, const std::string& s) { out_.Str(s); }
  void Integer(std::string_view, std::int64_t i, schema::Presence) { out_.I64(i); }
  void NullableInteger(std::string_view, std::int64_t i) { out_.I64(i); }
  void Real(std::string_view, double d) { out_.F64(d); }
  void RealOfText(std::string_view, double d, const std::string&) { out_.F64(d); }
  void Boolean(std::string_view, bool b) { out_.U8(b); }
  void Index(std::string_view, const Dims& dims) { out_.DimsOf(dims); }
  void TypeName(std::string_view, const std::optional<DType>& dtype) {
    out_.U8(dtype ? static_cast<std::uint8_t>(*dtype) : kNoDType);
  }
  void Shape(std::string_view, const Dims& dims, const std::optional<DType>&) { out_.DimsOf(dims); }
  void VerdictName(std::string_view, Verdict verdict) {
    out_.U8(static_cast<std::uint8_t>(verdict));
  }
  void Derived(std::string_view, std::optional<double>) {}
  template <class T>
  void Object(std::string_view, const std::optional<T>& object) {
    out_.U8(object.has_value());
    if (object) schema::VisitFields(*object, *this);
  }
  void Worst(std::string_view, const std::optional<WorstElement>& worst, const char* centre,
             const char* radius) {
    out_.U8(worst.has_value());
    if (worst) schema::VisitFields(*worst, *this, centre, radius);
  }

 private:
  WireWriter& out_;
};

// Reads what WireEncoder wrote; a garbled byte fails the reader.
class WireDecoder {
 public:
  explicit WireDecoder(WireReader& in) : in_(in) {}

  void Text(std::string_view, std::string& s) { s = in_.Str(); }
  void NullableText(std::string_view, std::string& s) { s = in_.Str(); }
  void OmittedText(std::string_view, std::string& s) { s = in_.Str(); }
  void OpName(std::string_view, std::string& s) { s = in_.Str(); }
  void Integer(std::string_view, std::int64_t& i, schema::Presence) { i = in_.I64(); }
  void NullableInteger(std::string_view, std::int64_t& i) { i = in_.I64(); }
  void Real(std::string_view, double& d) { d = in_.F64(); }
  void RealOfText(std::string_view, double& d, const std::string&) { d = in_.F64(); }
  void Boolean(std::string_view, bool& b) { b = Flag(in_); }
  void Index(std::string_view, Dims& dims) { dims = in_.DimsOf(); }
  void TypeName(std::string_view, std::optional<DType>& dtype) {
    const std::uint8_t code = in_.U8();
    dtype.reset();
    if (code == kNoDType) return;
    if (code >= kAllElementTypes.size()) return in_.Fail();
    dtype = static_cast<DType>(code);
  }
  void Shape(std::string_view, Dims& dims, const std::optional<DType>&) { dims = in_.DimsOf(); }
  void VerdictName(std::string_view, Verdict& verdict) {
    const std::uint8_t code = in_.U8();
    if (code >= kAllVerdicts.size()) return in_.Fail();
    verdict = static_cast<Verdict>(code);
  }
  void Derived(std::string_view, std::optional<double>) {}
  template <class T>
  void Object(std::string_view, std::optional<T>& object) {
    object.reset();
    if (Flag(in_)) schema::VisitFields(object.emplace(), *this);
  }
  void Worst(std::string_view, std::optional<WorstElement>& worst, const char* centre,
             const char* radius) {
    worst.reset();
    if (Flag(in_)) schema::VisitFields(worst.emplace(), *this, centre, radius);
  }

 private:
  WireReader& in_;
};

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

void EncodeDeclared(const DeclaredTensor& t, WireWriter& out) {
  out.Str(t.name);
  out.U8(static_cast<std::uint8_t>(t.dtype));
  out.U8(t.has_shape ? 1 : 0);
  out.U64(t.dims.size());
  for (const auto& dim : t.dims) {
    out.U8(dim ? 1 : 0);
    out.I64(dim.value_or(0));
  }
}

DeclaredTensor DecodeDeclared(WireReader& in) {
  DeclaredTensor t;
  t.name = in.Str();
  const std::uint8_t dtype = in.U8();
  if (dtype >= kAllElementTypes.size()) in.Fail();
  t.dtype = static_cast<DType>(dtype);
  t.has_shape = in.U8() != 0;
  const std::uint64_t rank = in.U64();
  // Each dim takes nine bytes: a larger count is garbled, not allocated.
  for (std::uint64_t i = 0; in.ok() && i < rank; ++i) {
    const bool known = in.U8() != 0;
    const std::int64_t value = in.I64();
    t.dims.push_back(known ? std::optional<std::int64_t>(value) : std::nullopt);
  }
  return t;
}

// A family case's model (catalog.h's CaseEntry::family), field by field.
void EncodeFamily(const FamilyModel& model, WireWriter& out) {
  out.U8(static_cast<std::uint8_t>(model.op));
  out.I64(model.version);
  out.I64(model.opset);
  out.U64(model.attributes.size());
  for (const family::Attribute& a : model.attributes) {
    out.Str(a.name);
    out.U8(static_cast<std::uint8_t>(a.type));
    out.F64(a.f);
    out.I64(a.i);
    out.Str(a.s);
    out.Str(a.other_type);
  }
  out.U64(model.inputs.size());
  for (const FamilyModel::Input& input : model.inputs) {
    out.Str(input.role);
    EncodeDeclared(input.declared, out);
  }
  EncodeDeclared(model.y, out);
}

FamilyModel DecodeFamily(WireReader& in) {
  FamilyModel model;
  const std::uint8_t op = in.U8();
  if (op >= family::kAllOps.size()) in.Fail();
  model.op = static_cast<family::Op>(op);
  model.version = static_cast<int>(in.I64());
  model.opset = static_cast<int>(in.I64());
  const std::uint64_t attributes = in.U64();
  for (std::uint64_t i = 0; in.ok() && i < attributes; ++i) {
    family::Attribute a;
    a.name = in.Str();
    const std::uint8_t type = in.U8();
    if (type > static_cast<std::uint8_t>(family::AttributeType::kOther)) in.Fail();
    a.type = static_cast<family::AttributeType>(type);
    a.f = static_cast<float>(in.F64());
    a.i = in.I64();
    a.s = in.Str();
    a.other_type = in.Str();
    model.attributes.push_back(std::move(a));
  }
  const std::uint64_t inputs = in.U64();
  for (std::uint64_t i = 0; in.ok() && i < inputs; ++i) {
    FamilyModel::Input input;
    input.role = in.Str();
    input.declared = DecodeDeclared(in);
    model.inputs.push_back(std::move(input));
  }
  model.y = DecodeDeclared(in);
  return model;
}

}  // namespace

void EncodeResult(const Result& r, WireWriter& out) {
  WireEncoder encoder(out);
  schema::VisitFields(r, encoder);
}

bool DecodeResult(WireReader& in, Result& r) {
  WireDecoder decoder(in);
  schema::VisitFields(r, decoder);
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
    out.U8(static_cast<std::uint8_t>(entry.op));
    out.U8(entry.family ? 1 : 0);
    if (entry.family) EncodeFamily(*entry.family, out);
    const std::string dir = entry.dir();
    const std::optional<MatMulModel> model =
        entry.model ? std::optional<MatMulModel>(*entry.model) : std::nullopt;
    out.U64(entry.data_sets.size());
    for (std::size_t d = 0; d < entry.data_sets.size(); ++d) {
      const DataSetFiles files = model ? entry.data_sets.files(d, dir, *model)
                                       : DataSetFiles{entry.data_sets.name(d), {}, {}, {}};
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
    const std::uint8_t op = in.U8();
    if (op >= family::kAllOps.size()) in.Fail();
    entry.op = static_cast<family::Op>(op);
    const std::uint8_t has_family = in.U8();
    if (has_family > 1) in.Fail();
    if (has_family == 1) entry.family = std::make_shared<const FamilyModel>(DecodeFamily(in));
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
