"""Undefined symbols of an ELF64 relocatable object (the stored object code of an
artifact), read from its symbol table without LLVM.

`rlx.runtime.aot` uses them to publish only the runtime pieces the code calls (OpenBLAS
GEMMs, the thread pool, bf16 helpers) and to refuse code that needs a symbol this process
cannot resolve: MCJIT would abort the whole process on an unresolved symbol.
"""

from __future__ import annotations

import struct

SHT_SYMTAB = 2
SHN_UNDEF = 0


class ElfError(ValueError):
    """Not a well-formed little-endian ELF64 object."""


def undefined_symbols(data: bytes) -> list[str] | None:
    """Names of the undefined (imported) symbols; None when `data` is not ELF64 LE (other
    object formats are linked without this check). ElfError on a malformed table."""
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    try:
        (shoff,) = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
        if shentsize < 64 or shoff + shnum * shentsize > len(data):
            raise ElfError("section headers past the end")
        sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                    for i in range(shnum)]  # fmt: skip
        out: list[str] = []
        for _, kind, _, _, off, size, link, _, _, entsize in sections:
            if kind != SHT_SYMTAB:
                continue
            if entsize < 24 or link >= shnum or off + size > len(data):
                raise ElfError("bad symbol table")
            str_off, str_size = sections[link][4], sections[link][5]
            if str_off + str_size > len(data):
                raise ElfError("bad string table")
            strtab = data[str_off : str_off + str_size]
            for j in range(1, size // entsize):  # entry 0 is the null symbol
                name, _, _, shndx, _, _ = struct.unpack_from("<IBBHQQ", data, off + j * entsize)
                if shndx == SHN_UNDEF and 0 < name < len(strtab):
                    end = strtab.find(b"\0", name)
                    out.append(strtab[name : end if end >= 0 else None].decode("ascii", "replace"))
        return out
    except struct.error as e:
        raise ElfError(str(e)) from None
