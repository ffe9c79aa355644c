// Error-free transformations of doubles (Ogita, Rump and Oishi, "Accurate sum and dot product",
// 2005): a sum or product as its rounded value and the exact error of that rounding. A file that
// includes this must be compiled with -ffp-contract=off, so that the compiler never fuses or
// reorders the operations (the oracle's and the family's exact paths are).
#ifndef MM_ORACLE_ERROR_FREE_H_
#define MM_ORACLE_ERROR_FREE_H_

#include <cmath>

namespace mm {

// s = fl(a + b) and e with a + b = s + e exactly (Knuth's TwoSum; no overflow assumed).
inline void TwoSum(double a, double b, double& s, double& e) {
  s = a + b;
  const double z = s - a;
  e = (a - (s - z)) + (b - z);
}

// p = fl(a * b) and e with a * b = p + e exactly, through one fused multiply-add (exact unless
// the product underflows).
inline void TwoProduct(double a, double b, double& p, double& e) {
  p = a * b;
  e = std::fma(a, b, -p);
}

}  // namespace mm

#endif  // MM_ORACLE_ERROR_FREE_H_
