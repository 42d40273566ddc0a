// RUN: RLX_VERIFY_DIAG --allow-unregistered-dialect | filecheck %s

// Hostile input: each chunk is malformed and must give a located error (never a hang,
// a RecursionError or an internal error). See docs/xdsl-workarounds.md.

// CHECK:      // -----
// CHECK-NOT:  internal error

// Lexer errors on the first token of the input.
// expected-error @+1 {{expected an identifier after '%'}}
%

// -----

// expected-error @+1 {{unterminated string literal}}
"abc

// -----

// expected-error @+1 {{Unexpected character: $}}
$

// -----

// An unterminated string mid-file: xDSL 0.75's lexer regex backtracks exponentially.
func.func @f() {
  // expected-error @+1 {{unterminated string literal (a string must end on its line)}}
  %0 = "test.op"() {a = "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz} : () -> ()
  func.return
}

// -----

// expected-error @+1 {{brackets nested deeper than 64 levels}}
"test.op"() {a = [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]} : () -> ()

// -----

func.func @self_use(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'rlx.add' op operand #0 does not dominate this use}}
  %0 = rlx.add %0, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %0 : tensor<4xf32>
}

// -----

func.func @use_before_def(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'rlx.add' op operand #0 does not dominate this use}}
  %1 = rlx.add %0, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %0 = rlx.exp %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}

// -----

// expected-error @+1 {{dimension 9223372036854775808 is outside [0, 2^63 - 1]}}
func.func @too_big(%x: tensor<9223372036854775808xf32>) -> tensor<9223372036854775808xf32> {
  func.return %x : tensor<9223372036854775808xf32>
}

// -----

func.func @overflow(%x: tensor<4294967296xf32>) -> tensor<4294967296x4294967296xf32> {
  // expected-error @+1 {{18446744073709551616 elements exceed 2^63 - 1}}
  %y = rlx.broadcast_to %x : (tensor<4294967296xf32>) -> tensor<4294967296x4294967296xf32>
  func.return %y : tensor<4294967296x4294967296xf32>
}

// -----

func.func @block_twice(%c: i1, %x: i32) -> i32 {
  cf.cond_br %c, ^a, ^a
^a:
  cf.br ^a
// expected-error @+1 {{re-declaration of block 'a'}}
^a:
  func.return %x : i32
}

// -----

// 2^62 f32 elements: 2^64 bytes (sizes are i64 in the generated code).
func.func @bytes(%x: tensor<4611686018427387904xf32>) -> tensor<4611686018427387904xf32> {
  // expected-error @+1 {{18446744073709551616 bytes exceed 2^63 - 1}}
  %y = rlx.exp %x : (tensor<4611686018427387904xf32>) -> tensor<4611686018427387904xf32>
  func.return %y : tensor<4611686018427387904xf32>
}
