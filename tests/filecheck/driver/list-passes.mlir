// RUN: rlx-opt --list-passes | filecheck %s
// RUN: rlx-opt --list-passes | filecheck %s --check-prefix=RLX

// One pass per line, sorted by name: name, origin ([rlx] or [xdsl]; rlx registrations
// override upstream ones of the same name), first line of the pass's docstring.

// CHECK:     {{^}}apply-pdl {{ *}}[xdsl]
// CHECK:     {{^}}canonicalize {{ *}}[{{rlx|xdsl}}]
// CHECK:     {{^}}convert-linalg-to-loops {{ *}}[xdsl]  Converts a linalg structured ops to perfectly nested loops.
// CHECK:     {{^}}convert-scf-to-cf {{ *}}[rlx]  Lower `scf.for` and `scf.if` to unstructured control flow, loop hints kept.
// CHECK:     {{^}}cse {{ *}}[{{rlx|xdsl}}]
// CHECK:     {{^}}reconcile-unrealized-casts {{ *}}[{{rlx|xdsl}}]
// CHECK-NOT: failed to load
// CHECK-NOT: Traceback

// RLX:       [rlx]
