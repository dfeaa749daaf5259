program {
  symbol n <= 8
  symbol _z0 = max(0, 3*n - 2)
  %0 = input "x" : f64[n]
  %1 = input "v" : f64[]
  %2 = pad(%0, %1) {low=[1], high=[0], interior=[2]} : f64[_z0 + 1]
  output %2
}
