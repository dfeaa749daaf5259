# numpy's any / all as max / min reductions of bools (empty axes included: any of nothing
# is false, all of nothing true), conj / real / imag of integer and bool values, and
# products of bools (ORs of ANDs, numpy's matmul of bools).
program {
  %0 = input "p" : bool[3, 4]
  %1 = reduce(%0) {reduce=max, dims=[1]} : bool[3]
  %2 = reduce(%0) {reduce=min, dims=[0]} : bool[4]
  %3 = reduce(%0) {reduce=min, dims=[0, 1]} : bool[]
  %4 = input "e" : bool[0, 2]
  %5 = reduce(%4) {reduce=max, dims=[0]} : bool[2]
  %6 = reduce(%4) {reduce=min, dims=[0]} : bool[2]
  %7 = input "a" : i32[5]
  %8 = real(%7) : i32[5]
  %9 = imag(%7) : i32[5]
  %10 = conj(%7) : i32[5]
  %11 = real(%0) : bool[3, 4]
  %12 = imag(%0) : bool[3, 4]
  %13 = conj(%0) : bool[3, 4]
  %14 = input "q" : bool[4, 2]
  %15 = dot_general(%0, %14) {lhs_contract=[1], rhs_contract=[0]} : bool[3, 2]
  %16 = dot_general(%0, %0) {lhs_batch=[0], rhs_batch=[0], lhs_contract=[1], rhs_contract=[1]} : bool[3]
  output %1, %2, %3, %5, %6, %8, %9, %10, %11, %12, %13, %15, %16
}
