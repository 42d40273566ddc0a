func.func @unexpected(%x: i32) -> i32 {
  %0 = "arith.addi"(%x, %x) : (i32, i32) -> i64
  func.return %x : i32
}

// -----

func.func @not_produced(%x: i32) -> i32 {
  // expected-error @+1 {{this message is never emitted}}
  func.return %x : i32
}

// -----

func.func @wrong_line(%x: i64) -> i32 {
  // expected-error @+2 {{same types as the function output types}}
  func.return %x : i64
}

// -----

func.func @wrong_severity(%x: i64) -> i32 {
  // expected-warning @+1 {{same types as the function output types}}
  func.return %x : i64
}

// -----

func.func @malformed(%x: i32) -> i32 {
  // expected-error @+1 {missing braces}
  func.return %x : i32
}
