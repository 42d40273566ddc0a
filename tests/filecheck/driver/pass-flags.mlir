// Pass flags: --NAME runs a pass with defaults, --NAME='k=v ...' sets options (the syntax
// of NAME{...} in -p), flags run in command-line order, -NAME works too.
// RUN: rlx-opt %s --approximate-math-with-bitcast | filecheck %s --check-prefix=DEFAULT
// RUN: rlx-opt %s --approximate-math-with-bitcast='log=false exp=true' | filecheck %s --check-prefix=NOLOG
// RUN: rlx-opt %s -approximate-math-with-bitcast=log=false | filecheck %s --check-prefix=NOLOG
// RUN: rlx-opt %s -p 'approximate-math-with-bitcast{log=false}' | filecheck %s --check-prefix=NOLOG
// RUN: rlx-opt %s --dce --cse --dce --print-ir-after-all 2>&1 >/dev/null | filecheck %s --check-prefix=ORDER

// Errors: a clear message on stderr and exit code 1.
// RUN: not rlx-opt %s --licm=foo 2>&1 | filecheck %s --check-prefix=NOMAIN
// RUN: not rlx-opt %s --approximate-math-with-bitcast='logg=false' 2>&1 | filecheck %s --check-prefix=UNKNOWN
// RUN: not rlx-opt %s --approximate-math-with-bitcast='log=maybe' 2>&1 | filecheck %s --check-prefix=BADVALUE
// RUN: not rlx-opt %s -p cse --dce 2>&1 | filecheck %s --check-prefix=BOTH
// RUN: not rlx-opt %s -p 'cse,canonicalise' 2>&1 | filecheck %s --check-prefix=NOPASS
// RUN: not rlx-opt %s -p 'cse{' 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not rlx-opt %s --no-such-flag 2>&1 | filecheck %s --check-prefix=NOFLAG

func.func @f(%x: f32) -> f32 {
  %0 = math.log %x : f32
  func.return %0 : f32
}

// DEFAULT-NOT: math.log
// NOLOG:       math.log %x : f32

// ORDER:      IR Dump After dce
// ORDER:      IR Dump After cse
// ORDER:      IR Dump After dce

// NOMAIN:   rlx-opt: error: --licm: 'foo' is not an options string of space-separated key=value pairs (options of 'licm': none), and the pass declares no main option
// UNKNOWN:  rlx-opt: error: unknown option 'logg' for pass 'approximate-math-with-bitcast' (options: log, exp); did you mean 'log'?
// BADVALUE: rlx-opt: error: invalid options for pass 'approximate-math-with-bitcast': Incompatible types: given ('maybe',), expected bool
// BOTH:     rlx-opt: error: -p/--passes cannot be combined with pass flags (--dce); use one or the other
// NOPASS:   rlx-opt: error: unknown pass 'canonicalise'; did you mean 'canonicalize'?
// SYNTAX:   rlx-opt: error: invalid pass pipeline 'cse{':
// NOFLAG:   rlx-opt: error: unrecognized arguments: --no-such-flag
