# argsort: a stable StableHLO sort of the values and an iota with a NaN-last less-than
# (ties among the integers in [-7, 7] and the bools keep their order; log of the
# negative inputs gives NaN).
program {
  %0 = input "x" : f64[3, 5]
  %1 = input "i" : i32[4, 9]
  %2 = input "b" : bool[10]
  %3 = log(%0) : f64[3, 5]
  %4 = argsort(%3) {axis=1} : i64[3, 5]
  %5 = argsort(%0) {axis=0} : i64[3, 5]
  %6 = argsort(%1) {axis=1} : i64[4, 9]
  %7 = argsort(%1) {axis=0} : i64[4, 9]
  %8 = argsort(%2) {axis=0} : i64[10]
  output %4, %5, %6, %7, %8
}
