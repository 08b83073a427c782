"""Canonical bytes (SPEC §8) and the decoder's last check, that a file is canonical (SPEC §9.8).

:func:`write_file` lays out a header and records exactly as
``encodeCheckpoint`` of ``@llmcp/format`` does; the reader re-encodes what it
decoded with it and compares (:func:`assert_canonical`), the writer writes
with it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Tuple

from .errors import FormatError
from .rules import (
    BASE_HEADER_BYTES,
    CHECKSUM_OFFSET,
    ENDIAN_MARKER,
    FORMAT_VERSION,
    MAGIC,
    RNG_ALGORITHM_VERSION,
    TOKENIZER_LAYOUT_VERSION,
    file_checksum,
    record_bytes,
)

if TYPE_CHECKING:  # pragma: no cover
    from .reader import RawHeader

__all__ = ['PlannedRecord', 'header_length', 'write_file', 'assert_canonical']


def _first_difference(a: bytes, b: bytes) -> int:
    """First index where ``a`` and ``b`` differ within ``min(len)`` bytes, or -1."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return -1
    lo = 0
    step = 4096
    while lo < n:
        hi = min(n, lo + step)
        if a[lo:hi] != b[lo:hi]:
            for i in range(lo, hi):
                if a[i] != b[i]:
                    return i
        lo = hi
    return -1  # pragma: no cover


# ---------------------------------------------------------------------------
# Canonical writer (SPEC §8)
# ---------------------------------------------------------------------------


@dataclass
class PlannedRecord:
    """One record to write: its descriptor fields and payload bytes."""

    role_tag: int
    name_bytes: bytes
    dtype_tag: int
    shape: Tuple[int, ...]
    payload: bytes


def header_length(groups: Optional[Tuple[List[bytes], List[bytes]]], records: Sequence[PlannedRecord]) -> int:
    """SPEC §4.3."""
    total = BASE_HEADER_BYTES
    if groups is not None:
        total += 8 + sum(4 + len(n) for n in groups[0]) + sum(4 + len(n) for n in groups[1])
    return total + sum(26 + len(r.name_bytes) + 8 * len(r.shape) for r in records)


def write_file(
    *,
    selected_step: int,
    rng_state: int,
    kind_tag: int,
    vocabulary: int,
    decoder: Tuple[int, int, int, int, int, int, float, float],
    adamw: Tuple[float, float, float, float, float],
    groups: Optional[Tuple[List[bytes], List[bytes]]],
    optimizer_step: int,
    beta1_power: float,
    beta2_power: float,
    model_count: int,
    moment_count: int,
    records: Sequence[PlannedRecord],
    with_checksum: bool = True,
) -> bytes:
    """The file of SPEC §8 from header values and records in file order (checksum field zero unless ``with_checksum``)."""
    header_bytes = header_length(groups, records)
    payload_bytes = sum(len(r.payload) for r in records)
    parts: List[bytes] = [
        MAGIC,
        struct.pack('<HIQQQ', FORMAT_VERSION, ENDIAN_MARKER, header_bytes, payload_bytes, 0),
        struct.pack('<HHQQBQ', TOKENIZER_LAYOUT_VERSION, RNG_ALGORITHM_VERSION, selected_step, rng_state, kind_tag, vocabulary),
        struct.pack('<6Q2d', *decoder),
        struct.pack('<5d', *adamw),
    ]
    if groups is None:
        parts.append(b'\x00')
    else:
        parts.append(b'\x01')
        for names in groups:
            parts.append(struct.pack('<I', len(names)))
            for n in names:
                parts.append(struct.pack('<I', len(n)))
                parts.append(n)
    parts.append(struct.pack('<Q2d3I', optimizer_step, beta1_power, beta2_power, model_count, moment_count, len(records)))
    position = header_bytes
    for r in records:
        parts.append(struct.pack('<BI', r.role_tag, len(r.name_bytes)))
        parts.append(r.name_bytes)
        parts.append(struct.pack(f'<BI{len(r.shape)}Q', r.dtype_tag, len(r.shape), *r.shape))
        parts.append(struct.pack('<QQ', position, len(r.payload)))
        position += len(r.payload)
    header = b''.join(parts)
    if len(header) != header_bytes:  # pragma: no cover - internal consistency
        raise AssertionError(f'header writer wrote {len(header)} bytes, planned {header_bytes}')
    out = bytearray(header)
    for r in records:
        out += r.payload
    if with_checksum:
        struct.pack_into('<Q', out, CHECKSUM_OFFSET, file_checksum(out))
    return bytes(out)


def _where(h: RawHeader, offset: int) -> str:
    if h.groups is not None and 172 <= offset < h.optimizer_step_offset:
        return 'parameter-group lists (names must be sorted byte-wise)'
    for d in h.descriptors:
        if d.entry_offset <= offset < d.entry_offset + d.entry_length:
            return f'descriptor[{d.index}] ("{d.name}") entry (optimizer records must be sorted byte-wise by name, first moment then second)'
    return 'header'


def assert_canonical(data: bytes, h: RawHeader, validated: Dict[str, Any]) -> None:
    """SPEC §9.8: re-encode the decoded state; any differing byte outside the checksum field is NonCanonical."""
    tokenizer_count = 1 if h.tokenizer_kind_tag == 2 else h.tokenizer_vocabulary
    records = [PlannedRecord(d.role_tag, d.name_bytes, d.dtype_tag, tuple(d.shape), record_bytes(data, d)) for d in h.descriptors[:tokenizer_count]]
    records += [PlannedRecord(3, d.name_bytes, 3, tuple(d.shape), record_bytes(data, d)) for d in validated['model']]
    for first, second in sorted(validated['moments'], key=lambda pair: pair[0].name):
        records.append(PlannedRecord(4, first.name_bytes, 3, tuple(first.shape), record_bytes(data, first)))
        records.append(PlannedRecord(5, second.name_bytes, 3, tuple(second.shape), record_bytes(data, second)))
    groups = None
    if h.groups is not None:
        groups = tuple([n.encode('utf-8') for n in sorted(name for name, _ in names)] for names in h.groups)
    mine = write_file(
        selected_step=h.selected_step, rng_state=h.sampling_rng_state, kind_tag=h.tokenizer_kind_tag, vocabulary=h.tokenizer_vocabulary,
        decoder=h.decoder, adamw=h.adamw, groups=groups, optimizer_step=h.optimizer_step, beta1_power=h.beta1_power, beta2_power=h.beta2_power,
        model_count=len(validated['model']), moment_count=len(validated['moments']), records=records, with_checksum=False,
    )
    for start, stop in ((0, CHECKSUM_OFFSET), (CHECKSUM_OFFSET + 8, max(len(mine), len(data)))):
        a = mine[start:stop]
        b = data[start:stop]
        at = _first_difference(a, b)
        if at < 0 and len(a) != len(b):
            at = min(len(a), len(b))
        if at >= 0:
            offset = start + at
            exp = f'0x{a[at]:02x}' if at < len(a) else 'end of file'
            fnd = f'0x{b[at]:02x}' if at < len(b) else 'end of file'
            where = _where(h, offset)
            raise FormatError(
                'FORMAT_NON_CANONICAL',
                f'file is not canonical: re-encoding the decoded state differs at offset {offset} in the {where}: expected {exp}, found {fnd}',
                reason='re-encoding-differs', offset=offset, field=where, expected=exp, found=fnd,
            )

