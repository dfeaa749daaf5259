# numpy take with clamped indices and its adjoint (indices in [-7, 7]: some out of range).
program {
  %0 = input "x" : f64[3, 5, 2]
  %1 = input "i" : i64[2, 3]
  %2 = gather(%0, %1) {axis=1} : f64[3, 2, 3, 2]
  %3 = input "u" : f64[3, 2, 3, 2]
  %4 = scatter_add(%0, %1, %3) {axis=1} : f64[3, 5, 2]
  %5 = input "k" : i32[4]
  %6 = gather(%0, %5) {axis=0} : f64[4, 5, 2]
  %7 = input "s" : i32[]
  %8 = gather(%0, %7) {axis=2} : f64[3, 5]
  %9 = input "b" : bool[3, 5, 2]
  %10 = input "bu" : bool[3, 2, 3, 2]
  %11 = scatter_add(%9, %1, %10) {axis=1} : bool[3, 5, 2]
  output %2, %4, %6, %8, %11
}
