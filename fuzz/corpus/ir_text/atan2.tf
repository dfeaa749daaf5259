program {
  %0 = input "y" : f32[2, 3]
  %1 = input "x" : f32[2, 3]
  %2 = atan2(%0, %1) : f32[2, 3]
  %3 = mul(%2, %1) : f32[2, 3]
  output %2, %3
}
