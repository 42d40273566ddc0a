"""The ELF object loader (`rlx.runtime.elf_loader`) and the CPUID feature table
(`rlx.host_cpu`): relocations of each supported type computed right (checked by running
the code), malformed or unsupported objects refused before anything is mapped."""

from __future__ import annotations

import ctypes
import struct

import pytest

from rlx import host_cpu
from rlx.runtime import elf_loader
from rlx.runtime.elf_loader import ElfError, Image, Unresolved, Unsupported, parse

pytestmark = pytest.mark.skipif(not host_cpu.is_x86_64_linux(), reason="x86-64 Linux loader")


def _object(ir: str, codemodel: str = "jitdefault", reloc: str = "default") -> bytes:
    import llvmlite.binding as llvm

    from rlx.runtime.llvm_host import _LOCK, _initialise

    with _LOCK:
        _initialise()
        tm = llvm.Target.from_default_triple().create_target_machine(
            cpu="x86-64", opt=2, reloc=reloc, codemodel=codemodel, jit=codemodel == "jitdefault"
        )
        mod = llvm.parse_assembly(ir)
        mod.triple = tm.triple
        mod.data_layout = str(tm.target_data)
        return bytes(tm.emit_object(mod))


IR = """
@counter = internal global i64 5, align 8
@table = internal constant [4 x i64] [i64 10, i64 20, i64 30, i64 40], align 8
@ext_value = external global i64
declare i64 @ext_add(i64)

define i64 @f(i64 %i) {
  %c = load i64, ptr @counter
  %c1 = add i64 %c, 1
  store i64 %c1, ptr @counter
  %p = getelementptr [4 x i64], ptr @table, i64 0, i64 %i
  %t = load i64, ptr %p
  %e = load i64, ptr @ext_value
  %s = add i64 %t, %e
  %s1 = add i64 %s, %c1
  %r = call i64 @ext_add(i64 %s1)
  ret i64 %r
}
"""

ADD = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(lambda v: v + 1000)
VALUE = ctypes.c_int64(7)


def _types(data: bytes) -> set[str]:
    secs, _, relocs = parse(data)
    return {elf_loader.reloc_name(r[1]) for t, rs in relocs.items()
            if elf_loader._loaded(secs[t]) for r in rs}  # fmt: skip


@pytest.mark.parametrize(
    "codemodel, reloc, expect",
    [("jitdefault", "default", {"R_X86_64_64"}),  # how rlx-bake compiles
     ("small", "pic", {"R_X86_64_PLT32", "R_X86_64_REX_GOTPCRELX", "R_X86_64_PC32"}),
     ("small", "static", {"R_X86_64_PLT32", "R_X86_64_32S"})],
)  # fmt: skip
def test_relocations_link_and_run(codemodel: str, reloc: str, expect: set[str]) -> None:
    data = _object(IR, codemodel, reloc)
    assert expect <= _types(data), _types(data)
    ext = {"ext_add": ctypes.cast(ADD, ctypes.c_void_p).value, "ext_value": ctypes.addressof(VALUE)}
    try:
        img = Image(data, ext)
    except Unsupported as e:  # 32S needs the image below 2 GiB: refused, never mislinked
        assert "R_X86_64_32S" in str(e) and "32 bits" in str(e)
        return
    f = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(img.address("f"))
    assert f(2) == 30 + 7 + 6 + 1000  # table[2] + ext_value + (counter+1) + ext_add's 1000
    assert f(3) == 40 + 7 + 7 + 1000  # the writable global kept its update
    with pytest.raises(KeyError):
        img.address("counter")  # internal: not exported


def test_pc_relative_data() -> None:
    """PC64 / PC32 in data: a pointer difference to a local and to an external symbol."""
    ir = """
@target = constant i64 1
@ext = external global i64
@d = global i64 sub (i64 ptrtoint (ptr @target to i64), i64 ptrtoint (ptr @d to i64))
@e = global i32 trunc (i64 sub (i64 ptrtoint (ptr @target to i64), i64 ptrtoint (ptr @e to i64)) to i32)
@x = global i64 sub (i64 ptrtoint (ptr @ext to i64), i64 ptrtoint (ptr @x to i64))
"""
    data = _object(ir)
    assert {"R_X86_64_PC64", "R_X86_64_PC32"} <= _types(data)
    img = Image(data, {"ext": ctypes.addressof(VALUE)})
    at = img.address
    assert ctypes.c_int64.from_address(at("d")).value == at("target") - at("d")
    assert ctypes.c_int32.from_address(at("e")).value == at("target") - at("e")
    assert ctypes.c_int64.from_address(at("x")).value == ctypes.addressof(VALUE) - at("x")


def _far_function() -> int:
    """`i64 f(i64 x) { return x + 1000; }` mapped (hint) 32 TiB up: beyond ±2 GiB."""
    libc = ctypes.CDLL(None)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]  # fmt: skip
    addr = libc.mmap(0x200000000000, 4096, 3, 0x22, -1, 0)  # RW, private|anonymous
    ctypes.memmove(addr, bytes.fromhex("488d87e8030000c3"), 8)  # lea rax,[rdi+1000]; ret
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    assert libc.mprotect(addr, 4096, 5) == 0  # read+execute
    return int(addr)


def test_stub_reaches_a_far_symbol() -> None:
    """PLT32 to a symbol beyond ±2 GiB of the image goes through a stub."""
    data = _object(IR, "small", "pic")
    far = _far_function()
    img = Image(data, {"ext_add": far, "ext_value": ctypes.addressof(VALUE)})
    if abs(far - img.address("f")) < 1 << 31:
        pytest.skip("the kernel placed the function near the image")
    f = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(img.address("f"))
    assert f(0) == 10 + 7 + 6 + 1000


def test_unresolved_symbol_named() -> None:
    with pytest.raises(Unresolved, match="ext_add"):
        Image(_object(IR), {"ext_value": ctypes.addressof(VALUE)})


def _section_headers(data: bytes) -> tuple[int, int]:
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    (shnum,) = struct.unpack_from("<H", data, 0x3C)
    return shoff, shnum


def _rela_offset(data: bytes) -> int:
    shoff, shnum = _section_headers(data)
    for i in range(shnum):
        kind, off = struct.unpack_from("<I", data, shoff + 64 * i + 4)[0], struct.unpack_from(
            "<Q", data, shoff + 64 * i + 24)[0]  # fmt: skip
        if kind == 4:
            return off
    raise AssertionError("no RELA section")


def test_corrupt_objects_are_refused() -> None:
    good = _object(IR)
    ext = {"ext_add": 1, "ext_value": 1}
    for cut in (10, 63, len(good) // 2, len(good) - 1):
        with pytest.raises(ElfError):
            Image(good[:cut], ext)
    shoff, shnum = _section_headers(good)
    bad = bytearray(good)
    struct.pack_into("<Q", bad, shoff + 64 * 2 + 24, 1 << 40)  # section 2's offset
    with pytest.raises(ElfError, match="section 2 spans"):
        Image(bytes(bad), ext)
    bad = bytearray(good)
    rela = _rela_offset(good)
    struct.pack_into("<I", bad, rela + 8, 3)  # first relocation: R_X86_64_GOT32
    with pytest.raises(Unsupported, match="R_X86_64_GOT32"):
        Image(bytes(bad), ext)
    bad = bytearray(good)
    struct.pack_into("<I", bad, rela + 12, 9999)  # symbol index
    with pytest.raises(ElfError, match="symbol index 9999"):
        Image(bytes(bad), ext)
    bad = bytearray(good)
    struct.pack_into("<H", bad, 0x12, 183)  # e_machine: aarch64
    with pytest.raises(Unsupported, match="machine 183"):
        Image(bytes(bad), ext)
    with pytest.raises(ElfError, match="not an ELF"):
        Image(b"\0" * 100, ext)


@pytest.mark.parametrize(
    "ir, what",
    [("$g = comdat any\n@g = global i32 1, comdat\n", "COMDAT"),
     ("@t = thread_local global i32 1\ndefine ptr @f() {\n  ret ptr @t\n}\n", "TLS"),
     ("@llvm.global_ctors = appending global [1 x { i32, ptr, ptr }] "
      "[{ i32, ptr, ptr } { i32 65535, ptr @c, ptr null }]\n"
      "define void @c() {\n  ret void\n}\n", "constructors")],
)  # fmt: skip
def test_unsupported_features_are_refused(ir: str, what: str) -> None:
    with pytest.raises(Unsupported, match=what):
        Image(_object(ir), {})


def test_cpuid_features_match_llvm() -> None:
    """The CPUID table agrees with LLVM on every feature both know, and knows every
    feature LLVM reports present (stored host code then links without LLVM)."""
    import llvmlite.binding as llvm

    from rlx.runtime.llvm_host import _initialise

    _initialise()
    ref = {f[1:]: f[0] == "+" for f in llvm.get_host_cpu_features().flatten().split(",")}
    mine = host_cpu.features()
    assert mine is not None
    assert {k: v for k, v in mine.items() if k in ref and ref[k] != v} == {}
    assert [k for k, v in ref.items() if v and k not in mine] == []
    assert host_cpu.missing(["sse2", "no-such-feature"]) is None  # unknown: ask LLVM
    assert host_cpu.missing(["sse2"]) == []


def test_mutated_objects_raise_elf_errors_only() -> None:
    """Random byte flips and cuts of a real object either load (nothing is run) or raise
    ElfError: never another exception, never a crash (fixed seed, 300 cases)."""
    import random

    good = _object(IR)
    shoff, _ = _section_headers(good)  # the tables follow the code: hit them more often
    ext = {"ext_add": 1 << 20, "ext_value": 1 << 21}
    rng = random.Random(16)
    for _ in range(300):
        bad = bytearray(good)
        for _ in range(rng.randint(1, 3)):
            r = rng.random()
            lo = 0 if r < 0.4 else shoff if r < 0.8 else _rela_offset(good)
            i = rng.randrange(lo, min(len(bad), lo + 64) if r < 0.2 else len(bad))
            bad[i] = rng.randrange(256)
        if rng.random() < 0.2:
            bad = bad[: rng.randrange(len(bad))]
        try:
            Image(bytes(bad), ext)
        except ElfError:
            pass


def _perms(addr: int) -> str:
    with open("/proc/self/maps") as f:
        for line in f:
            span, perms = line.split()[:2]
            lo, hi = (int(x, 16) for x in span.split("-"))
            if lo <= addr < hi:
                return perms[:3]
    raise AssertionError(f"{addr:#x} is not mapped")


def test_w_xor_x() -> None:
    """Code is read+execute, constants read-only, data read+write; never write+execute."""
    img = Image(_object(IR), {"ext_add": 1, "ext_value": 1})
    code, data = img.address("f"), img.locals["counter"]
    assert _perms(code) == "r-x" and _perms(data) == "rw-"
    assert _perms(img.locals["table"]) == "r--"
