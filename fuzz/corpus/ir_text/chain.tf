program {
  %0 = input "x" : f64[4]
  %1 = input "y" : f64[4]
  %2 = add(%0, %1) : f64[4]
  %3 = tanh(%2) : f64[4]
  %4 = reduce(%3) {dims=[0], reduce=sum} : f64[]
  output %4
}
