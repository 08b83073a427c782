"""Reading LLMCP35 v1 bytes: the bounds-checked header parse and :func:`decode` / :func:`load`.

:func:`decode` applies every rule of SPEC §9 in the order of ``@llmcp/format``
(the header here, the rules of :mod:`llmcp.rules`, the canonical check of
:mod:`llmcp.canonical`) and raises the first failure as the same
:class:`~llmcp.errors.FormatError`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field as dc_field
from typing import Any, Dict, List, Optional, Tuple, Union

from .canonical import assert_canonical
from .checkpoint import AdamWConfig, AdamWState, BpeTokenizer, Checkpoint, DecoderConfig, DescriptorLayout, Layout, LiteralTokenizer, Moment, ParameterGroups, Tensor
from .errors import FormatError
from .rules import (
    DTYPE_NAMES,
    ENDIAN_MARKER,
    FIXED_HEADER_BYTES,
    FORMAT_VERSION,
    MAGIC,
    RNG_ALGORITHM_VERSION,
    ROLE_NAMES,
    TOKENIZER_LAYOUT_VERSION,
    U64_MAX,
    assert_header_within_limit,
    check_geometry,
    checksum_label,
    file_checksum,
    record_bytes,
    validate_adamw_config,
    validate_groups,
    validate_records,
)
from .tensors import resolve_kind, tensor_from_bytes
from .text import hex_bytes

__all__ = ['decode', 'load', 'validate_file', 'RawHeader', 'RawDescriptor']


def _utf8_strict(raw: bytes) -> Optional[str]:
    try:
        return raw.decode('utf-8', 'strict')
    except UnicodeDecodeError:
        return None


# ---------------------------------------------------------------------------
# Bounds-checked header reader (SPEC §9.2)
# ---------------------------------------------------------------------------


class _Cursor:
    """Reads little-endian fields up to a limit; a read past it is ``FORMAT_TRUNCATED`` at that offset."""

    __slots__ = ('data', 'pos', 'limit')

    def __init__(self, data: bytes, start: int, limit: int) -> None:
        self.data = data
        self.pos = start
        self.limit = min(limit, len(data))

    @property
    def remaining(self) -> int:
        return self.limit - self.pos

    def _need(self, width: int, field: str) -> int:
        if width > self.limit - self.pos:
            left = max(0, self.limit - self.pos)
            raise FormatError(
                'FORMAT_TRUNCATED',
                f'truncated header while reading {field} at offset {self.pos}: expected {width} byte(s), found {left} before header end {self.limit}',
                reason='header-read',
                offset=self.pos,
                field=field,
                expected=f'{width} bytes',
                found=f'{left} bytes',
            )
        at = self.pos
        self.pos += width
        return at

    def u8(self, field: str) -> int:
        return self.data[self._need(1, field)]

    def u16(self, field: str) -> int:
        return struct.unpack_from('<H', self.data, self._need(2, field))[0]

    def u32(self, field: str) -> int:
        return struct.unpack_from('<I', self.data, self._need(4, field))[0]

    def u64(self, field: str) -> int:
        return struct.unpack_from('<Q', self.data, self._need(8, field))[0]

    def f64(self, field: str) -> float:
        return struct.unpack_from('<d', self.data, self._need(8, field))[0]

    def string(self, field: str) -> Tuple[Optional[str], bytes, int]:
        offset = self.pos
        length = self.u32(f'{field} length')
        at = self._need(length, field)
        raw = self.data[at:at + length]
        return _utf8_strict(raw), raw, offset


# ---------------------------------------------------------------------------
# Raw header (SPEC §3, §4) and its parser
# ---------------------------------------------------------------------------


@dataclass
class RawDescriptor:
    """One descriptor entry as stored (SPEC §4.1)."""

    index: int
    entry_offset: int
    entry_length: int
    role_tag: int
    name: str
    name_bytes: bytes
    dtype_tag: int
    shape: List[int]
    offset: int
    byte_length: int


@dataclass
class RawHeader:
    """Everything the header says, fields in file order (SPEC §3–§4); u64 values exact."""

    header_bytes: int
    payload_bytes: int
    stored_checksum: int
    selected_step: int = 0
    sampling_rng_state: int = 0
    tokenizer_kind_tag: int = 0
    tokenizer_vocabulary: int = 0
    decoder: Tuple[int, int, int, int, int, int, float, float] = (0, 0, 0, 0, 0, 0, 0.0, 0.0)
    adamw: Tuple[float, float, float, float, float] = (0.0, 0.0, 0.0, 0.0, 0.0)
    groups_flag: int = 0
    groups: Optional[Tuple[List[Tuple[str, int]], List[Tuple[str, int]]]] = None
    optimizer_step_offset: int = 0
    optimizer_step: int = 0
    beta1_power: float = 1.0
    beta2_power: float = 1.0
    model_parameter_count: int = 0
    optimizer_state_count: int = 0
    descriptor_count: int = 0
    descriptor_count_offset: int = 0
    descriptors: List[RawDescriptor] = dc_field(default_factory=list)


def _parse_fixed_header(data: bytes) -> RawHeader:
    """SPEC §9.1 steps 1–5, then the header-size limit of §15.2."""
    n = len(data)
    if n < FIXED_HEADER_BYTES:
        raise FormatError(
            'FORMAT_TRUNCATED', f'file of {n} bytes is shorter than the 38-byte fixed header',
            reason='fixed-header', offset=0, field='fixed header', expected='>= 38 bytes', found=f'{n} bytes',
        )
    for i in range(8):
        if data[i] != MAGIC[i]:
            found = hex_bytes(data[:8])
            raise FormatError(
                'FORMAT_BAD_MAGIC', f'bad magic at offset 0: expected 4c 4c 4d 43 50 33 35 00 ("LLMCP35\\0"), found {found}',
                reason='magic', offset=i, field='magic', expected='4c 4c 4d 43 50 33 35 00', found=found,
            )
    version = struct.unpack_from('<H', data, 8)[0]
    if version != FORMAT_VERSION:
        raise FormatError(
            'FORMAT_UNSUPPORTED_VERSION', f'unsupported format version at offset 8: expected 1, found {version}',
            reason='format-version', offset=8, field='format version', expected='1', found=str(version),
        )
    marker = struct.unpack_from('<I', data, 10)[0]
    if marker != ENDIAN_MARKER:
        raise FormatError(
            'FORMAT_UNSUPPORTED_ENDIANNESS', f'unsupported endian marker at offset 10: expected 0x01020304 (bytes 04 03 02 01), found 0x{marker:08x}',
            reason='endian-marker', offset=10, field='endian marker', expected='0x01020304', found=f'0x{marker:08x}',
        )
    header_bytes, payload_bytes, checksum = struct.unpack_from('<QQQ', data, 14)
    total = header_bytes + payload_bytes
    if header_bytes < FIXED_HEADER_BYTES or total > U64_MAX or total != n:
        why = (
            'header_bytes is below 38' if header_bytes < FIXED_HEADER_BYTES
            else 'header_bytes + payload_bytes overflows u64' if total > U64_MAX
            else 'header_bytes + payload_bytes differs from the file length'
        )
        raise FormatError(
            'FORMAT_FILE_EXTENT',
            f'file extent mismatch: {why} (header_bytes {header_bytes}, payload_bytes {payload_bytes}, file length {n})',
            reason='file-extent', offset=14, field='header_bytes/payload_bytes',
            expected=f'header_bytes >= 38 and header_bytes + payload_bytes = {n}', found=f'{header_bytes} + {payload_bytes}',
        )
    assert_header_within_limit(header_bytes)
    return RawHeader(header_bytes=header_bytes, payload_bytes=payload_bytes, stored_checksum=checksum)


def _invalid_utf8(field: str, offset: int, raw: bytes) -> FormatError:
    found = hex_bytes(raw[:32])
    return FormatError(
        'FORMAT_INVALID_UTF8', f'{field} at offset {offset} is not valid UTF-8: found bytes {found}{" …" if len(raw) > 32 else ""}',
        reason='invalid-utf8', offset=offset, field=field, expected='valid UTF-8', found=found,
    )


def _read_name_list(r: _Cursor, label: str) -> List[Tuple[str, int]]:
    count = r.u32(f'{label} name count')
    names: List[Tuple[str, int]] = []
    for i in range(count):  # grows as read; every read bounded by header_bytes (SPEC §9.10)
        text, raw, offset = r.string(f'{label} name {i}')
        if text is None:
            raise _invalid_utf8(f'{label} name {i}', offset + 4, raw)
        names.append((text, offset))
    return names


def _read_descriptor(r: _Cursor, index: int) -> RawDescriptor:
    entry_offset = r.pos
    at = f'descriptor[{index}]'
    role_tag = r.u8(f'{at} role tag')
    if role_tag not in ROLE_NAMES:
        raise FormatError(
            'FORMAT_UNKNOWN_TENSOR_ROLE', f'unknown role tag in {at} at offset {entry_offset}: expected 1–5, found {role_tag}',
            reason='role-tag', offset=entry_offset, field=f'{at}.role', record_index=index, expected='1..5', found=str(role_tag),
        )
    text, raw, name_offset = r.string(f'{at} name')
    if text is None:
        raise _invalid_utf8(f'{at}.name', name_offset + 4, raw)
    if len(raw) == 0:
        raise FormatError(
            'FORMAT_LAYOUT', f'empty name in {at} at offset {name_offset}: expected a non-empty record name',
            reason='empty-record-name', offset=name_offset, field=f'{at}.name', record_index=index, expected='non-empty name', found='""',
        )
    dtype_offset = r.pos
    dtype_tag = r.u8(f'{at} dtype tag')
    if dtype_tag not in DTYPE_NAMES:
        raise FormatError(
            'FORMAT_UNKNOWN_DTYPE', f'unknown dtype tag in {at} ("{text}") at offset {dtype_offset}: expected 1 (u8), 2 (u32) or 3 (f64), found {dtype_tag}',
            reason='dtype-tag', offset=dtype_offset, field=f'{at}.dtype', record_index=index, record_name=text, expected='1..3', found=str(dtype_tag),
        )
    rank = r.u32(f'{at} rank')
    shape = [r.u64(f'{at} shape[{k}]') for k in range(rank)]
    offset = r.u64(f'{at} offset')
    byte_length = r.u64(f'{at} byte_len')
    return RawDescriptor(index, entry_offset, r.pos - entry_offset, role_tag, text, bytes(raw), dtype_tag, shape, offset, byte_length)


def _parse_variable_header(data: bytes, h: RawHeader) -> RawHeader:
    """SPEC §9.2 in order, validating AdamW configuration and groups on the way."""
    r = _Cursor(data, FIXED_HEADER_BYTES, h.header_bytes)
    layout_version = r.u16('tokenizer layout version')
    if layout_version != TOKENIZER_LAYOUT_VERSION:
        raise FormatError(
            'FORMAT_UNSUPPORTED_TOKENIZER_LAYOUT', f'unsupported tokenizer layout version at offset 38: expected 1, found {layout_version}',
            reason='tokenizer-layout-version', offset=38, field='tokenizer layout version', expected='1', found=str(layout_version),
        )
    rng_version = r.u16('sampling RNG algorithm version')
    if rng_version != RNG_ALGORITHM_VERSION:
        raise FormatError(
            'FORMAT_UNSUPPORTED_RNG_ALGORITHM', f'unsupported sampling RNG algorithm version at offset 40: expected 1 (SplitMix64), found {rng_version}',
            reason='rng-algorithm-version', offset=40, field='sampling RNG algorithm version', expected='1', found=str(rng_version),
        )
    h.selected_step = r.u64('selected step')
    h.sampling_rng_state = r.u64('sampling RNG state')
    kind = r.u8('tokenizer kind')
    if kind not in (1, 2):
        raise FormatError(
            'FORMAT_UNKNOWN_TOKENIZER_KIND', f'unknown tokenizer kind at offset 58: expected 1 (literal) or 2 (byte-level BPE), found {kind}',
            reason='tokenizer-kind', offset=58, field='tokenizer kind', expected='1 or 2', found=str(kind),
        )
    h.tokenizer_kind_tag = kind
    h.tokenizer_vocabulary = r.u64('tokenizer vocabulary')
    h.decoder = (
        r.u64('decoder vocabulary_size'),
        r.u64('decoder model_width'),
        r.u64('decoder heads'),
        r.u64('decoder feed_forward_width'),
        r.u64('decoder layers'),
        r.u64('decoder max_positions'),
        r.f64('decoder rope_base'),
        r.f64('decoder rms_epsilon'),
    )
    h.adamw = (r.f64('AdamW learning_rate'), r.f64('AdamW beta1'), r.f64('AdamW beta2'), r.f64('AdamW epsilon'), r.f64('AdamW weight_decay'))
    validate_adamw_config(h.adamw)
    flag = r.u8('parameter-groups flag')
    h.groups_flag = flag
    if flag == 1:
        decay = _read_name_list(r, 'decay')
        no_decay = _read_name_list(r, 'no-decay')
        h.groups = (decay, no_decay)
        validate_groups(decay, no_decay)
    elif flag != 0:
        raise FormatError(
            'FORMAT_NON_CANONICAL', f'parameter-groups flag at offset 171: expected 0 or 1, found {flag}',
            reason='groups-flag', offset=171, field='parameter-groups flag', expected='0 or 1', found=str(flag),
        )
    h.optimizer_step_offset = r.pos
    h.optimizer_step = r.u64('optimizer step')
    h.beta1_power = r.f64('beta1 power')
    h.beta2_power = r.f64('beta2 power')
    h.model_parameter_count = r.u32('model parameter count')
    h.optimizer_state_count = r.u32('optimizer state count')
    h.descriptor_count_offset = r.pos
    h.descriptor_count = r.u32('descriptor count')
    # No allocation from the declared count (SPEC §9.10): entries are appended as read.
    h.descriptors = []
    for index in range(h.descriptor_count):
        h.descriptors.append(_read_descriptor(r, index))
    if r.remaining > 0:
        raise FormatError(
            'FORMAT_NON_CANONICAL',
            f'{r.remaining} unparsed header byte(s) at offset {r.pos}: expected the header to end after the last descriptor at {r.pos}, found header_bytes {h.header_bytes}',
            reason='unparsed-header-bytes', offset=r.pos, field='header end', expected=str(r.pos), found=str(h.header_bytes),
        )
    return h


# ---------------------------------------------------------------------------
# decode / load
# ---------------------------------------------------------------------------


def _as_bytes(data: Any) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f'decode: data must be bytes, bytearray or memoryview, got {type(data).__name__}')


def validate_file(data: bytes, verify_checksum: bool, canonical: bool) -> Tuple[RawHeader, Dict[str, Any]]:
    """Every rule of SPEC §9 on ``data`` (the checksum and the canonical check optional, for the writer)."""
    h = _parse_fixed_header(data)  # §9.1 steps 1-5, §15.2 header limit
    if verify_checksum:  # §9.1 step 6
        computed = file_checksum(data)
        if computed != h.stored_checksum:
            raise FormatError(
                'FORMAT_CHECKSUM_MISMATCH', f'checksum mismatch at offset 30: stored {checksum_label(h.stored_checksum)}, computed {checksum_label(computed)}',
                reason='checksum', offset=30, field='checksum', expected=checksum_label(computed), found=checksum_label(h.stored_checksum),
            )
    _parse_variable_header(data, h)  # §9.2
    partition = check_geometry(h, len(data))  # §9.3
    validated = validate_records(data, h, partition)  # §9.4-§9.7
    if canonical:
        assert_canonical(data, h, validated)  # §9.8
    return h, validated


def decode(data: Union[bytes, bytearray, memoryview], *, tensors: str = 'auto') -> Checkpoint:
    """Decode and fully validate an LLMCP35 v1 file (SPEC §9, every check in the reference's order).

    :param data: the complete file.
    :param tensors: ``'auto'`` (numpy when installed, else ``'array'``), ``'numpy'`` (shaped float64 arrays),
        ``'torch'`` (float64 tensors), ``'array'`` (flat row-major ``array('d')``) or ``'list'`` (nested lists).
    :returns: the checkpoint, with ``layout`` describing the file.
    :raises FormatError: with the code of the first failing rule (the same code ``@llmcp/format`` reports).
    """
    data = _as_bytes(data)
    kind = resolve_kind(tensors)
    h, validated = validate_file(data, verify_checksum=True, canonical=True)
    return _checkpoint_from(data, h, validated, kind)


def load(path: Any, *, tensors: str = 'auto') -> Checkpoint:
    """Read a file and :func:`decode` it. A read failure is ``FormatError('FORMAT_IO')``."""
    try:
        with open(path, 'rb') as f:
            data = f.read()
    except OSError as e:
        raise FormatError('FORMAT_IO', f'cannot read {path}: {e}', reason='read', field=str(path)) from e
    return decode(data, tensors=tensors)


def _checkpoint_from(data: bytes, h: RawHeader, validated: Dict[str, Any], kind: str) -> Checkpoint:
    vocab, width, heads, ffn, layers, positions, rope_base, rms_eps = h.decoder
    decoder = DecoderConfig(vocab, width, heads, ffn, layers, positions, rope_base, rms_eps)
    parameters = [Tensor(d.name, tuple(d.shape), tensor_from_bytes(record_bytes(data, d), tuple(d.shape), kind)) for d in validated['model']]
    moments = [
        Moment(f.name, tuple(f.shape), tensor_from_bytes(record_bytes(data, f), tuple(f.shape), kind), tensor_from_bytes(record_bytes(data, s), tuple(s.shape), kind))
        for f, s in validated['moments']
    ]
    groups = None if h.groups is None else ParameterGroups([n for n, _ in h.groups[0]], [n for n, _ in h.groups[1]])
    optimizer = AdamWState(AdamWConfig(*h.adamw), groups, h.optimizer_step, h.beta1_power, h.beta2_power, moments)
    layout = Layout(
        file_length=len(data),
        header_bytes=h.header_bytes,
        payload_bytes=h.payload_bytes,
        checksum=h.stored_checksum,
        tokenizer_kind_tag=h.tokenizer_kind_tag,
        groups_flag=h.groups_flag,
        model_parameter_count=h.model_parameter_count,
        optimizer_state_count=h.optimizer_state_count,
        descriptor_count=h.descriptor_count,
        descriptor_count_offset=h.descriptor_count_offset,
        descriptors=[
            DescriptorLayout(d.index, ROLE_NAMES[d.role_tag], d.role_tag, d.name, DTYPE_NAMES[d.dtype_tag], d.dtype_tag, tuple(d.shape), d.offset, d.byte_length, d.entry_offset, d.entry_length)
            for d in h.descriptors
        ],
    )
    tokenizer = LiteralTokenizer(validated['tokenizer']) if h.tokenizer_kind_tag == 1 else BpeTokenizer(validated['tokenizer'])
    return Checkpoint(tokenizer, decoder, parameters, optimizer, h.selected_step, h.sampling_rng_state, layout)

