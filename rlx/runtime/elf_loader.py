"""A small loader of x86-64 ELF relocatable objects: stored code runs without LLVM.

`rlx.runtime.aot` links an artifact's object code (compiled by LLVM at bake time with the
JIT's large code model) with this loader instead of an MCJIT engine, so a process that
only runs stored code never imports llvmlite (about 65 MiB of RSS and 0.15 s, issue 16).

`Image(data, externals)`:

1. parses the ELF64 little-endian `ET_REL` object for `EM_X86_64` with bounds-checked
   reads (`ElfError` for anything malformed: a truncated file, a section or table past
   the end, a symbol or relocation pointing outside its section);
2. refuses what it does not implement with `Unsupported` naming it: COMDAT groups, TLS,
   constructors (`.init_array` and kin), `SHT_REL`, common or IFUNC symbols, relocation
   types other than those below, alignment above a page. `.eh_frame` is not loaded (no
   unwinder walks generated code: it neither throws nor is thrown through);
3. lays out the `SHF_ALLOC` sections in one anonymous mapping, page-separated by
   permission: code (+ call stubs), read-only data (+ GOT), writable data and zeroed
   `.bss`;
4. applies the relocations: `R_X86_64_64` (S+A), `PC64` / `PC32` (S+A-P), `PLT32` (to the
   symbol or, out of ±2 GiB, to a stub `jmp *[rip]` holding its address), `32` / `32S`,
   and `GOTPCREL` / `GOTPCRELX` / `REX_GOTPCRELX` (a GOT slot holding S). Undefined
   symbols take their address from `externals` (a weak one may be absent: 0);
5. makes the code read+execute and the read-only data read-only (W^X: nothing is ever
   writable and executable at once).

The mapping is unmapped when the Image is freed; keep it alive while its code may run.
"""

from __future__ import annotations

import ctypes
import mmap
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rlx.runtime.elf_symbols import ElfError

__all__ = ["ElfError", "Image", "Unresolved", "Unsupported", "process_symbols"]


class Unsupported(ElfError):
    """A well-formed object using something this loader does not implement (the MCJIT
    engine may still link it)."""


class Unresolved(ElfError):
    """An undefined symbol nobody provides."""


SHT_PROGBITS, SHT_SYMTAB, SHT_STRTAB, SHT_RELA, SHT_NOBITS, SHT_REL = 1, 2, 3, 4, 8, 9
SHT_INIT, SHT_FINI, SHT_PREINIT, SHT_GROUP, SHT_X86_64_UNWIND = 14, 15, 16, 17, 0x70000001
SHF_WRITE, SHF_ALLOC, SHF_EXEC, SHF_GROUP, SHF_TLS, SHF_COMPRESSED = 1, 2, 4, 0x200, 0x400, 0x800
SHN_UNDEF, SHN_LORESERVE, SHN_ABS, SHN_COMMON, SHN_XINDEX = 0, 0xFF00, 0xFFF1, 0xFFF2, 0xFFFF
STB_WEAK, STT_SECTION, STT_TLS, STT_GNU_IFUNC = 2, 3, 6, 10
PAGE = mmap.PAGESIZE
MAX_IMAGE = 1 << 30

R_64, R_PC32, R_PLT32, R_GOTPCREL, R_32, R_32S, R_PC64 = 1, 2, 4, 9, 10, 11, 24
R_GOTPCRELX, R_REX_GOTPCRELX = 41, 42
_GOT_TYPES = (R_GOTPCREL, R_GOTPCRELX, R_REX_GOTPCRELX)
_HANDLED = {0: "NONE", R_64: "64", R_PC32: "PC32", R_PLT32: "PLT32", R_GOTPCREL: "GOTPCREL",
            R_32: "32", R_32S: "32S", R_PC64: "PC64", R_GOTPCRELX: "GOTPCRELX",
            R_REX_GOTPCRELX: "REX_GOTPCRELX"}  # fmt: skip
_OTHER = {3: "GOT32", 5: "COPY", 6: "GLOB_DAT", 7: "JUMP_SLOT", 8: "RELATIVE", 12: "16",
          13: "PC16", 14: "8", 15: "PC8", 16: "DTPMOD64", 17: "DTPOFF64", 18: "TPOFF64",
          19: "TLSGD", 20: "TLSLD", 21: "DTPOFF32", 22: "GOTTPOFF", 23: "TPOFF32",
          25: "GOTOFF64", 26: "GOTPC32", 27: "GOT64", 28: "GOTPCREL64", 29: "GOTPC64",
          30: "GOTPLT64", 31: "PLTOFF64", 32: "SIZE32", 33: "SIZE64", 34: "GOTPC32_TLSDESC",
          35: "TLSDESC_CALL", 36: "TLSDESC", 37: "IRELATIVE"}  # fmt: skip
_STUB = b"\xff\x25\x00\x00\x00\x00"  # jmp qword ptr [rip + 0]; the address follows
STUB_SIZE = 16


def reloc_name(kind: int) -> str:
    return "R_X86_64_" + (_HANDLED.get(kind) or _OTHER.get(kind) or f"<type {kind}>")


@dataclass
class Section:
    index: int
    name: str
    kind: int
    flags: int
    offset: int
    size: int
    link: int
    info: int
    align: int
    entsize: int


@dataclass
class Symbol:
    name: str
    bind: int
    kind: int
    shndx: int
    value: int


def _unpack(fmt: str, data: bytes, at: int, what: str) -> tuple[int, ...]:
    if at < 0 or at + struct.calcsize(fmt) > len(data):
        raise ElfError(f"truncated object: {what} at byte {at} past the end ({len(data)} bytes)")
    return struct.unpack_from(fmt, data, at)


def _cstr(table: bytes, at: int, what: str) -> str:
    if not 0 <= at < len(table) and not (at == 0 and not table):
        raise ElfError(f"{what}: name offset {at} outside its string table")
    end = table.find(b"\0", at)
    if end < 0:
        raise ElfError(f"{what}: unterminated name")
    return table[at:end].decode("ascii", "replace")


def parse(
    data: bytes,
) -> tuple[list[Section], list[Symbol], dict[int, list[tuple[int, int, int, int]]]]:
    """Sections, symbols and {target section: [(offset, type, symbol, addend)]} of an
    ELF64 x86-64 relocatable object, every table bounds-checked."""
    if len(data) < 64 or data[:4] != b"\x7fELF":
        raise ElfError("not an ELF object")
    if data[4] != 2 or data[5] != 1 or data[6] != 1:
        raise Unsupported("not a little-endian ELF64 object")
    e_type, machine = _unpack("<HH", data, 16, "ELF header")
    if e_type != 1 or machine != 62:
        raise Unsupported(f"ELF type {e_type} machine {machine}: need a relocatable x86-64 object")
    (shoff,) = _unpack("<Q", data, 0x28, "ELF header")
    shentsize, shnum, shstrndx = _unpack("<HHH", data, 0x3A, "ELF header")
    if shentsize != 64 or shnum == 0 or shstrndx in (0, SHN_XINDEX) or shstrndx >= shnum:
        raise ElfError(f"bad section header table (entry size {shentsize}, {shnum} sections)")
    if shoff + shnum * 64 > len(data):
        raise ElfError(f"truncated object: section headers end at byte {shoff + shnum * 64}, "
                       f"the object has {len(data)}")  # fmt: skip
    raw = [_unpack("<IIQQQQIIQQ", data, shoff + i * 64, "section header") for i in range(shnum)]
    secs = []
    for i, (_, kind, flags, _, off, size, link, info, align, ent) in enumerate(raw):
        if kind != SHT_NOBITS and off + size > len(data):
            raise ElfError(f"truncated object: section {i} spans bytes {off}..{off + size}, "
                           f"the object has {len(data)}")  # fmt: skip
        if align & (align - 1):
            raise ElfError(f"section {i}: alignment {align} is not a power of two")
        secs.append(Section(i, "", kind, flags, off, size, link, info, max(align, 1), ent))
    names = secs[shstrndx]
    if names.kind != SHT_STRTAB:
        raise ElfError("the section name table is not a string table")
    shstr = data[names.offset : names.offset + names.size]
    for s in secs:
        s.name = _cstr(shstr, raw[s.index][0], f"section {s.index}")
    symtabs = [s for s in secs if s.kind == SHT_SYMTAB]
    if len(symtabs) != 1:
        raise ElfError(f"{len(symtabs)} symbol tables (need one)")
    st = symtabs[0]
    if (
        st.entsize != 24
        or st.size % 24
        or not 0 < st.link < shnum
        or secs[st.link].kind != SHT_STRTAB
    ):
        raise ElfError("bad symbol table")
    strtab = data[secs[st.link].offset : secs[st.link].offset + secs[st.link].size]
    syms = []
    for j in range(st.size // 24):
        nm, info, _, shndx, value, _ = _unpack("<IBBHQQ", data, st.offset + 24 * j, "symbol")
        if shndx != SHN_UNDEF and shndx < SHN_LORESERVE and shndx >= shnum:
            raise ElfError(f"symbol {j}: section index {shndx} out of range")
        if SHN_UNDEF < shndx < SHN_LORESERVE and value > secs[shndx].size:
            raise ElfError(f"symbol {j}: value {value} past the end of section {shndx}")
        syms.append(Symbol(_cstr(strtab, nm, f"symbol {j}"), info >> 4, info & 15, shndx, value))
    relocs: dict[int, list[tuple[int, int, int, int]]] = {}
    for s in secs:
        if s.kind == SHT_REL:
            raise Unsupported(f"section {s.name}: SHT_REL relocations (x86-64 code uses RELA)")
        if s.kind != SHT_RELA:
            continue
        if s.entsize != 24 or s.size % 24 or s.link != st.index or not 0 < s.info < shnum:
            raise ElfError(f"bad relocation section {s.name}")
        out = relocs.setdefault(s.info, [])
        for k in range(s.size // 24):
            off, info, addend = _unpack("<QQq", data, s.offset + 24 * k, "relocation")
            if info >> 32 >= len(syms):
                raise ElfError(f"{s.name}[{k}]: symbol index {info >> 32} out of range")
            out.append((off, info & 0xFFFFFFFF, info >> 32, addend))
    return secs, syms, relocs


def _loaded(s: Section) -> bool:
    return bool(s.flags & SHF_ALLOC) and s.kind != SHT_X86_64_UNWIND and s.name != ".eh_frame"


def _check_supported(secs: list[Section], syms: list[Symbol], relocs: dict) -> None:
    for s in secs:
        if s.kind == SHT_GROUP or s.flags & SHF_GROUP:
            raise Unsupported(f"section {s.name}: COMDAT groups are not supported")
        if s.kind in (SHT_INIT, SHT_FINI, SHT_PREINIT) or s.name in (".ctors", ".dtors"):
            raise Unsupported(f"section {s.name}: constructors/destructors are not supported")
        if not _loaded(s):
            continue
        if s.flags & (SHF_TLS | SHF_COMPRESSED):
            raise Unsupported(f"section {s.name}: TLS or compressed sections are not supported")
        if s.kind not in (SHT_PROGBITS, SHT_NOBITS):
            raise Unsupported(f"section {s.name}: allocated section of type {s.kind:#x}")
        if s.align > PAGE:
            raise Unsupported(f"section {s.name}: alignment {s.align} above a page")
    for sym in syms:
        if sym.kind in (STT_TLS, STT_GNU_IFUNC) or sym.shndx == SHN_COMMON:
            raise Unsupported(
                f"symbol {sym.name!r}: TLS, IFUNC or common symbols are not supported"
            )
    for target, rs in relocs.items():
        if not _loaded(secs[target]):
            continue
        for off, kind, _, _ in rs:
            if kind not in _HANDLED:
                raise Unsupported(f"relocation type {reloc_name(kind)} ({kind}) in "
                                  f"{secs[target].name} is not supported")  # fmt: skip
            width = 8 if kind in (R_64, R_PC64) else 4
            if off + width > secs[target].size:
                raise ElfError(f"relocation at {secs[target].name}+{off} past the section end")


def _align(n: int, a: int) -> int:
    return -(-n // a) * a


class Image:
    """The object `data` loaded and relocated in this process (see the module doc)."""

    def __init__(self, data: bytes, externals: Mapping[str, int]) -> None:
        secs, syms, relocs = parse(data)
        _check_supported(secs, syms, relocs)
        missing = sorted({s.name for s in syms if s.shndx == SHN_UNDEF and s.name
                          and s.bind != STB_WEAK and s.name not in externals})  # fmt: skip
        if missing:
            raise Unresolved(f"unresolved symbol(s) {', '.join(missing[:8])}")
        got_syms = sorted({r[2] for t, rs in relocs.items() if _loaded(secs[t])
                           for r in rs if r[1] in _GOT_TYPES})  # fmt: skip
        stub_syms = sorted({r[2] for t, rs in relocs.items() if _loaded(secs[t]) for r in rs
                            if r[1] == R_PLT32 and syms[r[2]].shndx == SHN_UNDEF})  # fmt: skip
        # layout: [code | stubs] [read-only | GOT] [writable | bss], each page aligned
        base: dict[int, int] = {}
        regions: list[tuple[int, int, int]] = []  # (start, end, mmap protection)
        pos = 0
        for want, prot in ((SHF_EXEC, mmap.PROT_READ | mmap.PROT_EXEC), (0, mmap.PROT_READ),
                           (SHF_WRITE, mmap.PROT_READ | mmap.PROT_WRITE)):  # fmt: skip
            start = pos
            for s in secs:
                if _loaded(s) and (s.flags & (SHF_EXEC | SHF_WRITE)) == want:
                    pos = _align(pos, s.align)
                    base[s.index] = pos
                    pos += s.size
            if want == SHF_EXEC:
                stubs, pos = (
                    _align(pos, STUB_SIZE),
                    _align(pos, STUB_SIZE) + STUB_SIZE * len(stub_syms),
                )
            elif want == 0:
                got, pos = _align(pos, 8), _align(pos, 8) + 8 * len(got_syms)
            if pos > MAX_IMAGE:
                raise ElfError(f"object needs {pos} bytes of memory (limit {MAX_IMAGE})")
            regions.append((start, pos, prot))
            pos = _align(pos, PAGE)
        self._map = mmap.mmap(-1, max(pos, PAGE), flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                              prot=mmap.PROT_READ | mmap.PROT_WRITE)  # fmt: skip
        buf = memoryview(self._map)
        self._keep = ctypes.c_char.from_buffer(self._map)
        at = ctypes.addressof(self._keep)
        for i, off in base.items():
            s = secs[i]
            if s.kind != SHT_NOBITS:
                buf[off : off + s.size] = data[s.offset : s.offset + s.size]

        def value(j: int) -> int:
            sym = syms[j]
            if sym.shndx == SHN_UNDEF:
                return int(externals.get(sym.name, 0)) if sym.name else 0
            if sym.shndx == SHN_ABS:
                return sym.value
            if sym.shndx >= SHN_LORESERVE or sym.shndx not in base:
                raise Unsupported(f"symbol {sym.name!r} lies in a section that is not loaded")
            return at + base[sym.shndx] + sym.value

        got_at = {j: got + 8 * k for k, j in enumerate(got_syms)}
        stub_at = {j: stubs + STUB_SIZE * k for k, j in enumerate(stub_syms)}
        for j, off in got_at.items():
            struct.pack_into("<Q", buf, off, value(j))
        for j, off in stub_at.items():
            buf[off : off + 6] = _STUB
            struct.pack_into("<Q", buf, off + 6, value(j))
        for t, rs in relocs.items():
            if t not in base:
                continue
            for off, kind, j, addend in rs:
                where = base[t] + off
                p = at + where
                if kind == 0:
                    continue
                if kind == R_64:
                    struct.pack_into("<Q", buf, where, (value(j) + addend) % (1 << 64))
                elif kind == R_PC64:
                    struct.pack_into("<Q", buf, where, (value(j) + addend - p) % (1 << 64))
                else:
                    if kind in _GOT_TYPES:
                        v = at + got_at[j] + addend - p
                    else:
                        v = value(j) + addend - (0 if kind in (R_32, R_32S) else p)
                        if kind == R_PLT32 and j in stub_at and not -(1 << 31) <= v < 1 << 31:
                            v = at + stub_at[j] + addend - p
                    lo, hi = (0, 1 << 32) if kind == R_32 else (-(1 << 31), 1 << 31)
                    if not lo <= v < hi:
                        raise Unsupported(f"{reloc_name(kind)} to {syms[j].name or 'a section'!r}"
                                          " does not fit in 32 bits")  # fmt: skip
                    struct.pack_into("<I", buf, where, v % (1 << 32))
        buf.release()
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        for start, end, prot in regions:
            if end > start and prot != mmap.PROT_READ | mmap.PROT_WRITE:
                if libc.mprotect(at + start, _align(end, PAGE) - start, prot) != 0:
                    raise OSError(ctypes.get_errno(), "mprotect of loaded code failed")
        named = [(j, s) for j, s in enumerate(syms) if s.name and s.kind != STT_SECTION
                 and (s.shndx in base or s.shndx == SHN_ABS)]  # fmt: skip
        self.symbols = {s.name: value(j) for j, s in named if s.bind != 0}
        """Global (and weak) symbols the object defines: name -> address."""
        self.locals = {s.name: value(j) for j, s in named if s.bind == 0}
        """Local symbols (internal functions and globals), for tests and debugging."""
        self.size = pos

    def address(self, name: str) -> int:
        """Address of the global symbol `name` (KeyError if the object defines none)."""
        return self.symbols[name]


_LIBS: list[ctypes.CDLL] = []


def process_symbols(names: Iterable[str]) -> dict[str, int]:
    """{name: address} of those `names` the process's loaded libraries export (the global
    namespace: libc, libpthread, ...; then libm), what MCJIT would resolve them to."""
    if not _LIBS:
        _LIBS.append(ctypes.CDLL(None))
        try:
            _LIBS.append(ctypes.CDLL("libm.so.6"))  # Linux: the only host of this loader
        except OSError:
            pass
    out: dict[str, int] = {}
    for name in names:
        for lib in _LIBS:
            try:
                out[name] = int(ctypes.cast(getattr(lib, name), ctypes.c_void_p).value or 0)
                break
            except AttributeError:
                continue
    return {k: v for k, v in out.items() if v}
