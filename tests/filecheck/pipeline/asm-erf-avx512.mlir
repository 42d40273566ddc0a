// REQUIRES: avx512f, fma
// RUN: rlx-opt %s --lower-to-llvm --emit=asm | filecheck %s

// asm-erf.mlir on an AVX-512 host: f32 erf (inside GELU) is expanded in f32 only, the loop
// vectorized with 512-bit FMAs on 16 lanes: no f64 conversion or arithmetic, no libm call.

func.func @main(%x: tensor<64x256xf32>) -> tensor<64x256xf32> {
  %y = rlx.gelu %x : (tensor<64x256xf32>) -> tensor<64x256xf32>
  func.return %y : tensor<64x256xf32>
}

// CHECK:       main:
// CHECK-NOT:     {{cvtps2pd|cvtpd2ps|cvtss2sd|cvtsd2ss|[a-z0-9]+(pd|sd)[[:space:]]|call}}
// CHECK-COUNT-21: vfmadd{{[0-9]+}}ps {{.*}}%zmm{{[0-9]+}}
// CHECK-NOT:     {{cvtps2pd|cvtpd2ps|cvtss2sd|cvtsd2ss|[a-z0-9]+(pd|sd)[[:space:]]|call}}
// CHECK:         retq
