// Family problems for tests, written as ONNX nodes are: inputs by name with their values, then
// attributes. The builder owns every tensor, so the problem (and plans of it) stay valid while it
// lives.
#ifndef MM_FAMILY_TESTING_PROBLEM_BUILDER_H_
#define MM_FAMILY_TESTING_PROBLEM_BUILDER_H_

#include <cstddef>
#include <cstring>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "mm/engine/dtype.h"
#include "mm/engine/tensor.h"
#include "mm/family/problem.h"

namespace mm::family::testing {

class ProblemBuilder {
 public:
  ProblemBuilder(Op op, int version) {
    problem_.op = op;
    problem_.version = version;
  }
  // A deep copy: its own tensors, the copied problem's views (data and dims) pointed at them; a
  // view's data or dims a test set by hand to something else is kept as it is.
  ProblemBuilder(const ProblemBuilder& other) : problem_(other.problem_) {
    for (const Tensor& t : other.tensors_) {
      Tensor& copy = tensors_.emplace_back(Tensor::Create(t.dtype(), t.dims()).value());
      if (t.NumBytes() > 0) std::memcpy(copy.raw_data(), t.raw_data(), t.NumBytes());
    }
    for (NamedInput& input : problem_.inputs) {
      for (std::size_t i = 0; i < other.tensors_.size(); ++i) {
        if (input.tensor.data == other.tensors_[i].raw_data()) {
          input.tensor.data = tensors_[i].raw_data();
        }
        if (input.tensor.dims.data() == other.tensors_[i].dims().data()) {
          input.tensor.dims = tensors_[i].dims();
        }
      }
    }
  }
  ProblemBuilder(ProblemBuilder&&) = default;
  ProblemBuilder& operator=(const ProblemBuilder&) = delete;
  ProblemBuilder& operator=(ProblemBuilder&&) = default;

  // Adds input `name` of `dtype` and `dims`: `values` row-major (each element converted to the
  // type exactly as given; empty: every element `fill`).
  ProblemBuilder& Input(std::string name, DType dtype, Dims dims, std::vector<double> values = {},
                        double fill = 0) {
    Tensor& t = tensors_.emplace_back(Tensor::Create(dtype, std::move(dims)).value());
    VisitElementType(dtype, [&](auto tag) {
      using T = CppType<decltype(tag)::value>;
      T* data = t.template Data<T>();
      for (std::int64_t i = 0; i < t.NumElements(); ++i) {
        const double v = values.empty() ? fill : values[static_cast<std::size_t>(i)];
        data[i] = RoundFromDouble<T>(v);
      }
    });
    Replace(name, t.view());
    return *this;
  }
  // Adds the same input with every element `value`.
  ProblemBuilder& Filled(std::string name, DType dtype, Dims dims, double value) {
    return Input(std::move(name), dtype, std::move(dims), {}, value);
  }
  ProblemBuilder& Remove(const std::string& name) {
    std::erase_if(problem_.inputs, [&](const NamedInput& i) { return i.name == name; });
    return *this;
  }
  ProblemBuilder& Attr(Attribute attribute) {
    std::erase_if(problem_.attributes,
                  [&](const Attribute& a) { return a.name == attribute.name; });
    problem_.attributes.push_back(std::move(attribute));
    return *this;
  }
  ProblemBuilder& Float(std::string name, float value) {
    return Attr(Attribute::Float(std::move(name), value));
  }
  ProblemBuilder& Int(std::string name, std::int64_t value) {
    return Attr(Attribute::Int(std::move(name), value));
  }
  ProblemBuilder& Version(int version) {
    problem_.version = version;
    return *this;
  }

  const Problem& problem() const { return problem_; }
  Problem& mutable_problem() { return problem_; }
  // The tensor of input `name` (which must exist).
  const Tensor& tensor(const std::string& name) const {
    const NamedInput* input = problem_.FindInput(name);
    for (const Tensor& t : tensors_) {
      if (t.raw_data() == input->tensor.data) return t;
    }
    return tensors_.front();
  }

 private:
  void Replace(const std::string& name, TensorView view) {
    for (NamedInput& input : problem_.inputs) {
      if (input.name == name) {
        input.tensor = view;
        return;
      }
    }
    problem_.inputs.push_back({name, view});
  }

  std::deque<Tensor> tensors_;  // Stable addresses: views point into them.
  Problem problem_;
};

}  // namespace mm::family::testing

#endif  // MM_FAMILY_TESTING_PROBLEM_BUILDER_H_
