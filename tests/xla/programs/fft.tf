# Fourier transforms: c2c both ways over one, two and four axes, r2c and c2r with norms,
# c2r of spectra that are not Hermitian (random complex input: FFTW's meaning).
program {
  %0 = input "z" : c128[4, 6, 2, 3]
  %1 = extension "fft" "c2c;norm=backward;axes=1"(%0) : c128[4, 6, 2, 3]
  %2 = extension "fft" "c2c_inverse;norm=ortho;axes=2,0"(%0) : c128[4, 6, 2, 3]
  %3 = extension "fft" "c2c;norm=forward;axes=0,1,2,3"(%0) : c128[4, 6, 2, 3]
  %4 = input "x" : f64[5, 6]
  %5 = extension "fft" "r2c;norm=ortho;axes=0"(%4) : c128[3, 6]
  %6 = extension "fft" "r2c;norm=backward;axes=1,0"(%4) : c128[3, 6]
  %7 = extension "fft" "c2r;norm=backward;axes=1,0;n=5"(%6) : f64[5, 6]
  %8 = input "y" : f32[2, 3, 4, 5]
  %9 = extension "fft" "r2c;norm=forward;axes=0,1,2,3"(%8) : c64[2, 3, 4, 3]
  %10 = extension "fft" "c2r;norm=ortho;axes=0,1,2,3;n=5"(%9) : f32[2, 3, 4, 5]
  %11 = input "w" : c128[3, 4, 2]
  %12 = extension "fft" "c2r;norm=ortho;axes=2,1,0;n=4"(%11) : f64[4, 4, 2]
  %13 = extension "fft" "c2r;norm=forward;axes=0;n=5"(%11) : f64[5, 4, 2]
  output %1, %2, %3, %5, %6, %7, %9, %10, %12, %13
}
