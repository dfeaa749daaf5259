# Reductions, dot_general (batch, several contracting axes, outer product), diagonals,
# triangles.
program {
  %0 = input "x" : f64[3, 4, 5]
  %1 = reduce(%0) {reduce=sum, dims=[1]} : f64[3, 5]
  %2 = reduce(%0) {reduce=prod, dims=[0, 2]} : f64[4]
  %3 = reduce(%0) {reduce=max, dims=[0, 1, 2]} : f64[]
  %4 = reduce(%0) {reduce=min, dims=[2]} : f64[3, 4]
  %5 = input "y" : f64[5, 3, 2]
  %6 = dot_general(%0, %5) {lhs_batch=[0], rhs_batch=[1], lhs_contract=[2], rhs_contract=[0]} : f64[3, 4, 2]
  %7 = dot_general(%0, %0) {lhs_batch=[], rhs_batch=[], lhs_contract=[0, 2], rhs_contract=[0, 2]} : f64[4, 4]
  %8 = input "v" : f64[3]
  %9 = dot_general(%8, %8) {lhs_batch=[], rhs_batch=[], lhs_contract=[], rhs_contract=[]} : f64[3, 3]
  %10 = input "m" : c128[2, 4, 4]
  %11 = extract_diag(%10) {axis=1} : c128[2, 4]
  %12 = embed_diag(%11) {axis=1} : c128[2, 4, 4]
  %13 = tril(%10) {k=0} : c128[2, 4, 4]
  %14 = triu(%10) {k=1} : c128[2, 4, 4]
  %15 = tril(%0) {k=-1} : f64[3, 4, 5]
  %16 = extract_diag(%7) {axis=0} : f64[4]
  %17 = reduce(%10) {reduce=sum, dims=[0, 2]} : c128[4]
  %18 = dot_general(%10, %10) {lhs_batch=[0], rhs_batch=[0], lhs_contract=[2], rhs_contract=[1]} : c128[2, 4, 4]
  output %1, %2, %3, %4, %6, %7, %9, %11, %12, %13, %14, %15, %16, %17, %18
}
