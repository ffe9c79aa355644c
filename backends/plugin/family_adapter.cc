#include "family_adapter.h"

#include <string>

namespace mm::plugin_internal {
namespace {

std::int32_t ToPluginOp(family::Op op) {
  switch (op) {
    case family::Op::kMatMul:
      return MM_OP_MATMUL;
    case family::Op::kGemm:
      return MM_OP_GEMM;
    case family::Op::kMatMulInteger:
      return MM_OP_MATMUL_INTEGER;
    case family::Op::kQLinearMatMul:
      return MM_OP_QLINEAR_MATMUL;
  }
  return 0;
}

std::int32_t ToPluginQuantForm(family::QuantForm form) {
  switch (form) {
    case family::QuantForm::kAbsent:
      return MM_QUANT_ABSENT;
    case family::QuantForm::kPerTensor:
      return MM_QUANT_PER_TENSOR;
    case family::QuantForm::kPerRow:
      return MM_QUANT_PER_ROW;
    case family::QuantForm::kPerColumn:
      return MM_QUANT_PER_COLUMN;
  }
  return -1;
}

std::int32_t ToPluginCForm(family::CForm form) {
  switch (form) {
    case family::CForm::kAbsent:
      return MM_C_ABSENT;
    case family::CForm::kScalar:
      return MM_C_SCALAR;
    case family::CForm::kOne:
      return MM_C_ONE;
    case family::CForm::kRow:
      return MM_C_ROW;
    case family::CForm::kOneByOne:
      return MM_C_ONE_BY_ONE;
    case family::CForm::kOneByN:
      return MM_C_ONE_BY_N;
    case family::CForm::kMByOne:
      return MM_C_M_BY_ONE;
    case family::CForm::kMByN:
      return MM_C_M_BY_N;
  }
  return -1;
}

// An input or parameter that may be absent (no data): rank 0, NULL dims and data then.
mm_const_tensor ToPluginView(const TensorView& view) {
  if (view.data == nullptr && view.dims.empty()) return {0, 0, nullptr, nullptr};
  return ToPluginInput(ToPluginDType(view.dtype), view.dims, view.data);
}

mm_quant ToPluginQuant(const family::QuantParam& param) {
  if (param.form == family::QuantForm::kAbsent) {
    return {MM_QUANT_ABSENT, {0, 0, nullptr, nullptr}};
  }
  return {ToPluginQuantForm(param.form), ToPluginView(param.tensor)};
}

// Whether `op` at `version` takes `dtype` for `input` (family::InputElementType).
bool Takes(family::Op op, int version, std::string_view input, DType dtype) {
  return family::InputElementType(op, version, input, GetDTypeInfo(dtype).onnx_enum).ok();
}

constexpr DType kEightBit[] = {DType::kUInt8, DType::kInt8};
constexpr DType kScaleTypes[] = {DType::kFloat, DType::kFloat16, DType::kBFloat16};

void AddQLinearDescs(int version, std::vector<family::OpDesc>& out) {
  const family::Op op = family::Op::kQLinearMatMul;
  for (DType a : kEightBit) {
    for (DType b : kEightBit) {
      for (DType y : kEightBit) {
        for (DType scale : kScaleTypes) {
          if (Takes(op, version, "a", a) && Takes(op, version, "b", b) &&
              Takes(op, version, "y_zero_point", y) && Takes(op, version, "a_scale", scale)) {
            out.push_back({op, version, a, b, y, scale});
          }
        }
      }
    }
  }
}

}  // namespace

mm_op_desc ToPluginOpDesc(const family::OpDesc& desc) {
  return {sizeof(mm_op_desc),
          ToPluginOp(desc.op),
          desc.version,
          ToPluginDType(desc.a_dtype),
          ToPluginDType(desc.b_dtype),
          ToPluginDType(desc.y_dtype),
          desc.op == family::Op::kQLinearMatMul ? ToPluginDType(desc.scale_dtype) : 0};
}

std::vector<family::OpDesc> FamilyDescs() {
  std::vector<family::OpDesc> out;
  for (int version : family::OpVersions(family::Op::kGemm)) {
    for (DType dtype : kAllDTypes) {
      if (Takes(family::Op::kGemm, version, "A", dtype)) {
        out.push_back({family::Op::kGemm, version, dtype, dtype, dtype, DType::kFloat});
      }
    }
  }
  for (int version : family::OpVersions(family::Op::kMatMulInteger)) {
    for (DType a : kEightBit) {
      for (DType b : kEightBit) {
        out.push_back({family::Op::kMatMulInteger, version, a, b, DType::kInt32, DType::kFloat});
      }
    }
  }
  for (int version : family::OpVersions(family::Op::kQLinearMatMul)) {
    AddQLinearDescs(version, out);
  }
  return out;
}

OpProblem::OpProblem(const family::Plan& plan) {
  problem_.struct_size = sizeof(mm_op_problem);
  problem_.desc = ToPluginOpDesc(family::DescOf(plan));
  problem_.a = ToPluginView(plan.a);
  problem_.b = ToPluginView(plan.b);
  SetProduct(plan.product, problem_);
  if (plan.op == family::Op::kGemm) {
    const family::GemmPlan& gemm = plan.gemm;
    problem_.trans_a = gemm.trans_a ? 1 : 0;
    problem_.trans_b = gemm.trans_b ? 1 : 0;
    problem_.alpha = gemm.alpha;
    problem_.beta = gemm.beta;
    problem_.c_form = ToPluginCForm(gemm.c_form);
    problem_.c = gemm.c_form == family::CForm::kAbsent ? mm_const_tensor{0, 0, nullptr, nullptr}
                                                       : ToPluginView(gemm.c);
    problem_.c_row_stride = gemm.c_row_stride;
    problem_.c_col_stride = gemm.c_col_stride;
  }
  problem_.a_zero_point = ToPluginQuant(plan.a_zero_point);
  problem_.b_zero_point = ToPluginQuant(plan.b_zero_point);
  problem_.a_scale = ToPluginQuant(plan.a_scale);
  problem_.b_scale = ToPluginQuant(plan.b_scale);
  problem_.y_scale = ToPluginQuant(plan.y_scale);
  problem_.y_zero_point = ToPluginQuant(plan.y_zero_point);
}

Status AskGemmArithmetic(const mm_backend_plugin& table, PluginInfo& info) {
  const auto declare = table.op_arithmetic;
  if (declare == nullptr) return OkStatus();
  const int newest = family::OpVersions(family::Op::kGemm).back();
  for (DType dtype : kAllDTypes) {
    if (!IsFloat(dtype)) continue;
    const family::OpDesc desc{family::Op::kGemm, newest, dtype, dtype, dtype, DType::kFloat};
    const mm_op_desc asked = ToPluginOpDesc(desc);
    mm_arithmetic answer{ToPluginDType(dtype), 0};
    CallPlugin([&] { declare(&asked, &answer); });
    const std::string what =
        "op_arithmetic() of plugin '" + info.name + "' for " + desc.ToString() + " declared ";
    MM_ASSIGN_OR_RETURN(info.gemm_arithmetic[DTypeIndex(dtype)],
                        FromPluginArithmetic(dtype, answer, what));
  }
  return OkStatus();
}

}  // namespace mm::plugin_internal
