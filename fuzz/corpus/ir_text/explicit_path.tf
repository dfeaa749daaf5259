program {
  %0 = input "a" : f64[3, 4]
  %1 = input "b" : f64[4, 5]
  %2 = input "c" : f64[5, 2]
  %3 = extension "einsum" "ij,jk,kl->il;explicit:1-2,0-3"(%0, %1, %2) : f64[3, 2]

  output %3
}
