// REQUIRES: avx2, fma
// UNSUPPORTED: avx512f
// RUN: rlx-opt %s --lower-to-llvm --emit=asm | filecheck %s

// f32 erf (here inside GELU) is expanded in f32 only: the loop is vectorized with 256-bit
// FMAs on 8 lanes, with no conversion to f64, no f64 arithmetic and no libm call.

func.func @main(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %y = rlx.gelu %x : (tensor<64x256xf32>) -> tensor<64x256xf32>
  func.return %y : tensor<64x256xf32>
}

// CHECK:       main:
// CHECK-NOT:     {{cvtps2pd|cvtpd2ps|cvtss2sd|cvtsd2ss|[a-z0-9]+(pd|sd)[[:space:]]|call}}
// CHECK-COUNT-21: vfmadd{{[0-9]+}}ps {{.*}}%ymm{{[0-9]+}}
// CHECK-NOT:     {{cvtps2pd|cvtpd2ps|cvtss2sd|cvtsd2ss|[a-z0-9]+(pd|sd)[[:space:]]|call}}
// CHECK:         vblendvps {{.*}}%ymm{{[0-9]+}}
// CHECK-NOT:     {{cvtps2pd|cvtpd2ps|cvtss2sd|cvtsd2ss|[a-z0-9]+(pd|sd)[[:space:]]|call}}
// CHECK:         retq
