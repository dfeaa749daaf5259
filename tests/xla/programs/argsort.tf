# argsort: a stable StableHLO sort of the values and an iota with numpy's less-than
# (ties among the integers in [-7, 7] and the bools keep their order; log of the
# negative inputs gives NaN, last; complex values lexicographically, the ones with a NaN
# real part after the others).
program {
  %0 = input "x" : f64[3, 5]
  %1 = input "i" : i32[4, 9]
  %2 = input "b" : bool[10]
  %3 = input "z" : c128[3, 5]
  %4 = log(%0) : f64[3, 5]
  %5 = argsort(%4) {axis=1} : i64[3, 5]
  %6 = argsort(%0) {axis=0} : i64[3, 5]
  %7 = argsort(%1) {axis=1} : i64[4, 9]
  %8 = argsort(%1) {axis=0} : i64[4, 9]
  %9 = argsort(%2) {axis=0} : i64[10]
  %10 = convert(%4) {dtype=c128} : c128[3, 5]
  %11 = add(%10, %3) : c128[3, 5]
  %12 = argsort(%11) {axis=1} : i64[3, 5]
  %13 = argsort(%3) {axis=0} : i64[3, 5]
  output %5, %6, %7, %8, %9, %12, %13
}
