"""Edits fields of a kiln plan in place and reseals its checksums, so that a
hostile-input test can hand the loader a plan whose bytes are all correctly
checksummed but whose contents are inconsistent (what a fuzzer that reseals
after mutation produces).

Only what the tests need: read scalar fields of FlatBuffers tables, follow
table and vector offsets, and overwrite a scalar that is present in the
buffer. The layout rules are FlatBuffers' own (little-endian; a table starts
with an int32 offset back to its vtable; offsets to tables, vectors and
strings are uint32 relative to where they are stored). Field indices follow
schemas/plan.fbs; a change there must be mirrored in the FIELDS table below.
"""
import struct

HEADER_SIZE = 64
MASK = (1 << 64) - 1

# Field index (declaration order) of each table field the tests touch.
FIELDS = {
    "Plan": {"tensors": 9, "ops": 10, "memory_plan": 13, "sections": 14, "source_graph": 20},
    "Tensor": {"name": 0, "dtype": 1, "shape": 2, "kind": 3, "section": 4, "slot": 7,
               "host": 8},
    "MemoryPlan": {"num_slots": 0, "alignment": 1, "slot_static_bytes": 2},
}


def plan_checksum(data):
    """kiln::PlanChecksum (schemas/plan_format.h), in Python."""
    p1, p2 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F

    def rotl(x, r):
        return ((x << r) | (x >> (64 - r))) & MASK

    def rnd(acc, w):
        return (rotl((acc + w * p2) & MASK, 31) * p1) & MASK

    n = len(data)
    lane = [(p1 + p2) & MASK, p2, 0, (-p1) & MASK]
    i = 0
    while i + 32 <= n:
        for k, w in enumerate(struct.unpack_from("<4Q", data, i)):
            lane[k] = rnd(lane[k], w)
        i += 32
    h = (rotl(lane[0], 1) + rotl(lane[1], 7) + rotl(lane[2], 12) + rotl(lane[3], 18)) & MASK
    while i + 8 <= n:
        (w,) = struct.unpack_from("<Q", data, i)
        h = (rotl(h ^ rnd(0, w), 27) * p1 + p2) & MASK
        i += 8
    while i < n:
        h = (rotl(h ^ ((data[i] * p1) & MASK), 11) * p2) & MASK
        i += 1
    h ^= n
    h ^= h >> 33
    h = (h * p2) & MASK
    h ^= h >> 29
    return h


class Plan:
    """A plan's bytes with a FlatBuffers view of its graph region."""

    def __init__(self, data):
        self.b = bytearray(data)
        (self.fb_size,) = struct.unpack_from("<Q", self.b, 24)
        self.fb = HEADER_SIZE  # FlatBuffer offsets below are absolute file offsets

    def u32(self, pos):
        return struct.unpack_from("<I", self.b, pos)[0]

    def root(self):
        return self.fb + self.u32(self.fb)

    def field_pos(self, table, kind, field):
        """File offset of a field's value, or None when the buffer omits it."""
        index = FIELDS[kind][field]
        (soff,) = struct.unpack_from("<i", self.b, table)
        vtable = table - soff
        vt_size = struct.unpack_from("<H", self.b, vtable)[0]
        slot = 4 + 2 * index
        if slot + 2 > vt_size:
            return None
        (off,) = struct.unpack_from("<H", self.b, vtable + slot)
        return table + off if off else None

    def child(self, table, kind, field):
        """The table or vector a field points to, or None."""
        pos = self.field_pos(table, kind, field)
        return None if pos is None else pos + self.u32(pos)

    def vector(self, vec):
        """(length, position of element 0) of a vector."""
        return self.u32(vec), vec + 4

    def tables(self, vec):
        n, first = self.vector(vec)
        return [first + 4 * i + self.u32(first + 4 * i) for i in range(n)]

    def get(self, table, kind, field, fmt):
        pos = self.field_pos(table, kind, field)
        return None if pos is None else struct.unpack_from(fmt, self.b, pos)[0]

    def set(self, table, kind, field, fmt, value):
        pos = self.field_pos(table, kind, field)
        if pos is None:
            raise ValueError(f"{kind}.{field} is not stored in this plan (default value)")
        struct.pack_into(fmt, self.b, pos, value)

    def memory_plan(self):
        return self.child(self.root(), "Plan", "memory_plan")

    def tensors(self):
        return self.tables(self.child(self.root(), "Plan", "tensors"))

    def drop(self, table, kind, field):
        """Makes a field absent: its vtable slot becomes 0 (its bytes stay,
        unreferenced)."""
        index = FIELDS[kind][field]
        (soff,) = struct.unpack_from("<i", self.b, table)
        vtable = table - soff
        slot = 4 + 2 * index
        if slot + 2 <= struct.unpack_from("<H", self.b, vtable)[0]:
            struct.pack_into("<H", self.b, vtable + slot, 0)

    def reseal(self):
        """Recomputes the FlatBuffer and header checksums over the edits."""
        fb = bytes(self.b[HEADER_SIZE:HEADER_SIZE + self.fb_size])
        struct.pack_into("<Q", self.b, 32, plan_checksum(fb))
        struct.pack_into("<Q", self.b, 48, plan_checksum(bytes(self.b[:48])))
        return bytes(self.b)
