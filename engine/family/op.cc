#include "mm/family/op.h"

#include <string>

namespace mm::family {
namespace {

constexpr int kMatMulVersions[] = {1, 9, 13};
constexpr int kGemmVersions[] = {1, 6, 7, 9, 11, 13};
constexpr int kMatMulIntegerVersions[] = {10};
constexpr int kQLinearMatMulVersions[] = {10, 21};

std::string VersionList(Op op) {
  std::string out;
  for (int v : OpVersions(op)) out += (out.empty() ? "" : ", ") + std::to_string(v);
  return out;
}

}  // namespace

std::string_view OpName(Op op) {
  switch (op) {
    case Op::kMatMul:
      return "MatMul";
    case Op::kGemm:
      return "Gemm";
    case Op::kMatMulInteger:
      return "MatMulInteger";
    case Op::kQLinearMatMul:
      return "QLinearMatMul";
  }
  return "?";
}

StatusOr<Op> OpFromName(std::string_view name) {
  for (Op op : kAllOps) {
    if (OpName(op) == name) return op;
  }
  return InvalidArgumentError("'" + std::string(name) +
                              "' is not an operator of MatMul's family (MatMul, Gemm, "
                              "MatMulInteger, QLinearMatMul)");
}

std::span<const int> OpVersions(Op op) {
  switch (op) {
    case Op::kMatMul:
      return kMatMulVersions;
    case Op::kGemm:
      return kGemmVersions;
    case Op::kMatMulInteger:
      return kMatMulIntegerVersions;
    case Op::kQLinearMatMul:
      return kQLinearMatMulVersions;
  }
  return {};
}

Status CheckOpVersion(Op op, int version) {
  for (int v : OpVersions(op)) {
    if (v == version) return OkStatus();
  }
  return InvalidArgumentError(std::string(OpName(op)) + " has no version " +
                              std::to_string(version) + " (versions: " + VersionList(op) + ")");
}

StatusOr<int> OpVersionAtOpset(Op op, int opset) {
  int found = 0;
  for (int v : OpVersions(op)) {
    if (v <= opset) found = v;
  }
  if (found == 0) {
    return InvalidArgumentError(std::string(OpName(op)) + " does not exist in opset " +
                                std::to_string(opset) + "; it appeared in opset " +
                                std::to_string(OpVersions(op).front()));
  }
  return found;
}

}  // namespace mm::family
