// How a plan becomes oneDNN's problem, and how oneDNN's errors become a Status
// (onednn_internal.h).
#include <oneapi/dnnl/dnnl_debug.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "mm/backends/onednn/onednn_internal.h"

namespace mm::onednn_internal {

Dims DenseStrides(const Dims& dims) {
  Dims strides(dims.size());
  std::int64_t stride = 1;
  for (std::size_t axis = dims.size(); axis-- > 0;) {
    strides[axis] = stride;
    stride *= std::max<std::int64_t>(dims[axis], 1);
  }
  return strides;
}

ProblemShapes CollapseShapes(const MatMulPlan& plan) {
  struct Axis {
    std::int64_t y, a, b;
  };
  std::vector<Axis> axes;
  for (std::size_t i = 0; i < plan.batch_dims.size(); ++i) {
    const Axis axis{plan.batch_dims[i], plan.a_batch_dims[i], plan.b_batch_dims[i]};
    // Y's extent 1 means both operands have 1 there too: the axis carries nothing.
    if (axis.y == 1) continue;
    if (!axes.empty()) {
      Axis& previous = axes.back();
      // Row-major, two neighbouring axes that an operand spans fully are one axis of the product
      // extent; two it broadcasts on are one broadcast axis. Mixed patterns cannot merge.
      if ((previous.a == 1) == (axis.a == 1) && (previous.b == 1) == (axis.b == 1)) {
        previous.y *= axis.y;
        previous.a *= axis.a;
        previous.b *= axis.b;
        continue;
      }
    }
    axes.push_back(axis);
  }
  std::int64_t m = plan.m;
  // One B for every batch entry and A a plain stack: A's [batch, m, k] bytes are [batch*m, k].
  if (axes.size() == 1 && axes[0].b == 1 && axes[0].a == axes[0].y &&
      axes[0].y <= kMaxExtent / std::max<std::int64_t>(m, 1)) {
    m *= axes[0].y;
    axes.clear();
  }
  ProblemShapes shapes;
  for (const Axis& axis : axes) {
    shapes.src.push_back(axis.a);
    shapes.weights.push_back(axis.b);
    shapes.dst.push_back(axis.y);
  }
  shapes.src.insert(shapes.src.end(), {m, plan.k});
  shapes.weights.insert(shapes.weights.end(), {plan.k, plan.n});
  shapes.dst.insert(shapes.dst.end(), {m, plan.n});
  return shapes;
}

Support WithinOneDnnLimits(const MatMulPlan& plan, Support yes) {
  // Zero-size problems never reach oneDNN (the engine answers them), so its limits do not
  // apply to them.
  if (plan.y_elements == 0 || plan.k == 0) return yes;
  const ProblemShapes shapes = CollapseShapes(plan);
  if (shapes.dst.size() > static_cast<std::size_t>(kMaxRank)) {
    return Support::No("its batch dims collapse to " + std::to_string(shapes.dst.size() - 2) +
                       " axes, Y " + DimsToString(shapes.dst) + " has rank " +
                       std::to_string(shapes.dst.size()) + ", beyond oneDNN's " +
                       std::to_string(kMaxRank) + "-dim limit");
  }
  for (const Dims* dims : {&shapes.src, &shapes.weights, &shapes.dst}) {
    for (std::int64_t d : *dims) {
      if (d > kMaxExtent) {
        return Support::No("extent " + std::to_string(d) +
                           " exceeds 2^31-1, beyond what "
                           "oneDNN 2.6's matmul handles (it crashes on an M of 2^32)");
      }
    }
  }
  return yes;
}

Status StatusFromDnnl(dnnl_status_t status, std::string_view doing, const MatMulDesc& desc,
                      std::string_view detail) {
  std::string message = "oneDNN status " + std::string(dnnl_status2str(status)) + " while " +
                        std::string(doing) + " for " + desc.ToString();
  if (!detail.empty()) message += ": " + std::string(detail);
  switch (status) {
    case dnnl_out_of_memory:
      return ResourceExhaustedError(std::move(message));
    case dnnl_invalid_arguments:
      return InvalidArgumentError(std::move(message));
    case dnnl_unimplemented:
      return UnimplementedError(std::move(message));
    default:
      return InternalError(std::move(message));
  }
}

}  // namespace mm::onednn_internal
