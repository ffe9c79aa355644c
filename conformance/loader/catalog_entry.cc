// The pieces of a catalogue entry (catalog.h): a case's data sets kept compact (DataSetList), its
// model kept as bytes (CompactModel), and where its directory is (CaseEntry).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mm/conformance/loader/catalog.h"

namespace mm::conformance {
namespace {

namespace fs = std::filesystem;

// The name and files of data set `index` of the case in `case_dir` when it follows the layout,
// built exactly as ListDataSets builds them from its listing.
std::string StandardName(std::size_t index) { return "test_data_set_" + std::to_string(index); }

DataSetFiles StandardFiles(std::size_t index, const std::string& case_dir,
                           const MatMulModel& model) {
  const std::string name = StandardName(index);
  const fs::path set_dir = fs::path(case_dir) / name;
  auto input = [&](int k) { return (set_dir / ("input_" + std::to_string(k) + ".pb")).string(); };
  return {name, input(model.a_input_index), input(model.b_input_index),
          (set_dir / "output_0.pb").string()};
}

}  // namespace

DataSetList::DataSetList(std::vector<DataSetFiles> sets, const std::string& case_dir,
                         const MatMulModel& model) {
  bool standard = !sets.empty() && sets.size() <= UINT32_MAX;
  for (std::size_t i = 0; standard && i < sets.size(); ++i) {
    const DataSetFiles rebuilt = StandardFiles(i, case_dir, model);
    standard = sets[i].name == rebuilt.name && sets[i].a == rebuilt.a && sets[i].b == rebuilt.b &&
               sets[i].y == rebuilt.y;
  }
  if (standard) {
    standard_ = static_cast<std::uint32_t>(sets.size());
  } else {
    full_ = std::move(sets);
  }
}

void DataSetList::push_back(DataSetFiles set) {
  // A list is in one form: a standard list met by a full entry is written out in full first.
  if (standard_ != 0) {
    for (std::size_t i = 0; i < standard_; ++i) full_.push_back({StandardName(i), {}, {}, {}});
    standard_ = 0;
  }
  full_.push_back(std::move(set));
}

std::string DataSetList::name(std::size_t index) const {
  return standard_ != 0 ? StandardName(index) : full_.at(index).name;
}

DataSetFiles DataSetList::files(std::size_t index, const std::string& case_dir,
                                const MatMulModel& model) const {
  return standard_ != 0 ? StandardFiles(index, case_dir, model) : full_.at(index);
}

namespace {

// CompactModel's encoding: integers as LEB128 varints (signed ones zigzagged), a string as its
// length then its bytes, a dim as 0 when unknown or 1 then its value.
void PutUnsigned(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void PutSigned(std::string& out, std::int64_t v) {
  PutUnsigned(out, (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63));
}
void PutTensor(std::string& out, const DeclaredTensor& t) {
  PutUnsigned(out, t.name.size());
  out += t.name;
  PutUnsigned(out, static_cast<std::uint64_t>(t.dtype));
  PutUnsigned(out, t.has_shape ? 1 : 0);
  PutUnsigned(out, t.dims.size());
  for (const auto& dim : t.dims) {
    PutUnsigned(out, dim ? 1 : 0);
    if (dim) PutSigned(out, *dim);
  }
}

// Reads what the Put functions wrote (the bytes are this process's own: never malformed).
struct Reader {
  const std::string& in;
  std::size_t at = 0;
  std::uint64_t Unsigned() {
    std::uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      const auto byte = static_cast<unsigned char>(in[at++]);
      v |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      if ((byte & 0x80) == 0) return v;
    }
  }
  std::int64_t Signed() {
    const std::uint64_t z = Unsigned();
    return static_cast<std::int64_t>((z >> 1) ^ (~(z & 1) + 1));
  }
  DeclaredTensor ReadTensor() {
    DeclaredTensor t;
    const std::size_t length = Unsigned();
    t.name = in.substr(at, length);
    at += length;
    t.dtype = static_cast<DType>(Unsigned());
    t.has_shape = Unsigned() != 0;
    t.dims.resize(Unsigned());
    for (auto& dim : t.dims) {
      if (Unsigned() != 0) dim = Signed();
    }
    return t;
  }
};

}  // namespace

CompactModel& CompactModel::operator=(const MatMulModel& model) {
  std::string out;
  PutSigned(out, model.opset);
  PutSigned(out, model.matmul_version);
  PutSigned(out, model.a_input_index);
  PutSigned(out, model.b_input_index);
  PutUnsigned(out, model.allowed_dtypes.size());
  for (DType dtype : model.allowed_dtypes) PutUnsigned(out, static_cast<std::uint64_t>(dtype));
  PutTensor(out, model.a);
  PutTensor(out, model.b);
  PutTensor(out, model.y);
  out.shrink_to_fit();
  bytes_ = std::move(out);
  return *this;
}

CompactModel& CompactModel::operator=(const std::optional<MatMulModel>& model) {
  if (model) return *this = *model;
  bytes_.clear();
  bytes_.shrink_to_fit();
  return *this;
}

MatMulModel CompactModel::operator*() const {
  Reader in{bytes_};
  MatMulModel model;
  model.opset = static_cast<int>(in.Signed());
  model.matmul_version = static_cast<int>(in.Signed());
  model.a_input_index = static_cast<int>(in.Signed());
  model.b_input_index = static_cast<int>(in.Signed());
  model.allowed_dtypes.resize(in.Unsigned());
  for (DType& dtype : model.allowed_dtypes) dtype = static_cast<DType>(in.Unsigned());
  model.a = in.ReadTensor();
  model.b = in.ReadTensor();
  model.y = in.ReadTensor();
  return model;
}

const std::string& CaseEntry::source() const {
  static const std::string kUnset;
  return shared_source ? *shared_source : kUnset;
}

std::string CaseEntry::dir() const {
  switch (dir_is) {
    case DirIs::kNone:
      return {};
    case DirIs::kSource:
      return source();
    case DirIs::kSourceSlashName:
      return (fs::path(source()) / name).string();
  }
  return {};
}

}  // namespace mm::conformance
