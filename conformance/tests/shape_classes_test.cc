// The shape-class catalogue: every class in every dtype, numpy's shapes, exact expected outputs,
// sequences that put an empty problem after a non-empty one, and judgements that pass the
// reference and fail a planted broadcast bug. (The engine answers K = 0 above every backend, so a
// K = 0 bug can show only in a runtime's outputs: mm-fuzz's export-builtin test plants one.)
#include "mm/conformance/loader/shape_classes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "mm/backends/backend_list.h"
#include "mm/conformance/loader/catalog.h"
#include "mm/conformance/running/runner.h"
#include "mm/conformance/self_check/planted_backends.h"
#include "mm/conformance/session/run.h"
#include "mm/engine/matmul_plan.h"
#include "mm/oracle/error_bound.h"

namespace mm::conformance {
namespace {

// numpy.matmul's output shapes, worked out by hand from its rules (one list per class, in data
// set order), independently of engine/matmul_plan.
const std::map<std::string, std::vector<Dims>>& NumpyShapes() {
  static const std::map<std::string, std::vector<Dims>> shapes = {
      {"1d_1d", {{}}},
      {"1d_2d", {{2}}},
      {"1d_nd", {{2, 2}}},
      {"2d_1d", {{2}}},
      {"nd_1d", {{2, 2}}},
      {"2d", {{2, 4}}},
      {"k1", {{2, 3}}},
      {"batch_equal", {{2, 2, 2}}},
      {"batch_broadcast_a", {{2, 2, 2}}},
      {"batch_broadcast_b", {{2, 2, 2}}},
      {"batch_broadcast_both", {{2, 3, 2, 2}}},
      {"nd_2d", {{2, 2, 2}}},
      {"2d_nd", {{2, 2, 2}}},
      {"rank_mismatch_a", {{2, 3, 2, 2}}},
      {"rank_mismatch_b", {{2, 3, 2, 2}}},
      {"rank13", {{2, 2, 1, 2, 1, 1, 1, 1, 1, 2, 2, 2, 2}}},
      {"k0_1d_1d", {{}}},
      {"k0_1d_2d", {{2}}},
      {"k0_2d_1d", {{2}}},
      {"k0_2d", {{2, 3}}},
      {"k0_batch", {{2, 3, 2, 2}}},
      {"m0_2d", {{0, 2}}},
      {"m0_2d_1d", {{0}}},
      {"m0_batch", {{2, 0, 2}}},
      {"m0_k0", {{0, 2}}},
      {"n0_2d", {{2, 0}}},
      {"n0_1d_2d", {{0}}},
      {"n0_batch", {{2, 2, 0}}},
      {"batch0_vs_1", {{0, 2, 2}}},
      {"batch1_vs_0", {{0, 2, 2}}},
      {"batch0_vs_0", {{0, 2, 2}}},
      {"batch0_vs_none", {{0, 2, 2}}},
      {"batch0_1d", {{0, 2}}},
      {"batch0_k0", {{0, 2, 2}}},
      {"seq_empty_after_nonempty", {{2, 2}, {0, 2}, {2, 0}}},
      {"seq_k0_after_nonempty", {{2, 2}, {2, 2}}},
      {"seq_k0_1d_after_nonempty", {{2}, {2}}},
      {"seq_batch0_after_nonempty", {{2, 2, 2}, {0, 2, 2}}},
  };
  return shapes;
}

// Element `i` of `t` as a double (exact for every value the catalogue holds).
double At(const Tensor& t, std::int64_t i) {
  return VisitDType(t.dtype(), [&](auto tag) {
    return static_cast<double>(t.Data<CppType<decltype(tag)::value>>()[i]);
  });
}

// The class of a case name by the documented rule: strip "mm_shape_" and the last "_<dtype>".
std::string ClassByNameRule(const std::string& name) {
  const std::string rest = name.substr(kShapeCasePrefix.size());
  return rest.substr(0, rest.rfind('_'));
}

TEST(ShapeClassesTest, EveryClassComesInEveryDtypeUnderANameThatCarriesBoth) {
  const std::vector<ShapeCase> cases = ShapeCases();
  ASSERT_EQ(cases.size(), ShapeClasses().size() * kAllDTypes.size());
  std::set<std::pair<std::string, DType>> seen;
  for (const ShapeCase& c : cases) {
    EXPECT_EQ(ClassByNameRule(c.name), c.shape_class->name) << c.name;
    EXPECT_TRUE(c.name.ends_with("_" + std::string(DTypeName(c.dtype)))) << c.name;
    EXPECT_TRUE(seen.insert({c.shape_class->name, c.dtype}).second) << c.name;
    const auto found = FindShapeCase(c.name);
    ASSERT_TRUE(found.has_value()) << c.name;
    EXPECT_EQ(found->shape_class, c.shape_class);
    EXPECT_EQ(found->dtype, c.dtype);
  }
  EXPECT_FALSE(FindShapeCase("mm_shape_no_such_class_float").has_value());
  EXPECT_FALSE(FindShapeCase("test_matmul_2d").has_value());
}

TEST(ShapeClassesTest, EveryDataSetHasTheShapesNumpyGives) {
  ASSERT_EQ(NumpyShapes().size(), ShapeClasses().size());
  for (const ShapeCase& c : ShapeCases()) {
    const auto it = NumpyShapes().find(c.shape_class->name);
    ASSERT_NE(it, NumpyShapes().end()) << c.shape_class->name;
    ASSERT_EQ(it->second.size(), c.shape_class->problems.size()) << c.name;
    for (std::size_t d = 0; d < it->second.size(); ++d) {
      const ShapePair& p = c.shape_class->problems[d];
      const auto plan = PlanMatMul({c.dtype, p.a, p.b});
      ASSERT_TRUE(plan.ok()) << c.name << ": " << plan.status();
      EXPECT_EQ(plan->y_dims, it->second[d]) << c.name << " data set " << d;
      const auto set = ShapeCaseDataSet(c, d);
      ASSERT_TRUE(set.ok()) << c.name << ": " << set.status();
      EXPECT_EQ(set->name, "test_data_set_" + std::to_string(d));
      EXPECT_EQ(set->a.dims(), p.a);
      EXPECT_EQ(set->b.dims(), p.b);
      EXPECT_EQ(set->y.dims(), it->second[d]) << c.name;
      EXPECT_EQ(set->y.dtype(), c.dtype);
    }
    EXPECT_EQ(ShapeCaseDataSet(c, c.shape_class->problems.size()).status().code(),
              StatusCode::kOutOfRange);
  }
}

// What the issue asks the catalogue to cover, found in the plans (not in the names), so a class
// removed or reshaped leaves a hole this test names.
TEST(ShapeClassesTest, CoversEveryShapeClassOfNumpyMatmul) {
  std::set<std::string> covered;
  for (const ShapeClass& c : ShapeClasses()) {
    for (std::size_t d = 0; d < c.problems.size(); ++d) {
      const MatMulPlan p = PlanMatMul({DType::kFloat, c.problems[d].a, c.problems[d].b}).value();
      const std::size_t ra = p.desc.a_dims.size(), rb = p.desc.b_dims.size();
      const bool batched = !p.batch_dims.empty();
      auto has = [](const Dims& dims, std::int64_t v) {
        return std::find(dims.begin(), dims.end(), v) != dims.end();
      };
      if (ra == 1 && rb == 1) covered.insert(p.k == 0 ? "k0 1d x 1d" : "1d x 1d");
      if (ra == 1 && rb > 2) covered.insert("1d x nd");
      if (ra > 2 && rb == 1) covered.insert("nd x 1d");
      if (ra == 2 && rb == 2 && p.k > 0 && p.y_elements > 0) covered.insert("2d");
      if (p.k == 1) covered.insert("k1");
      if (batched && p.desc.a_dims.size() == p.desc.b_dims.size() &&
          p.a_batch_dims == p.b_batch_dims && p.batch > 0) {
        covered.insert("batch equal");
      }
      if (batched && has(p.a_batch_dims, 1) && !has(p.b_batch_dims, 1) && p.batch > 0) {
        covered.insert("broadcast from a");
      }
      if (batched && has(p.b_batch_dims, 1) && !has(p.a_batch_dims, 1) && p.batch > 0) {
        covered.insert("broadcast from b");
      }
      if (batched && ra == rb && p.batch > 0) {
        for (std::size_t i = 0; i < p.batch_dims.size(); ++i) {
          for (std::size_t j = 0; j < p.batch_dims.size(); ++j) {
            if (p.a_batch_dims[i] == 1 && p.b_batch_dims[i] > 1 && p.b_batch_dims[j] == 1 &&
                p.a_batch_dims[j] > 1) {
              covered.insert("broadcast both");
            }
          }
        }
      }
      if (ra > 2 && rb > 2 && ra != rb) covered.insert("rank mismatch");
      if (std::max(ra, rb) == 13) covered.insert("rank 13");
      if (p.k == 0 && p.y_elements > 0) {
        covered.insert(ra == 1 ? "k0 1d a" : rb == 1 ? "k0 1d b" : batched ? "k0 batch" : "k0 2d");
      }
      if (p.m == 0 && p.k > 0) covered.insert(rb == 1 ? "m0 x 1d" : batched ? "m0 batch" : "m0");
      if (p.m == 0 && p.k == 0) covered.insert("m0 k0");
      if (p.n == 0) covered.insert(ra == 1 ? "n0 1d" : batched ? "n0 batch" : "n0");
      for (std::size_t i = 0; i < p.batch_dims.size(); ++i) {
        const std::int64_t a = p.a_batch_dims[i], b = p.b_batch_dims[i];
        if (a == 0 && b == 1) covered.insert(ra == rb ? "batch 0 vs 1" : "batch 0 vs missing");
        if (a == 1 && b == 0) covered.insert(ra == 1 ? "1d vs batch 0" : "batch 1 vs 0");
        if (a == 0 && b == 0) covered.insert("batch 0 vs 0");
      }
      if (c.sequence() && d > 0) {
        covered.insert(p.k == 0 ? (ra == 1 ? "k0 1d after nonempty" : "k0 after nonempty")
                                : "empty after nonempty");
      }
    }
  }
  EXPECT_THAT(covered, ::testing::IsSupersetOf<std::set<std::string>>({"1d x 1d",
                                                                       "1d x nd",
                                                                       "nd x 1d",
                                                                       "2d",
                                                                       "k1",
                                                                       "batch equal",
                                                                       "broadcast from a",
                                                                       "broadcast from b",
                                                                       "broadcast both",
                                                                       "rank mismatch",
                                                                       "rank 13",
                                                                       "k0 1d x 1d",
                                                                       "k0 1d a",
                                                                       "k0 1d b",
                                                                       "k0 2d",
                                                                       "k0 batch",
                                                                       "m0",
                                                                       "m0 x 1d",
                                                                       "m0 batch",
                                                                       "m0 k0",
                                                                       "n0",
                                                                       "n0 1d",
                                                                       "n0 batch",
                                                                       "batch 0 vs 1",
                                                                       "batch 1 vs 0",
                                                                       "batch 0 vs 0",
                                                                       "batch 0 vs missing",
                                                                       "1d vs batch 0",
                                                                       "k0 after nonempty",
                                                                       "k0 1d after nonempty",
                                                                       "empty after nonempty"}));
}

TEST(ShapeClassesTest, SequencesAreOneSymbolicModelWithANonEmptyProblemFirst) {
  int sequences = 0;
  for (const ShapeCase& c : ShapeCases()) {
    const MatMulModel model = ShapeCaseModel(c);
    EXPECT_EQ(model.matmul_version, 13);
    EXPECT_THAT(model.allowed_dtypes, ::testing::ElementsAre(c.dtype));
    for (const DeclaredTensor* t : {&model.a, &model.b, &model.y}) {
      EXPECT_TRUE(t->has_shape);
      for (const auto& dim : t->dims) EXPECT_EQ(dim.has_value(), !c.shape_class->sequence());
    }
    if (!c.shape_class->sequence()) continue;
    ++sequences;
    const auto& problems = c.shape_class->problems;
    const MatMulPlan first = PlanMatMul({c.dtype, problems[0].a, problems[0].b}).value();
    EXPECT_GT(first.y_elements, 0) << c.name;
    EXPECT_GT(first.k, 0) << c.name;
    for (std::size_t d = 1; d < problems.size(); ++d) {
      const MatMulPlan later = PlanMatMul({c.dtype, problems[d].a, problems[d].b}).value();
      EXPECT_TRUE(later.y_elements == 0 || later.k == 0) << c.name << " data set " << d;
      EXPECT_EQ(problems[d].a.size(), problems[0].a.size()) << c.name << ": one model, one rank";
      EXPECT_EQ(problems[d].b.size(), problems[0].b.size()) << c.name;
    }
  }
  EXPECT_GE(sequences, 4 * static_cast<int>(kAllDTypes.size()));
}

// Y is the oracle's and exact in its dtype (both rules then agree), and A and B are not constant,
// so a wrong index reads another value.
TEST(ShapeClassesTest, ExpectedOutputsAreExactAndInputsVary) {
  for (const ShapeCase& c : ShapeCases()) {
    for (std::size_t d = 0; d < c.shape_class->problems.size(); ++d) {
      const DataSet set = ShapeCaseDataSet(c, d).value();
      const MatMulPlan plan = PlanMatMul({c.dtype, set.a.dims(), set.b.dims()}).value();
      const OracleResult oracle = ExactMatMul(plan, set.a.view(), set.b.view()).value();
      ASSERT_EQ(oracle.y.NumBytes(), set.y.NumBytes());
      EXPECT_EQ(std::memcmp(oracle.y.raw_data(), set.y.raw_data(), set.y.NumBytes()), 0) << c.name;
      for (std::size_t i = 0; i < oracle.exact.size(); ++i) {
        EXPECT_EQ(oracle.exact[i], At(set.y, static_cast<std::int64_t>(i)))
            << c.name << " element " << i << " is not exact in " << DTypeName(c.dtype);
      }
      for (const Tensor* t : {&set.a, &set.b}) {
        if (t->NumElements() < 2) continue;
        std::set<double> values;
        for (std::int64_t i = 0; i < t->NumElements(); ++i) {
          values.insert(At(*t, i));
        }
        EXPECT_GE(values.size(), std::min<std::size_t>(3, t->NumElements())) << c.name;
      }
    }
  }
}

TEST(ShapeClassesTest, TheCatalogHoldsThemAsBuiltInsUnlessLeftOut) {
  const std::size_t count = ShapeCases().size();
  auto shape_cases_in = [](const Catalog& catalog) {
    std::size_t n = 0;
    for (const CaseEntry& e : catalog.cases) {
      if (e.name.starts_with(kShapeCasePrefix)) {
        ++n;
        EXPECT_TRUE(e.builtin()) << e.name;
        EXPECT_TRUE(e.model.has_value()) << e.name << ": " << e.error;
      }
    }
    return n;
  };
  EXPECT_EQ(shape_cases_in(Discover({}, {})), count);
  DiscoverOptions no_builtin;
  no_builtin.builtin = false;
  EXPECT_EQ(shape_cases_in(Discover({}, no_builtin)), 0u);
  DiscoverOptions examples_only;
  examples_only.shape_classes = false;
  const Catalog examples = Discover({}, examples_only);
  EXPECT_EQ(shape_cases_in(examples), 0u);
  EXPECT_FALSE(examples.cases.empty());

  DiscoverOptions one;
  one.select = [](const std::string& name) {
    return name == "mm_shape_seq_empty_after_nonempty_bfloat16";
  };
  const Catalog catalog = Discover({}, one);
  ASSERT_EQ(catalog.cases.size(), 1u);
  const CaseEntry& entry = catalog.cases[0];
  ASSERT_EQ(entry.data_sets.size(), 3u);
  for (std::size_t d = 0; d < 3; ++d) {
    EXPECT_EQ(entry.data_sets.name(d), "test_data_set_" + std::to_string(d));
    const auto set = LoadCaseDataSet(entry, d);
    ASSERT_TRUE(set.ok()) << set.status();
    EXPECT_EQ(set->y.dtype(), DType::kBFloat16);
  }
  EXPECT_EQ(LoadCaseDataSet(entry, 0)->y.dims(), (Dims{2, 2}));
  EXPECT_EQ(LoadCaseDataSet(entry, 1)->y.dims(), (Dims{0, 2}));
}

// The catalogue run as the gate runs it, in process: `backend`'s results by class.
std::map<std::string, std::vector<Result>> RunCatalogue(const BackendRegistry& registry,
                                                        const std::string& backend) {
  DiscoverOptions only_shapes;
  only_shapes.select = [](const std::string& name) { return name.starts_with(kShapeCasePrefix); };
  RunOptions run;
  run.backends = {backend};
  run.isolate = false;
  std::map<std::string, std::vector<Result>> by_class;
  for (Result& r : RunConformance(Discover({}, only_shapes), registry, run)) {
    by_class[ClassByNameRule(r.case_name)].push_back(std::move(r));
  }
  return by_class;
}

bool AllPass(const std::vector<Result>& results) {
  return std::all_of(results.begin(), results.end(),
                     [](const Result& r) { return r.verdict == Verdict::kPass; });
}
bool AnyFails(const std::vector<Result>& results) {
  return std::any_of(results.begin(), results.end(),
                     [](const Result& r) { return r.verdict == Verdict::kFail; });
}

TEST(ShapeClassesTest, TheReferenceBackendPassesEveryCase) {
  const auto by_class = RunCatalogue(BuiltinBackends(), "reference");
  ASSERT_EQ(by_class.size(), ShapeClasses().size());
  std::size_t results = 0;
  for (const auto& [name, rs] : by_class) {
    results += rs.size();
    for (const Result& r : rs) {
      EXPECT_EQ(r.verdict, Verdict::kPass) << r.case_name << " " << r.data_set << ": " << r.message;
    }
  }
  std::size_t data_sets = 0;
  for (const ShapeCase& c : ShapeCases()) data_sets += c.shape_class->problems.size();
  EXPECT_EQ(results, data_sets);
}

TEST(ShapeClassesTest, ABatchReadAtTheWrongOffsetFailsTheTwoSidedBroadcasts) {
  const auto& planted = self_check::PlantedBackendOf(self_check::Fault::kWrongBatchOffset);
  const auto by_class = RunCatalogue(self_check::PlantedRegistry(planted), planted.name);
  for (const char* name : {"batch_broadcast_both", "rank13"}) {
    EXPECT_TRUE(AnyFails(by_class.at(name))) << name;
  }
  for (const char* name : {"batch_equal", "batch_broadcast_a", "2d", "1d_nd"}) {
    EXPECT_TRUE(AllPass(by_class.at(name))) << name;
  }
}

}  // namespace
}  // namespace mm::conformance
