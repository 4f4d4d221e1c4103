"""ELF files as the release's tools read them: the machine, the sections and the symbols of a
binary of any class and byte order, with nothing but the standard library (images/sbom.py reads
the link record's section, images/vex.py the symbols and the data that may point at them).

    elf.Elf(path)                  raises ElfError when the file is not ELF
    .machine, .is64, .order        "x86-64", "aarch64", ...; 32 or 64 bits; "<" or ">"
    .sections                      [Section]; .section(name): its bytes, or None
    .symbols()                     [Symbol] of what the file defines, or None when it is stripped
"""
import collections
import struct


class ElfError(Exception):
    pass


# ELF machines (e_machine), as the notes name them.
MACHINES = {3: "i386", 8: "mips", 20: "ppc", 21: "ppc64", 22: "s390x", 40: "arm", 62: "x86-64",
            183: "aarch64", 243: "riscv"}
Section = collections.namedtuple("Section", "name type flags addr offset size entsize")
Symbol = collections.namedtuple("Symbol", "name start end value function")
SHT_SYMTAB, SHT_RELA, SHT_NOBITS = 2, 4, 8
SHF_ALLOC, SHF_EXECINSTR = 0x2, 0x4
# The symbols that are code or data: objects, functions, and GNU indirect functions (an IFUNC
# such as memcpy in a static glibc, whose symbol is its resolver).
SYMBOL_TYPES = (1, 2, 10)


class Elf:
    """An ELF file's machine, sections and defined symbols (any class and byte order)."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.data = data = f.read()
        if data[:4] != b"\x7fELF":
            raise ElfError(f"{path} is not an ELF file")
        self.path = path
        self.is64 = is64 = data[4] == 2
        self.order = order = "<" if data[5] == 1 else ">"
        kind, machine = struct.unpack_from(order + "HH", data, 0x10)
        self.position_dependent = kind == 2  # ET_EXEC: linked at fixed addresses, not a PIE
        self.machine = MACHINES.get(machine, f"ELF machine {machine}")
        if self.machine == "ppc64" and order == "<":
            self.machine = "ppc64le"
        if is64:
            shoff, = struct.unpack_from(order + "Q", data, 0x28)
            shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", data, 0x3A)
            header = order + "IIQQQQIIQQ"
        else:
            shoff, = struct.unpack_from(order + "I", data, 0x20)
            shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", data, 0x2E)
            header = order + "IIIIIIIIII"
        self.word = struct.Struct(order + ("Q" if is64 else "I"))
        raw = [struct.unpack_from(header, data, shoff + i * shentsize) for i in range(shnum)]
        names = raw[shstrndx][4] if shstrndx < len(raw) else None
        self.sections = [Section(self._string(names, s[0]) if names is not None else "",
                                 s[1], s[2], s[3], s[4], s[5], s[9]) for s in raw]
        self._raw = raw

    def _string(self, table_offset, index):
        at = table_offset + index
        return self.data[at:self.data.index(b"\0", at)].decode(errors="replace")

    def symbols(self):
        """[Symbol] of the functions and objects the file defines (its .symtab), or None when it
        has no symbol table (a stripped binary). start and end are where the symbol's bytes are
        (for an arm Thumb function, its value without the Thumb bit), value what a pointer to it
        holds, function whether it is code (a function or an IFUNC) rather than an object."""
        found, symbols = False, []
        layout = self.order + ("IBBHQQ" if self.is64 else "IIIBBH")
        for section, raw in zip(self.sections, self._raw):
            if section.type != SHT_SYMTAB:
                continue
            found = True
            strings = self._raw[raw[6]][4]  # sh_link: its string table
            end = section.offset + section.size - section.size % struct.calcsize(layout)
            view = memoryview(self.data)[section.offset:end]
            for fields in struct.iter_unpack(layout, view):
                if self.is64:
                    name, info, _, shndx, value, size = fields
                else:
                    name, value, size, info, _, shndx = fields
                if shndx == 0 or (info & 0xF) not in SYMBOL_TYPES:  # undefined; not code or data
                    continue
                function = (info & 0xF) != 1
                start = value & ~1 if self.machine == "arm" and function else value
                symbols.append(Symbol(self._string(strings, name), start, start + max(size, 1),
                                      value, function))
        return symbols if found else None

    def section(self, name):
        """The bytes of section `name`, or None when the file has none of that name."""
        for section in self.sections:
            if section.name == name:
                return self.data[section.offset:section.offset + section.size]
        return None
