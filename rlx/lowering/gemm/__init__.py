"""The generated GEMM: register-tile packing, an LLVM-vector microkernel, a parallel
driver with a fused epilogue (`driver.emit_gemm`). Shared by matmul and, later, conv."""
