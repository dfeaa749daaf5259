program {
  %0 = input "x" : f64[3, 4]
  %1 = argsort(%0) {axis=1} : i64[3, 4]
  %2 = reshape(%0) {shape=[12]} : f64[12]
  %3 = argsort(%2) {axis=0} : i64[12]
  output %1, %3
}
