# einsum extension ops, lowered through their core lowering (dot_general chains,
# diagonals, reductions).
program {
  %0 = input "a" : f64[2, 3, 4]
  %1 = input "b" : f64[4, 5]
  %2 = input "c" : f64[5, 3]
  %3 = extension "einsum" "ijk,kl,lj->il;greedy"(%0, %1, %2) : f64[2, 5]
  %4 = input "m" : f64[3, 3]
  %5 = extension "einsum" "ii->;greedy"(%4) : f64[]
  %6 = extension "einsum" "ij,ji->ij;greedy"(%4, %4) : f64[3, 3]
  output %3, %5, %6
}
