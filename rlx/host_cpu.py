"""The host's x86-64 CPU features under LLVM's names, read with CPUID (no LLVM).

Linking stored object code (`rlx.runtime.aot`) must know whether this CPU has every
feature the code was compiled for, and the generated GEMM picks its tile from the vector
ISA (`rlx.lowering.gemm.target`). Asking LLVM (`llvmlite.binding.get_host_cpu_features`)
costs about 40 MiB of RSS and 0.1 s of import, so this module runs the `cpuid` and
`xgetbv` instructions itself (two tiny machine-code routines in an executable page) and
applies the rules of LLVM's `sys::getHostCPUFeatures` (llvm/lib/TargetParser/Host.cpp):
a feature is the CPUID bit, and the AVX / AVX-512 / AMX ones also need the OS to save
their registers (XCR0 bits via `xgetbv`).

`features()` returns {LLVM name: present} for the names of `_BITS` only; a name it does
not list is *unknown* (callers ask LLVM then, never guess). On anything but Linux x86-64
it returns None. `tests/unit/test_elf_loader.py` checks the table against LLVM's answer
on the test machine.
"""

from __future__ import annotations

import ctypes
import functools
import mmap
import platform
import sys

# (leaf, subleaf, register 0..3 = eax ebx ecx edx, bit, OS state needed: "", avx, avx512, amx)
_BITS: dict[str, tuple[int, int, int, int, str]] = {
    "cx8": (1, 0, 3, 8, ""), "cmov": (1, 0, 3, 15, ""), "mmx": (1, 0, 3, 23, ""),
    "fxsr": (1, 0, 3, 24, ""), "sse": (1, 0, 3, 25, ""), "sse2": (1, 0, 3, 26, ""),
    "sse3": (1, 0, 2, 0, ""), "pclmul": (1, 0, 2, 1, ""), "ssse3": (1, 0, 2, 9, ""),
    "fma": (1, 0, 2, 12, "avx"), "cx16": (1, 0, 2, 13, ""), "sse4.1": (1, 0, 2, 19, ""),
    "sse4.2": (1, 0, 2, 20, ""), "crc32": (1, 0, 2, 20, ""), "movbe": (1, 0, 2, 22, ""),
    "popcnt": (1, 0, 2, 23, ""), "aes": (1, 0, 2, 25, ""), "xsave": (1, 0, 2, 26, "avx"),
    "avx": (1, 0, 2, 28, "avx"), "f16c": (1, 0, 2, 29, "avx"), "rdrnd": (1, 0, 2, 30, ""),
    "sahf": (0x80000001, 0, 2, 0, ""), "lzcnt": (0x80000001, 0, 2, 5, ""),
    "sse4a": (0x80000001, 0, 2, 6, ""), "prfchw": (0x80000001, 0, 2, 8, ""),
    "xop": (0x80000001, 0, 2, 11, "avx"), "lwp": (0x80000001, 0, 2, 15, ""),
    "fma4": (0x80000001, 0, 2, 16, "avx"), "tbm": (0x80000001, 0, 2, 21, ""),
    "mwaitx": (0x80000001, 0, 2, 29, ""), "64bit": (0x80000001, 0, 3, 29, ""),
    "clzero": (0x80000008, 0, 1, 0, ""), "rdpru": (0x80000008, 0, 1, 4, ""),
    "wbnoinvd": (0x80000008, 0, 1, 9, ""),
    "fsgsbase": (7, 0, 1, 0, ""), "sgx": (7, 0, 1, 2, ""), "bmi": (7, 0, 1, 3, ""),
    "avx2": (7, 0, 1, 5, "avx"), "bmi2": (7, 0, 1, 8, ""), "invpcid": (7, 0, 1, 10, ""),
    "rtm": (7, 0, 1, 11, ""), "avx512f": (7, 0, 1, 16, "avx512"),
    "avx512dq": (7, 0, 1, 17, "avx512"), "rdseed": (7, 0, 1, 18, ""), "adx": (7, 0, 1, 19, ""),
    "avx512ifma": (7, 0, 1, 21, "avx512"), "clflushopt": (7, 0, 1, 23, ""),
    "clwb": (7, 0, 1, 24, ""), "avx512cd": (7, 0, 1, 28, "avx512"), "sha": (7, 0, 1, 29, ""),
    "avx512bw": (7, 0, 1, 30, "avx512"), "avx512vl": (7, 0, 1, 31, "avx512"),
    "avx512vbmi": (7, 0, 2, 1, "avx512"), "pku": (7, 0, 2, 4, ""), "waitpkg": (7, 0, 2, 5, ""),
    "avx512vbmi2": (7, 0, 2, 6, "avx512"), "shstk": (7, 0, 2, 7, ""), "gfni": (7, 0, 2, 8, ""),
    "vaes": (7, 0, 2, 9, "avx"), "vpclmulqdq": (7, 0, 2, 10, "avx"),
    "avx512vnni": (7, 0, 2, 11, "avx512"), "avx512bitalg": (7, 0, 2, 12, "avx512"),
    "avx512vpopcntdq": (7, 0, 2, 14, "avx512"), "rdpid": (7, 0, 2, 22, ""),
    "kl": (7, 0, 2, 23, ""), "cldemote": (7, 0, 2, 25, ""), "movdiri": (7, 0, 2, 27, ""),
    "movdir64b": (7, 0, 2, 28, ""), "enqcmd": (7, 0, 2, 29, ""),
    "uintr": (7, 0, 3, 5, ""), "avx512vp2intersect": (7, 0, 3, 8, "avx512"),
    "serialize": (7, 0, 3, 14, ""), "tsxldtrk": (7, 0, 3, 16, ""), "pconfig": (7, 0, 3, 18, ""),
    "amx-bf16": (7, 0, 3, 22, "amx"), "avx512fp16": (7, 0, 3, 23, "avx512"),
    "amx-tile": (7, 0, 3, 24, "amx"), "amx-int8": (7, 0, 3, 25, "amx"),
    "sha512": (7, 1, 0, 0, "avx"), "sm3": (7, 1, 0, 1, "avx"), "sm4": (7, 1, 0, 2, "avx"),
    "raoint": (7, 1, 0, 3, ""), "avxvnni": (7, 1, 0, 4, "avx"),
    "avx512bf16": (7, 1, 0, 5, "avx512"), "cmpccxadd": (7, 1, 0, 7, ""),
    "amx-fp16": (7, 1, 0, 21, "amx"), "hreset": (7, 1, 0, 22, ""), "avxifma": (7, 1, 0, 23, "avx"),
    "avxvnniint8": (7, 1, 3, 4, "avx"), "avxneconvert": (7, 1, 3, 5, "avx"),
    "amx-complex": (7, 1, 3, 8, "amx"), "avxvnniint16": (7, 1, 3, 10, "avx"),
    "xsaveopt": (0xD, 1, 0, 0, "avx"), "xsavec": (0xD, 1, 0, 1, "avx"),
    "xsaves": (0xD, 1, 0, 3, "avx"), "ptwrite": (0x14, 0, 1, 4, ""),
}  # fmt: skip

# void cpuid(u32 leaf, u32 subleaf, u32 out[4]); u64 xgetbv(u32 xcr)
_CPUID = bytes.fromhex("53" "89f8" "89f1" "4989d0" "0fa2" "418900" "41895804" "41894808"
                       "4189500c" "5b" "c3")  # fmt: skip
_XGETBV = bytes.fromhex("89f90f01d048c1e2204809d0c3")


def is_x86_64_linux() -> bool:
    """True where `features` can answer (and stored x86-64 ELF code can be linked)."""
    return sys.platform == "linux" and platform.machine().lower() in ("x86_64", "amd64")


def executable(code: bytes) -> tuple[mmap.mmap, int]:
    """`code` in a fresh page mapped read+execute (written first, then mprotected: never
    writable and executable at once); (the mapping, its address)."""
    size = max(mmap.PAGESIZE, -(-len(code) // mmap.PAGESIZE) * mmap.PAGESIZE)
    mm = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                   prot=mmap.PROT_READ | mmap.PROT_WRITE)  # fmt: skip
    mm.write(code)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(mm))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    if libc.mprotect(addr, size, mmap.PROT_READ | mmap.PROT_EXEC) != 0:
        raise OSError(ctypes.get_errno(), "mprotect of an executable page failed")
    return mm, addr


@functools.cache
def _routines() -> tuple[object, object, object]:
    mm1, a1 = executable(_CPUID)
    mm2, a2 = executable(_XGETBV)
    cpuid = ctypes.CFUNCTYPE(None, ctypes.c_uint32, ctypes.c_uint32,
                             ctypes.POINTER(ctypes.c_uint32))(a1)  # fmt: skip
    xgetbv = ctypes.CFUNCTYPE(ctypes.c_uint64, ctypes.c_uint32)(a2)
    return cpuid, xgetbv, (mm1, mm2)


def cpuid(leaf: int, subleaf: int = 0) -> tuple[int, int, int, int]:
    """(eax, ebx, ecx, edx) of CPUID `leaf`.`subleaf` (x86-64 Linux only)."""
    fn = _routines()[0]
    out = (ctypes.c_uint32 * 4)()
    fn(leaf, subleaf, out)  # type: ignore[operator]
    return out[0], out[1], out[2], out[3]


@functools.cache
def features() -> dict[str, bool] | None:
    """{LLVM feature name: present} for the names this module knows (LLVM's host rules),
    None off x86-64 Linux or where an executable page cannot be made."""
    if not is_x86_64_linux():
        return None
    try:
        max_leaf = cpuid(0)[0]
    except OSError:
        return None
    leaf1 = cpuid(1)
    xcr0 = int(_routines()[1](0)) if (leaf1[2] >> 27) & 1 else 0  # type: ignore[operator]
    os_avx = bool((leaf1[2] >> 27) & 1) and bool((leaf1[2] >> 28) & 1) and xcr0 & 6 == 6
    state = {"": True, "avx": os_avx, "avx512": os_avx and xcr0 & 0xE0 == 0xE0,
             "amx": bool((leaf1[2] >> 27) & 1) and xcr0 & 0x60000 == 0x60000}  # fmt: skip
    max_ext = cpuid(0x80000000)[0]
    leaves: dict[tuple[int, int], tuple[int, int, int, int] | None] = {}

    def leaf(n: int, sub: int) -> tuple[int, int, int, int] | None:
        if (n, sub) not in leaves:
            ok = n <= max_ext if n >= 0x80000000 else n <= max_leaf
            if ok and n == 7 and sub == 1:
                ok = (leaf(7, 0) or (0,))[0] >= 1  # subleaf 1 exists
            leaves[n, sub] = cpuid(n, sub) if ok else None
        return leaves[n, sub]

    out: dict[str, bool] = {}
    for name, (n, sub, reg, bit, need) in _BITS.items():
        regs = leaf(n, sub)
        out[name] = regs is not None and bool((regs[reg] >> bit) & 1) and state[need]
    return out


def missing(needed: list[str]) -> list[str] | None:
    """The names of `needed` this host lacks, or None when one of them is unknown here
    (not in `_BITS`, or not x86-64 Linux): then only LLVM can answer."""
    have = features()
    if have is None or any(f not in have for f in needed):
        return None
    return [f for f in needed if not have[f]]


@functools.cache
def last_level_cache_bytes() -> int | None:
    """Bytes of the largest (last-level) data or unified cache of CPU 0, from Linux sysfs
    (`/sys/devices/system/cpu/cpu0/cache/index*/size`, e.g. "32768K"); None where it cannot
    be read. Kernels writing more than a fraction of it use streaming stores
    (`rlx.lowering.rlx_to_linalg.streaming`)."""
    from pathlib import Path

    best: int | None = None
    for d in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            if (d / "type").read_text().strip() == "Instruction":
                continue
            text = (d / "size").read_text().strip().upper()
        except OSError:
            continue
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text[:-1] if text[-1:] in "KMG" else text
        if digits.isdigit():
            best = max(best or 0, int(digits) * scale)
    return best


ISA_ENV = "RLX_GEMM_ISA"
"""Overrides the vector instruction set the register tiles are chosen for (`avx512`,
`avx2`, `generic`), e.g. to test the portable tiles on an AVX-512 machine; part of the
compile-cache key (`rlx.runtime.blas.cache_key`)."""

VECTOR_ISAS = ("avx512", "avx2", "generic")
"""The instruction sets the generated kernels have register tiles for."""


def vector_isa() -> str:
    """The instruction set the register tiles are chosen for: `RLX_GEMM_ISA` (ValueError
    naming it when it is not one of `VECTOR_ISAS`) or the host's. Here, at the bottom
    layer, because `blocked-layout` must make the kernels' choice (`rlx.conv_plan`)."""
    import os

    forced = os.environ.get(ISA_ENV, "").strip().lower()
    if forced:
        if forced not in VECTOR_ISAS:
            raise ValueError(f"{ISA_ENV}={forced!r}: expected one of {', '.join(VECTOR_ISAS)}")
        return forced
    return host_vector_isa()


@functools.cache
def host_vector_isa() -> str:
    """avx512 (AVX-512F), avx2 (AVX2 and FMA) or generic for this host (CPUID, else LLVM's
    host features: linking stored code must not load llvmlite, so CPUID first)."""
    feats: dict[str, bool] | None = features()
    if feats is None:
        import llvmlite.binding as llvm

        try:
            feats = dict(llvm.get_host_cpu_features())
        except RuntimeError:
            return "generic"
    if feats.get("avx512f"):
        return "avx512"
    if feats.get("avx2") and feats.get("fma"):
        return "avx2"
    return "generic"
