// Each class of the shape catalogue does what its name says, checked on the shapes the catalogue
// generates (not on the class's own label): which operand broadcasts, which dimension is zero,
// which operand is 1-D. A class quietly rebuilt without its point (batch broadcast on B built
// without broadcasting) fails here, even where another class still covers the point.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "mm/conformance/loader/catalog.h"
#include "mm/conformance/loader/shape_classes.h"
#include "mm/engine/matmul_plan.h"

namespace mm::conformance {
namespace {

// One generated data set's problem, as the plan sees it.
struct GeneratedProblem {
  MatMulPlan plan;
  std::size_t a_rank = 0, b_rank = 0;

  // A batch axis where this operand has 1 (given or padded) against the other's more than 1.
  bool ABroadcasts() const { return Against(plan.a_batch_dims, plan.b_batch_dims, 1, 2); }
  bool BBroadcasts() const { return Against(plan.b_batch_dims, plan.a_batch_dims, 1, 2); }
  // A batch axis where A has `a` and B has `b` (b_at_least: B has at least that).
  bool BatchPair(std::int64_t a, std::int64_t b) const {
    for (std::size_t i = 0; i < plan.a_batch_dims.size(); ++i) {
      if (plan.a_batch_dims[i] == a && plan.b_batch_dims[i] == b) return true;
    }
    return false;
  }
  bool ZeroBatchDim() const {
    return std::find(plan.batch_dims.begin(), plan.batch_dims.end(), 0) != plan.batch_dims.end();
  }
  bool Batched() const { return !plan.batch_dims.empty(); }
  bool SameRank() const { return a_rank == b_rank; }
  bool NonEmpty() const { return plan.y_elements > 0; }

 private:
  static bool Against(const Dims& own, const Dims& other, std::int64_t value,
                      std::int64_t other_at_least) {
    for (std::size_t i = 0; i < own.size(); ++i) {
      if (own[i] == value && other[i] >= other_at_least) return true;
    }
    return false;
  }
};

using Definition = std::function<bool(const std::vector<GeneratedProblem>&)>;

// A class of one problem whose problem satisfies `holds`.
Definition One(std::function<bool(const GeneratedProblem&)> holds) {
  return [holds](const std::vector<GeneratedProblem>& p) { return p.size() == 1 && holds(p[0]); };
}

// Every class's definition, written from its name and description.
const std::map<std::string, Definition>& ClassDefinitions() {
  using P = const GeneratedProblem&;
  static const std::map<std::string, Definition> definitions = {
      {"1d_1d", One([](P p) { return p.a_rank == 1 && p.b_rank == 1 && p.plan.k > 0; })},
      {"1d_2d", One([](P p) { return p.a_rank == 1 && p.b_rank == 2 && p.NonEmpty(); })},
      {"1d_nd", One([](P p) { return p.a_rank == 1 && p.b_rank > 2 && p.plan.batch > 1; })},
      {"2d_1d", One([](P p) { return p.a_rank == 2 && p.b_rank == 1 && p.NonEmpty(); })},
      {"nd_1d", One([](P p) { return p.a_rank > 2 && p.b_rank == 1 && p.plan.batch > 1; })},
      {"2d", One([](P p) {
         return p.a_rank == 2 && p.b_rank == 2 && p.plan.m != p.plan.n && p.plan.k > 0 &&
                p.NonEmpty();
       })},
      {"k1", One([](P p) { return p.plan.k == 1 && p.NonEmpty(); })},
      {"batch_equal", One([](P p) {
         return p.SameRank() && p.a_rank > 2 && p.plan.a_batch_dims == p.plan.b_batch_dims &&
                p.plan.batch > 1;
       })},
      {"batch_broadcast_a", One([](P p) {
         return p.SameRank() && p.ABroadcasts() && !p.BBroadcasts() && p.NonEmpty();
       })},
      {"batch_broadcast_b", One([](P p) {
         return p.SameRank() && p.BBroadcasts() && !p.ABroadcasts() && p.NonEmpty();
       })},
      {"batch_broadcast_both",
       One([](P p) { return p.SameRank() && p.ABroadcasts() && p.BBroadcasts() && p.NonEmpty(); })},
      {"nd_2d", One([](P p) { return p.a_rank > 2 && p.b_rank == 2 && p.plan.batch > 1; })},
      {"2d_nd", One([](P p) { return p.a_rank == 2 && p.b_rank > 2 && p.plan.batch > 1; })},
      {"rank_mismatch_a",
       One([](P p) { return p.a_rank > p.b_rank && p.b_rank > 2 && p.NonEmpty(); })},
      {"rank_mismatch_b",
       One([](P p) { return p.b_rank > p.a_rank && p.a_rank > 2 && p.NonEmpty(); })},
      {"rank13", One([](P p) {
         return std::max(p.a_rank, p.b_rank) == 13 && p.ABroadcasts() && p.BBroadcasts();
       })},
      {"k0_1d_1d", One([](P p) { return p.plan.k == 0 && p.a_rank == 1 && p.b_rank == 1; })},
      {"k0_1d_2d",
       One([](P p) { return p.plan.k == 0 && p.a_rank == 1 && p.b_rank == 2 && p.NonEmpty(); })},
      {"k0_2d_1d",
       One([](P p) { return p.plan.k == 0 && p.a_rank == 2 && p.b_rank == 1 && p.NonEmpty(); })},
      {"k0_2d",
       One([](P p) { return p.plan.k == 0 && p.a_rank == 2 && p.b_rank == 2 && p.NonEmpty(); })},
      {"k0_batch", One([](P p) {
         return p.plan.k == 0 && p.ABroadcasts() && p.BBroadcasts() && p.NonEmpty();
       })},
      {"m0_2d", One([](P p) {
         return p.plan.m == 0 && p.a_rank == 2 && p.b_rank == 2 && p.plan.k > 0 && p.plan.n > 0;
       })},
      {"m0_2d_1d",
       One([](P p) { return p.plan.m == 0 && p.a_rank == 2 && p.b_rank == 1 && p.plan.k > 0; })},
      {"m0_batch",
       One([](P p) { return p.plan.m == 0 && p.plan.batch > 1 && p.plan.k > 0 && p.plan.n > 0; })},
      {"m0_k0", One([](P p) { return p.plan.m == 0 && p.plan.k == 0 && p.plan.n > 0; })},
      {"n0_2d", One([](P p) {
         return p.plan.n == 0 && p.a_rank == 2 && p.b_rank == 2 && p.plan.m > 0 && p.plan.k > 0;
       })},
      {"n0_1d_2d",
       One([](P p) { return p.plan.n == 0 && p.a_rank == 1 && p.b_rank == 2 && p.plan.k > 0; })},
      {"n0_batch",
       One([](P p) { return p.plan.n == 0 && p.plan.batch > 1 && p.plan.m > 0 && p.plan.k > 0; })},
      {"batch0_vs_1", One([](P p) { return p.SameRank() && p.BatchPair(0, 1); })},
      {"batch1_vs_0", One([](P p) { return p.SameRank() && p.BatchPair(1, 0); })},
      {"batch0_vs_0", One([](P p) { return p.SameRank() && p.BatchPair(0, 0); })},
      {"batch0_vs_none", One([](P p) { return p.b_rank == 2 && p.ZeroBatchDim(); })},
      {"batch0_1d", One([](P p) { return p.a_rank == 1 && p.ZeroBatchDim(); })},
      {"batch0_k0", One([](P p) { return p.ZeroBatchDim() && p.plan.k == 0; })},
      {"seq_empty_after_nonempty",
       [](const std::vector<GeneratedProblem>& p) {
         return p.size() == 3 && p[0].NonEmpty() && p[1].plan.m == 0 && p[1].plan.n > 0 &&
                p[2].plan.n == 0 && p[2].plan.m > 0;
       }},
      {"seq_k0_after_nonempty",
       [](const std::vector<GeneratedProblem>& p) {
         return p.size() == 2 && p[0].plan.k > 0 && p[0].NonEmpty() && p[1].plan.k == 0 &&
                p[1].NonEmpty() && p[1].a_rank == 2;
       }},
      {"seq_k0_1d_after_nonempty",
       [](const std::vector<GeneratedProblem>& p) {
         return p.size() == 2 && p[0].a_rank == 1 && p[1].a_rank == 1 && p[0].plan.k > 0 &&
                p[1].plan.k == 0 && p[1].NonEmpty();
       }},
      {"seq_batch0_after_nonempty",
       [](const std::vector<GeneratedProblem>& p) {
         return p.size() == 2 && p[0].NonEmpty() && p[0].BatchPair(2, 1) && p[1].BatchPair(0, 1);
       }},
  };
  return definitions;
}

// The class of a catalogue case: "mm_shape_<class>_<dtype>".
std::string ClassOfCase(const std::string& name) {
  const std::string rest = name.substr(kShapeCasePrefix.size());
  return rest.substr(0, rest.rfind('_'));
}

TEST(ShapeClassDefinitionTest, EveryClassHasADefinition) {
  std::set<std::string> classes, defined;
  for (const ShapeClass& c : ShapeClasses()) classes.insert(c.name);
  for (const auto& [name, definition] : ClassDefinitions()) defined.insert(name);
  EXPECT_EQ(classes, defined);
}

TEST(ShapeClassDefinitionTest, EveryCataloguedCaseDoesWhatItsClassNameSays) {
  const Catalog catalog = Discover({}, {});
  std::set<std::string> seen;
  for (const CaseEntry& entry : catalog.cases) {
    if (!entry.name.starts_with(kShapeCasePrefix)) continue;
    ASSERT_TRUE(entry.model.has_value()) << entry.name << ": " << entry.error;
    const std::string class_name = ClassOfCase(entry.name);
    const auto definition = ClassDefinitions().find(class_name);
    ASSERT_NE(definition, ClassDefinitions().end()) << entry.name;
    std::vector<GeneratedProblem> problems;
    for (std::size_t d = 0; d < entry.data_sets.size(); ++d) {
      const auto set = LoadCaseDataSet(entry, d);
      ASSERT_TRUE(set.ok()) << entry.name << ": " << set.status();
      const auto plan = PlanMatMul({set->a.dtype(), set->a.dims(), set->b.dims()});
      ASSERT_TRUE(plan.ok()) << entry.name << ": " << plan.status();
      problems.push_back({*plan, set->a.dims().size(), set->b.dims().size()});
    }
    EXPECT_TRUE(definition->second(problems))
        << entry.name << " does not do what the class '" << class_name << "' names";
    seen.insert(class_name);
  }
  EXPECT_EQ(seen.size(), ShapeClasses().size());
}

}  // namespace
}  // namespace mm::conformance
