// RUN: rlx-opt --show-dialects | filecheck %s

// CHECK: Available Dialects: {{.*}}arith, {{.*}}func, {{.*}}rlx, rlx_rt
