program {
  symbol n <= 100
  symbol m
  %0 = input "x" : f64[n, 3]
  %1 = input "y" : f64[m, 3]
  %2 = transpose(%0) {dims=[1, 0]} : f64[3, n]
  %3 = concatenate(%0, %1) {axis=0} : f64[n + m, 3]
  %4 = extension "einsum" "ij,kj->ik;greedy"(%0, %1) : f64[n, m]

  output %3, %4
}
