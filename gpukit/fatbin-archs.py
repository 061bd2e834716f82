#!/usr/bin/python3
"""fatbin-archs.py FILE: the GPU code a CUDA object, library or program carries, read from its fat binaries
(nvcc's .nv_fatbin): one word per entry, elf:sm_NN for machine code and ptx:sm_NN for PTX, sorted. make-kit
checks with it that the kit's CUDA code holds sm_90 machine code and PTX (cuobjdump --list-elf/--list-ptx
says the same where it is installed; the CUDA wheels here carry none).

Layout (as nvcc writes it): a header (magic 0xBA55ED50, version u16, header size u16, payload size u64), then
entries, each a header (kind u16: 1 PTX, 2 ELF; version u16; header size u32; payload size u64; ...;
architecture u32 at byte 28) and its payload."""
import struct
import sys

MAGIC = struct.pack("<I", 0xBA55ED50)


def archs(data):
    found = set()
    pos = data.find(MAGIC)
    while pos >= 0:
        _, _, header, size = struct.unpack_from("<IHHQ", data, pos)
        p, end = pos + header, pos + header + size
        while p + 32 <= end:
            kind, _, entry_header, payload = struct.unpack_from("<HHIQ", data, p)
            arch = struct.unpack_from("<I", data, p + 28)[0]
            found.add("%s:sm_%d" % ({1: "ptx", 2: "elf"}.get(kind, "kind%d" % kind), arch))
            if entry_header == 0:
                break
            p += entry_header + payload
        pos = data.find(MAGIC, max(end, pos + 4))
    return sorted(found)


if __name__ == "__main__":
    with open(sys.argv[1], "rb") as f:
        print(" ".join(archs(f.read())))
