// Invalid blocked-layout options are one-line errors naming the option (non-zero exit).
// RUN: not rlx-opt %s -p 'blocked-layout{block=12}' 2>&1 | filecheck %s --check-prefix=BLOCK
// RUN: not rlx-opt %s -p 'blocked-layout{block=4}' 2>&1 | filecheck %s --check-prefix=BLOCK4
// RUN: not rlx-opt %s -p 'blocked-layout{min-convs=0}' 2>&1 | filecheck %s --check-prefix=MIN
// RUN: not rlx-opt %s -p 'blocked-layout{blocks=8}' 2>&1 | filecheck %s --check-prefix=UNKNOWN

// BLOCK: error: blocked-layout: block must be one of 0, 8, 16, 32, 64 (0: auto), got 12
// BLOCK4: error: blocked-layout: block must be one of 0, 8, 16, 32, 64 (0: auto), got 4
// MIN: error: blocked-layout: min-convs must be >= 1, got 0
// UNKNOWN: blocks
func.func @main(%x: tensor<1x8x2x2xf32>, %w: tensor<8x8x1x1xf32>) -> tensor<1x8x2x2xf32> {
  %a = rlx.conv2d %x, %w : (tensor<1x8x2x2xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x2x2xf32>
  %b = rlx.conv2d %a, %w : (tensor<1x8x2x2xf32>, tensor<8x8x1x1xf32>) -> tensor<1x8x2x2xf32>
  func.return %b : tensor<1x8x2x2xf32>
}
