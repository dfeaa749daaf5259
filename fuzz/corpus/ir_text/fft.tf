program {
  symbol b <= 16
  %0 = input "z" : c128[b, 6, 4]
  %1 = extension "fft" "c2c;norm=ortho;axes=2,1"(%0) : c128[b, 6, 4]
  %2 = extension "fft" "c2r;norm=backward;axes=1;n=10"(%1) : f64[b, 10, 4]
  %3 = extension "fft" "r2c;norm=forward;axes=2"(%2) : c128[b, 10, 3]
  %4 = input "y" : f32[3, 5]
  %5 = extension "fft" "r2c;norm=backward;axes=0,1"(%4) : c64[3, 3]
  %6 = extension "fft" "c2c_inverse;norm=forward;axes=0"(%5) : c64[3, 3]
  output %3, %6
}
