"""Read, validate and write LLMCP35 v1 checkpoints (llmcp) from Python.

A dependency-free port of ``@llmcp/format``'s decoder and encoder
(``packages/format/SPEC.md`` is the normative specification; sections are
cited as ``SPEC §9.3``). The decoder applies every rule of SPEC §9 in the
reference's order, plus this implementation family's limits of SPEC §15.2,
and reports the first failure as a :class:`FormatError` whose ``code``,
``category``, ``reason``, ``offset``, ``field``, ``record_name``,
``record_index`` and ``element_index`` equal those of the TypeScript
``FormatError`` for the same bytes. The encoder writes the canonical bytes of
SPEC §8, identical to ``encodeCheckpoint``.

* numpy is optional: with it, tensors are ``numpy.ndarray`` (float64, shaped);
  without it, flat row-major ``array('d')``.
* torch is optional: ``decode(data, tensors='torch')`` returns ``torch.Tensor``
  (float64), and :func:`torch_adamw_state_dict` maps the AdamW state to the
  ``state_dict`` of ``torch.optim.AdamW``.

Usage::

    import llmcp_format as lf
    ckpt = lf.load('state.llmcp')            # or lf.decode(data)
    ckpt.parameter('token_embedding.weight').data.shape   # (V, D)
    assert lf.encode(ckpt) == open('state.llmcp', 'rb').read()

Command line: ``python3 -m llmcp_format inspect FILE [--json]`` and
``python3 -m llmcp_format verify FILE...``.
"""

from __future__ import annotations

import itertools
import math
import os
import re
import struct
import sys
from array import array
from dataclasses import dataclass, field as dc_field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

try:  # numpy is optional
    import numpy as _np
except ImportError:  # pragma: no cover - exercised by the no-numpy test run
    _np = None

__all__ = [
    'FormatError',
    'FORMAT_ERROR_CODES',
    'FORMAT_ERROR_CATEGORIES',
    'MAGIC',
    'FORMAT_VERSION',
    'MAX_HEADER_BYTES',
    'Checkpoint',
    'LiteralTokenizer',
    'BpeTokenizer',
    'DecoderConfig',
    'AdamWConfig',
    'ParameterGroups',
    'AdamWState',
    'Tensor',
    'Moment',
    'Layout',
    'DescriptorLayout',
    'decode',
    'load',
    'encode',
    'save',
    'fnv1a64',
    'checksum_label',
    'file_checksum',
    'expected_parameter_shapes',
    'model_parameter_name',
    'torch_param_groups',
    'torch_adamw_state_dict',
    'torch_adamw',
    'adamw_state_from_torch',
]

# ---------------------------------------------------------------------------
# Error codes (SPEC §9.9, §15.1) — identical to packages/format/src/errors.ts
# ---------------------------------------------------------------------------

FORMAT_ERROR_CATEGORIES: Dict[str, str] = {
    'FORMAT_TRUNCATED': 'Truncated',
    'FORMAT_BAD_MAGIC': 'InvalidMagic',
    'FORMAT_UNSUPPORTED_VERSION': 'UnsupportedVersion',
    'FORMAT_UNSUPPORTED_ENDIANNESS': 'UnsupportedEndianness',
    'FORMAT_FILE_EXTENT': 'FileExtent',
    'FORMAT_CHECKSUM_MISMATCH': 'ChecksumMismatch',
    'FORMAT_UNSUPPORTED_TOKENIZER_LAYOUT': 'UnsupportedTokenizerLayout',
    'FORMAT_UNSUPPORTED_RNG_ALGORITHM': 'UnsupportedRngAlgorithm',
    'FORMAT_UNKNOWN_TOKENIZER_KIND': 'UnknownTokenizerKind',
    'FORMAT_UNKNOWN_TENSOR_ROLE': 'UnknownTensorRole',
    'FORMAT_UNKNOWN_DTYPE': 'UnknownDType',
    'FORMAT_INVALID_UTF8': 'InvalidUtf8',
    'FORMAT_SIZE_OVERFLOW': 'SizeOverflow',
    'FORMAT_LIMIT_EXCEEDED': 'Allocation',
    'FORMAT_LAYOUT': 'Layout',
    'FORMAT_TOKENIZER': 'Tokenizer',
    'FORMAT_BPE': 'Bpe',
    'FORMAT_ADAMW_CONFIG': 'AdamW',
    'FORMAT_ADAMW_STATE': 'AdamWState',
    'FORMAT_INVALID_PARAMETER': 'Initialization',
    'FORMAT_TENSOR_SHAPE': 'Tensor',
    'FORMAT_MODEL': 'Model',
    'FORMAT_VOCABULARY_MISMATCH': 'VocabularyMismatch',
    'FORMAT_STEP_MISMATCH': 'StepMismatch',
    'FORMAT_OPTIMIZER_NAMES': 'OptimizerNames',
    'FORMAT_OPTIMIZER_SHAPE': 'OptimizerShape',
    'FORMAT_NON_CANONICAL': 'NonCanonical',
    'FORMAT_IO': 'Io',
    'FORMAT_UNSUPPORTED_ATOMIC_REPLACEMENT': 'UnsupportedAtomicReplacement',
}
"""The reference's category name (SPEC §9.9) of every code."""

FORMAT_ERROR_CODES: Tuple[str, ...] = tuple(FORMAT_ERROR_CATEGORIES)
"""Every stable ``FORMAT_*`` code."""


class FormatError(Exception):
    """Every failure of this module: bad bytes, or a state the encoder cannot write.

    Attributes mirror ``FormatError`` of ``@llmcp/format``: ``code`` (e.g.
    ``'FORMAT_CHECKSUM_MISMATCH'``), ``category`` (``'ChecksumMismatch'``),
    ``reason`` (a stable sub-kind such as ``'invalid-beta-power'``) and, when
    known, ``offset`` (absolute byte offset), ``field``, ``record_name``,
    ``record_index``, ``element_index``, ``expected`` and ``found`` (else None).
    """

    def __init__(
        self,
        code: str,
        message: str,
        *,
        reason: str = 'unspecified',
        offset: Optional[int] = None,
        field: Optional[str] = None,
        record_name: Optional[str] = None,
        record_index: Optional[int] = None,
        element_index: Optional[int] = None,
        expected: Optional[str] = None,
        found: Optional[str] = None,
    ) -> None:
        if code not in FORMAT_ERROR_CATEGORIES:
            raise ValueError(f'unknown FormatError code {code!r}')
        super().__init__(message)
        self.code = code
        self.category = FORMAT_ERROR_CATEGORIES[code]
        self.reason = reason
        self.message = message
        self.offset = offset
        self.field = field
        self.record_name = record_name
        self.record_index = record_index
        self.element_index = element_index
        self.expected = expected
        self.found = found

    def to_dict(self) -> Dict[str, Any]:
        """Plain data with the key names of ``formatErrorData`` in ``@llmcp/format`` (absent fields left out)."""
        out: Dict[str, Any] = {'code': self.code, 'category': self.category, 'reason': self.reason, 'message': self.message}
        for key, value in (
            ('offset', self.offset),
            ('field', self.field),
            ('recordName', self.record_name),
            ('recordIndex', self.record_index),
            ('elementIndex', self.element_index),
            ('expected', self.expected),
            ('found', self.found),
        ):
            if value is not None:
                out[key] = value
        return out

    def __repr__(self) -> str:
        return f'FormatError({self.code}: {self.message})'


# ---------------------------------------------------------------------------
# Constants (SPEC §3, §4.2, §15.2)
# ---------------------------------------------------------------------------

MAGIC = b'LLMCP35\x00'
FORMAT_VERSION = 1
ENDIAN_MARKER = 0x01020304
FIXED_HEADER_BYTES = 38
CHECKSUM_OFFSET = 30
TOKENIZER_LAYOUT_VERSION = 1
RNG_ALGORITHM_VERSION = 1
BASE_HEADER_BYTES = 208
MAX_HEADER_BYTES = 2 ** 26
"""Largest ``header_bytes`` read or written (64 MiB, SPEC §15.2)."""
BPE_RECORD_NAME = 'training-pairs'
BPE_BASE_VOCABULARY = 258
U64_MAX = (1 << 64) - 1
U32_MAX = 0xFFFFFFFF
MAX_SAFE_INTEGER = (1 << 53) - 1
ROTARY_ENTRY_LIMIT = ((1 << 63) - 1) // 8

ROLE_NAMES = {1: 'literal-token', 2: 'bpe-pairs', 3: 'model-parameter', 4: 'first-moment', 5: 'second-moment'}
DTYPE_NAMES = {1: 'u8', 2: 'u32', 3: 'f64'}
DTYPE_WIDTHS = {1: 1, 2: 4, 3: 8}
TOKENIZER_KIND_NAMES = {1: 'literal-u32', 2: 'byte-bpe'}

FNV_OFFSET_BASIS = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3

_LITTLE_ENDIAN_HOST = sys.byteorder == 'little'

_BLOCK_SUFFIXES = (
    'attention_norm.gain',
    'attention.query.weight',
    'attention.key.weight',
    'attention.value.weight',
    'attention.output.weight',
    'ffn_norm.gain',
    'ffn.gate.weight',
    'ffn.up.weight',
    'ffn.down.weight',
)

# ---------------------------------------------------------------------------
# FNV-1a 64 (SPEC §3.1)
# ---------------------------------------------------------------------------


def fnv1a64(data: Union[bytes, bytearray, memoryview], seed: int = FNV_OFFSET_BASIS) -> int:
    """64-bit FNV-1a of ``data`` starting from ``seed`` (pure Python, about 10 MB/s)."""
    h = seed
    mask = U64_MAX
    prime = FNV_PRIME
    for b in bytes(data):
        h = ((h ^ b) * prime) & mask
    return h


def file_checksum(data: Union[bytes, bytearray, memoryview]) -> int:
    """The LLMCP35 checksum: FNV-1a 64 of the whole file with bytes 30..37 taken as zero."""
    view = memoryview(data)
    h = fnv1a64(view[:CHECKSUM_OFFSET])
    h = fnv1a64(b'\x00' * 8, h)
    return fnv1a64(view[CHECKSUM_OFFSET + 8:], h)


def checksum_label(value: int) -> str:
    """``fnv1a64:`` followed by 16 lowercase hex digits."""
    return f'fnv1a64:{value:016x}'


# ---------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------


def _f64_text(value: float) -> str:
    """An f64 as JavaScript's ``String`` writes it (with ``-0`` kept)."""
    if value != value:
        return 'NaN'
    if value == math.inf:
        return 'Infinity'
    if value == -math.inf:
        return '-Infinity'
    if value == 0:
        return '-0' if math.copysign(1.0, value) < 0 else '0'
    if value == int(value) and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if 'e' in text:
        mantissa, exponent = text.split('e')
        exp = int(exponent)
        text = f'{mantissa}e{"+" if exp > 0 else "-"}{abs(exp)}'
    return text


def _hex_bytes(data: bytes) -> str:
    return ' '.join(f'{b:02x}' for b in data)


def _shape_text(shape: Sequence[int]) -> str:
    return '[' + ', '.join(str(d) for d in shape) + ']'


def _is_finite(value: float) -> bool:
    return value - value == 0


def _finite_pow(base: float, exponent: float) -> float:
    try:
        return math.pow(base, exponent)
    except OverflowError:
        return math.inf


def _utf8_strict(raw: bytes) -> Optional[str]:
    try:
        return raw.decode('utf-8', 'strict')
    except UnicodeDecodeError:
        return None


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


def model_parameter_name(index: int, layers: int) -> str:
    """Name of the parameter at ``index`` in model order (SPEC §7)."""
    if index == 0:
        return 'token_embedding.weight'
    if index == 1 + 9 * layers:
        return 'final_norm.gain'
    inner = index - 1
    if inner < 0 or inner >= 9 * layers:
        raise ValueError(f'parameter index {index} outside a {layers}-layer layout of {2 + 9 * layers} tensors')
    return f'blocks.{inner // 9}.{_BLOCK_SUFFIXES[inner % 9]}'


def expected_parameter_shapes(config: 'DecoderConfig') -> List[Tuple[str, Tuple[int, ...]]]:
    """Names and shapes of every model parameter in model order (SPEC §7); linear weights are [in, out]."""
    v, d, f = config.vocabulary_size, config.model_width, config.feed_forward_width
    out: List[Tuple[str, Tuple[int, ...]]] = [('token_embedding.weight', (v, d))]
    shapes = [(d,), (d, d), (d, d), (d, d), (d, d), (d,), (d, f), (d, f), (f, d)]
    for layer in range(config.layers):
        for suffix, shape in zip(_BLOCK_SUFFIXES, shapes):
            out.append((f'blocks.{layer}.{suffix}', shape))
    out.append(('final_norm.gain', (d,)))
    return out


_NAME_CHARS = re.compile(r'[a-z0-9_.]+')


def _parameter_name_problem(name: str) -> Optional[str]:
    """SPEC §6.5: ``empty-name``, ``invalid-character``, ``empty-segment`` or None."""
    if len(name) == 0:
        return 'empty-name'
    if _NAME_CHARS.fullmatch(name) is None:
        return 'invalid-character'
    if name.startswith('.') or name.endswith('.') or '..' in name:
        return 'empty-segment'
    return None


# ---------------------------------------------------------------------------
# Public data model
# ---------------------------------------------------------------------------


@dataclass
class LiteralTokenizer:
    """Token id i spells ``pieces[i]`` (non-empty, pairwise distinct byte strings)."""

    pieces: List[bytes]
    kind: str = 'literal'

    @property
    def vocabulary_size(self) -> int:
        return len(self.pieces)


@dataclass
class BpeTokenizer:
    """Byte-level BPE: merge rank r joins ``pairs[r]`` in the training id space (SPEC §5.2)."""

    pairs: List[Tuple[int, int]]
    kind: str = 'bpe'

    @property
    def vocabulary_size(self) -> int:
        return BPE_BASE_VOCABULARY + len(self.pairs)


@dataclass
class DecoderConfig:
    """Decoder configuration (SPEC §4, §6.1)."""

    vocabulary_size: int
    model_width: int
    heads: int
    feed_forward_width: int
    layers: int
    max_positions: int
    rope_base: float
    rms_epsilon: float


@dataclass
class AdamWConfig:
    """AdamW hyper-parameters as stored; ``learning_rate`` is the *base* rate (SPEC §1)."""

    learning_rate: float
    beta1: float
    beta2: float
    epsilon: float
    weight_decay: float


@dataclass
class ParameterGroups:
    """Only names in ``decay`` receive weight decay (SPEC §4)."""

    decay: List[str]
    no_decay: List[str]


@dataclass
class Tensor:
    """A named f64 tensor, row-major. ``data`` is a shaped numpy array, a torch tensor, or a flat ``array('d')``/list."""

    name: str
    shape: Tuple[int, ...]
    data: Any


@dataclass
class Moment:
    """First and second AdamW moments of one parameter."""

    name: str
    shape: Tuple[int, ...]
    first: Any
    second: Any


@dataclass
class AdamWState:
    """Complete AdamW state; ``moments`` in any order for the encoder (file order = sorted by name). Empty at step 0."""

    config: AdamWConfig
    groups: Optional[ParameterGroups]
    step: int
    beta1_power: float
    beta2_power: float
    moments: List[Moment] = dc_field(default_factory=list)


@dataclass
class DescriptorLayout:
    """One descriptor of a valid file; all offsets absolute."""

    index: int
    role: str
    role_tag: int
    name: str
    dtype: str
    dtype_tag: int
    shape: Tuple[int, ...]
    offset: int
    byte_length: int
    entry_offset: int
    entry_length: int

    @property
    def end(self) -> int:
        return self.offset + self.byte_length


@dataclass
class Layout:
    """Header fields and geometry of a decoded file (SPEC §3–§5)."""

    file_length: int
    header_bytes: int
    payload_bytes: int
    checksum: int
    tokenizer_kind_tag: int
    groups_flag: int
    model_parameter_count: int
    optimizer_state_count: int
    descriptor_count: int
    descriptor_count_offset: int
    descriptors: List[DescriptorLayout]

    @property
    def checksum_label(self) -> str:
        return checksum_label(self.checksum)

    @property
    def tokenizer_kind_name(self) -> str:
        return TOKENIZER_KIND_NAMES[self.tokenizer_kind_tag]


@dataclass
class Checkpoint:
    """Everything one LLMCP35 v1 file holds (SPEC §1). ``layout`` is set by :func:`decode`."""

    tokenizer: Union[LiteralTokenizer, BpeTokenizer]
    decoder: DecoderConfig
    parameters: List[Tensor]
    optimizer: AdamWState
    selected_step: int
    sampling_rng_state: int
    layout: Optional[Layout] = None

    def parameter(self, name: str) -> Optional[Tensor]:
        """The model parameter called ``name``, or None."""
        for p in self.parameters:
            if p.name == name:
                return p
        return None

    def moments(self, name: str) -> Optional[Moment]:
        """The AdamW moments of parameter ``name``, or None (always at step 0)."""
        for m in self.optimizer.moments:
            if m.name == name:
                return m
        return None

    def state_dict(self) -> Dict[str, Any]:
        """``{name: tensor}`` in model order. Linear weights are llmcp's [in, out] (``nn.Linear.weight`` is its transpose)."""
        return {p.name: p.data for p in self.parameters}


# ---------------------------------------------------------------------------
# Tensor conversion
# ---------------------------------------------------------------------------

_TENSOR_KINDS = ('auto', 'numpy', 'torch', 'array', 'list')


def _import_torch() -> Any:
    try:
        import torch  # noqa: PLC0415 - optional, imported on request
    except ImportError as e:
        raise ImportError('llmcp_format: torch is not installed (tensors="torch" needs it)') from e
    return torch


def _resolve_kind(kind: str) -> str:
    if kind not in _TENSOR_KINDS:
        raise ValueError(f'tensors must be one of {", ".join(_TENSOR_KINDS)}, got {kind!r}')
    if kind == 'auto':
        return 'numpy' if _np is not None else 'array'
    if kind == 'numpy' and _np is None:
        raise ImportError('llmcp_format: numpy is not installed (tensors="numpy" needs it)')
    if kind == 'torch':
        _import_torch()
    return kind


def _f64_array(raw: bytes) -> array:
    a = array('d')
    a.frombytes(raw)
    if not _LITTLE_ENDIAN_HOST:
        a.byteswap()
    return a


def _nest(flat: Sequence[float], shape: Tuple[int, ...]) -> Any:
    if len(shape) == 0:
        return flat[0]
    if len(shape) == 1:
        return list(flat)
    inner = 1
    for d in shape[1:]:
        inner *= d
    return [_nest(flat[i * inner:(i + 1) * inner], shape[1:]) for i in range(shape[0])]


def _tensor_from_bytes(raw: bytes, shape: Tuple[int, ...], kind: str) -> Any:
    if kind == 'numpy':
        return _np.frombuffer(raw, dtype='<f8').astype(_np.float64).reshape(shape)
    if kind == 'torch':
        torch = _import_torch()
        if _np is not None:
            return torch.from_numpy(_np.frombuffer(raw, dtype='<f8').astype(_np.float64).reshape(shape))
        return torch.tensor(list(_f64_array(raw)), dtype=torch.float64).reshape(shape)
    if kind == 'list':
        return _nest(_f64_array(raw).tolist(), shape)
    return _f64_array(raw)


def _flatten(values: Any) -> List[float]:
    out: List[float] = []
    stack = [values]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(reversed(v))
        else:
            out.append(float(v))
    return out


def _f64_bytes(data: Any, what: str) -> bytes:
    """Little-endian f64 bytes of a tensor-like value (numpy, torch, array('d'), memoryview, (nested) list)."""
    if isinstance(data, array):
        if data.typecode != 'd':
            raise TypeError(f'{what}: expected an array of typecode "d", got "{data.typecode}"')
        if _LITTLE_ENDIAN_HOST:
            return data.tobytes()
        swapped = array('d', data)
        swapped.byteswap()
        return swapped.tobytes()
    module = type(data).__module__ or ''
    if module.startswith('torch'):
        torch = _import_torch()
        if not (data.is_floating_point() or data.dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)):
            raise TypeError(f'{what}: expected a real tensor, got dtype {data.dtype}')
        t = data.detach().to(device='cpu', dtype=torch.float64).contiguous().reshape(-1)
        if _np is not None:
            return t.numpy().astype('<f8', copy=False).tobytes()
        flat = t.tolist()
        return struct.pack(f'<{len(flat)}d', *flat)
    if _np is not None and isinstance(data, _np.ndarray):
        if data.dtype.kind not in 'fiub':
            raise TypeError(f'{what}: expected a real numpy array, got dtype {data.dtype}')
        return _np.ascontiguousarray(data.reshape(-1), dtype='<f8').tobytes()
    if isinstance(data, memoryview):
        if data.format != 'd':
            raise TypeError(f'{what}: expected a memoryview of format "d", got "{data.format}"')
        return _f64_bytes(array('d', data.tolist()), what)
    if isinstance(data, (list, tuple)):
        flat = _flatten(data)
        return struct.pack(f'<{len(flat)}d', *flat)
    raise TypeError(f'{what}: expected a numpy array, torch tensor, array("d") or list of floats, got {type(data).__name__}')


# ---------------------------------------------------------------------------
# Bounds-checked header reader (SPEC §9.2)
# ---------------------------------------------------------------------------


class _Reader:
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
class _Descriptor:
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
class _Header:
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
    descriptors: List[_Descriptor] = dc_field(default_factory=list)


def _parse_fixed_header(data: bytes) -> _Header:
    """SPEC §9.1 steps 1–5, then the header-size limit of §15.2."""
    n = len(data)
    if n < FIXED_HEADER_BYTES:
        raise FormatError(
            'FORMAT_TRUNCATED', f'file of {n} bytes is shorter than the 38-byte fixed header',
            reason='fixed-header', offset=0, field='fixed header', expected='>= 38 bytes', found=f'{n} bytes',
        )
    for i in range(8):
        if data[i] != MAGIC[i]:
            found = _hex_bytes(data[:8])
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
    _assert_header_within_limit(header_bytes)
    return _Header(header_bytes=header_bytes, payload_bytes=payload_bytes, stored_checksum=checksum)


def _assert_header_within_limit(header_bytes: int) -> None:
    if header_bytes > MAX_HEADER_BYTES:
        raise FormatError(
            'FORMAT_LIMIT_EXCEEDED',
            f'header_bytes at offset 14 is too large: expected at most {MAX_HEADER_BYTES} (64 MiB, SPEC §15.2; a header holds only names and descriptors), found {header_bytes}',
            reason='header-too-large', offset=14, field='header_bytes', expected=f'<= {MAX_HEADER_BYTES}', found=str(header_bytes),
        )


_ADAMW_FIELDS = (('learningRate', 131), ('beta1', 139), ('beta2', 147), ('epsilon', 155), ('weightDecay', 163))


def _validate_adamw_config(values: Tuple[float, float, float, float, float]) -> None:
    """SPEC §6.2, in order."""
    lr, beta1, beta2, eps, wd = values
    rules = (
        (_is_finite(lr) and lr > 0, 'invalid-learning-rate', 0, 'a finite value > 0', lr),
        (_is_finite(beta1) and 0 <= beta1 < 1, 'invalid-beta1', 1, 'a finite value in [0, 1)', beta1),
        (_is_finite(beta2) and 0 <= beta2 < 1, 'invalid-beta2', 2, 'a finite value in [0, 1)', beta2),
        (_is_finite(eps) and eps > 0, 'invalid-epsilon', 3, 'a finite value > 0', eps),
        (_is_finite(wd) and wd >= 0, 'invalid-weight-decay', 4, 'a finite value >= 0', wd),
    )
    for ok, reason, k, rule, value in rules:
        if not ok:
            name, offset = _ADAMW_FIELDS[k]
            raise FormatError(
                'FORMAT_ADAMW_CONFIG', f'invalid AdamW {name} at offset {offset}: expected {rule}, found {_f64_text(value)}',
                reason=reason, offset=offset, field=name, expected=rule, found=_f64_text(value),
            )
    if wd != 0:
        product = lr * wd
        if not (_is_finite(product) and 0 < product < 1):
            raise FormatError(
                'FORMAT_ADAMW_CONFIG', f'invalid AdamW decay product learning_rate × weight_decay = {_f64_text(product)}: expected a finite value in (0, 1)',
                reason='invalid-decay-product', offset=163, field='weightDecay',
                expected='learning_rate × weight_decay in (0, 1)', found=_f64_text(product),
            )


def _validate_groups(decay: List[Tuple[str, int]], no_decay: List[Tuple[str, int]]) -> None:
    """SPEC §6.3: file order, decay list first."""
    for label, names in (('decay', decay), ('no-decay', no_decay)):
        seen = set()
        for i, (name, offset) in enumerate(names):
            if len(name) == 0:
                raise FormatError(
                    'FORMAT_ADAMW_CONFIG', f'empty name at index {i} of the {label} group (offset {offset}): expected a non-empty parameter name',
                    reason='empty-group-name', offset=offset, field=f'{label} group[{i}]', element_index=i, expected='non-empty name', found='""',
                )
            if name in seen:
                raise FormatError(
                    'FORMAT_ADAMW_CONFIG', f'duplicate name "{name}" at index {i} of the {label} group (offset {offset}): expected each name once',
                    reason='duplicate-group-name', offset=offset, field=f'{label} group[{i}]', record_name=name, element_index=i,
                )
            seen.add(name)
    if not decay and not no_decay:
        raise FormatError(
            'FORMAT_ADAMW_CONFIG', 'parameter groups present but both lists are empty: expected at least one name',
            reason='empty-groups', field='parameter groups',
        )
    no_decay_set = {n for n, _ in no_decay}
    for i, (name, offset) in enumerate(decay):
        if name in no_decay_set:
            raise FormatError(
                'FORMAT_ADAMW_CONFIG', f'name "{name}" is in both the decay and the no-decay group (decay entry at offset {offset})',
                reason='name-in-both-groups', offset=offset, field=f'decay group[{i}]', record_name=name,
            )


def _invalid_utf8(field: str, offset: int, raw: bytes) -> FormatError:
    found = _hex_bytes(raw[:32])
    return FormatError(
        'FORMAT_INVALID_UTF8', f'{field} at offset {offset} is not valid UTF-8: found bytes {found}{" …" if len(raw) > 32 else ""}',
        reason='invalid-utf8', offset=offset, field=field, expected='valid UTF-8', found=found,
    )


def _read_name_list(r: _Reader, label: str) -> List[Tuple[str, int]]:
    count = r.u32(f'{label} name count')
    names: List[Tuple[str, int]] = []
    for i in range(count):  # grows as read; every read bounded by header_bytes (SPEC §9.10)
        text, raw, offset = r.string(f'{label} name {i}')
        if text is None:
            raise _invalid_utf8(f'{label} name {i}', offset + 4, raw)
        names.append((text, offset))
    return names


def _read_descriptor(r: _Reader, index: int) -> _Descriptor:
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
    return _Descriptor(index, entry_offset, r.pos - entry_offset, role_tag, text, bytes(raw), dtype_tag, shape, offset, byte_length)


def _parse_variable_header(data: bytes, h: _Header) -> _Header:
    """SPEC §9.2 in order, validating AdamW configuration and groups on the way."""
    r = _Reader(data, FIXED_HEADER_BYTES, h.header_bytes)
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
    _validate_adamw_config(h.adamw)
    flag = r.u8('parameter-groups flag')
    h.groups_flag = flag
    if flag == 1:
        decay = _read_name_list(r, 'decay')
        no_decay = _read_name_list(r, 'no-decay')
        h.groups = (decay, no_decay)
        _validate_groups(decay, no_decay)
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
# Descriptor geometry (SPEC §9.3)
# ---------------------------------------------------------------------------


def _checked_byte_length(shape: Sequence[int], width: int) -> Optional[int]:
    n = 1
    for d in shape:
        n *= d
        if n > U64_MAX:
            return None
    n *= width
    return None if n > U64_MAX else n


def _strides_overflow(shape: Sequence[int]) -> bool:
    stride = 1
    for i in range(len(shape) - 1, 0, -1):
        stride *= shape[i]
        if stride > U64_MAX:
            return True
    return False


def _geometry_layout(message: str, d: _Descriptor, reason: str, field: Optional[str] = None, expected: Optional[str] = None, found: Optional[str] = None) -> FormatError:
    return FormatError(
        'FORMAT_LAYOUT', message, reason=reason, offset=d.entry_offset, field=field or f'descriptor[{d.index}]',
        record_index=d.index, record_name=d.name, expected=expected, found=found,
    )


def _check_geometry(h: _Header, file_length: int) -> Tuple[int, int, int]:
    seen = set()
    position = h.header_bytes
    for d in h.descriptors:
        key = (d.role_tag, d.name)
        if key in seen:
            raise _geometry_layout(f'duplicate record: descriptor[{d.index}] repeats role {d.role_tag} with name "{d.name}" (entry at offset {d.entry_offset})', d, 'duplicate-record')
        seen.add(key)
        width = DTYPE_WIDTHS[d.dtype_tag]
        expected = _checked_byte_length(d.shape, width)
        if expected is None:
            raise FormatError(
                'FORMAT_SIZE_OVERFLOW', f'size of descriptor[{d.index}] ("{d.name}", shape {_shape_text(d.shape)} × {width} bytes) overflows u64',
                reason='record-size', offset=d.entry_offset, field=f'descriptor[{d.index}].shape', record_index=d.index, record_name=d.name,
            )
        if d.byte_length != expected:
            raise _geometry_layout(
                f'byte_len of descriptor[{d.index}] ("{d.name}") is {d.byte_length}: expected {expected} (shape {_shape_text(d.shape)} × {width} bytes)',
                d, 'byte-length-mismatch', field=f'descriptor[{d.index}].byte_len', expected=str(expected), found=str(d.byte_length),
            )
        if d.offset != position:
            raise _geometry_layout(
                f'descriptor[{d.index}] ("{d.name}") starts at offset {d.offset}: expected {position} (records must be contiguous)',
                d, 'not-contiguous', field=f'descriptor[{d.index}].offset', expected=str(position), found=str(d.offset),
            )
        end = d.offset + d.byte_length
        if end > U64_MAX:
            raise _geometry_layout(f'descriptor[{d.index}] ("{d.name}") end offset {d.offset} + {d.byte_length} overflows u64', d, 'end-overflow', field=f'descriptor[{d.index}].byte_len')
        position = end
    if position != file_length:
        raise FormatError(
            'FORMAT_LAYOUT', f'records end at offset {position}: expected the file length {file_length}',
            reason='records-end', offset=min(position, file_length), field='payload end', expected=str(file_length), found=str(position),
        )
    tokenizer = 1 if h.tokenizer_kind_tag == 2 else h.tokenizer_vocabulary
    total = tokenizer + h.model_parameter_count + 2 * h.optimizer_state_count
    if total > U64_MAX:
        raise FormatError(
            'FORMAT_SIZE_OVERFLOW', f'record partition {tokenizer} + {h.model_parameter_count} + 2 × {h.optimizer_state_count} overflows u64',
            reason='record-partition', offset=h.descriptor_count_offset, field='record partition',
        )
    if total != h.descriptor_count:
        raise FormatError(
            'FORMAT_LAYOUT',
            f'record partition mismatch: expected descriptor count = tokenizer records ({tokenizer}) + model parameters ({h.model_parameter_count}) + 2 × optimizer states ({h.optimizer_state_count}) = {total}, found {h.descriptor_count}',
            reason='record-partition', offset=h.descriptor_count_offset, field='descriptor count', expected=str(total), found=str(h.descriptor_count),
        )
    return tokenizer, h.model_parameter_count, 2 * h.optimizer_state_count


# ---------------------------------------------------------------------------
# Record validation (SPEC §9.4–§9.7)
# ---------------------------------------------------------------------------


def _describe(d: _Descriptor) -> str:
    return f'descriptor[{d.index}] ("{d.name}", role {d.role_tag}, dtype {d.dtype_tag}, shape {_shape_text(d.shape)})'


def _layout_error(d: _Descriptor, reason: str, expected: str) -> FormatError:
    return FormatError(
        'FORMAT_LAYOUT', f'{_describe(d)} at entry offset {d.entry_offset}: expected {expected}',
        reason=reason, offset=d.entry_offset, field=f'descriptor[{d.index}]', record_index=d.index, record_name=d.name,
        expected=expected, found=f'role {d.role_tag}, dtype {d.dtype_tag}, name "{d.name}", shape {_shape_text(d.shape)}',
    )


def _record(data: bytes, d: _Descriptor) -> bytes:
    return data[d.offset:d.offset + d.byte_length]


def _first_non_finite(raw: bytes) -> Tuple[int, float]:
    """First index of a NaN or ±∞ among little-endian f64 values, with the value; (-1, 0.0) when all finite."""
    if _np is not None:
        a = _np.frombuffer(raw, dtype='<f8')
        bad = ~_np.isfinite(a)
        if bad.any():
            i = int(_np.argmax(bad))
            return i, float(a[i])
        return -1, 0.0
    for i, v in enumerate(_f64_array(raw)):
        if v - v != 0:
            return i, v
    return -1, 0.0


def _first_negative(raw: bytes) -> Tuple[int, float]:
    if _np is not None:
        a = _np.frombuffer(raw, dtype='<f8')
        neg = a < 0
        if neg.any():
            i = int(_np.argmax(neg))
            return i, float(a[i])
        return -1, 0.0
    for i, v in enumerate(_f64_array(raw)):
        if v < 0:
            return i, v
    return -1, 0.0


def _validate_tokenizer(data: bytes, h: _Header, tok: List[_Descriptor]) -> Union[LiteralTokenizer, BpeTokenizer]:
    if h.tokenizer_kind_tag == 1:
        pieces: List[bytes] = []
        for i, d in enumerate(tok):
            if d.role_tag != 1 or d.dtype_tag != 1 or d.name != str(i):
                raise _layout_error(d, 'literal-record', f'a literal token record: role 1, dtype u8, name "{i}"')
            if len(d.shape) != 1 or d.shape[0] == 0:
                raise _layout_error(d, 'literal-record-shape', 'a literal token shape [n] with n >= 1')
            pieces.append(bytes(_record(data, d)))
        if not pieces:
            raise FormatError(
                'FORMAT_TOKENIZER', 'literal tokenizer with no tokens: expected at least one piece',
                reason='empty-vocabulary', offset=59, field='tokenizer vocabulary', expected='>= 1', found='0',
            )
        seen: Dict[bytes, int] = {}
        for token_id, piece in enumerate(pieces):
            earlier = seen.get(piece)
            if earlier is not None:
                d = tok[token_id]
                raise FormatError(
                    'FORMAT_TOKENIZER', f'literal token {token_id} repeats the spelling of token {earlier}: expected pairwise distinct pieces',
                    reason='repeated-spelling', offset=d.offset, field=f'descriptor[{d.index}]', record_index=d.index, record_name=d.name,
                    element_index=token_id, expected='a new spelling', found=f'the spelling of token {earlier}',
                )
            seen[piece] = token_id
        return LiteralTokenizer(pieces)
    d = tok[0]
    if d.role_tag != 2 or d.dtype_tag != 2 or d.name != BPE_RECORD_NAME:
        raise _layout_error(d, 'bpe-record', f'the BPE record: role 2, dtype u32, name "{BPE_RECORD_NAME}"')
    if len(d.shape) != 2 or d.shape[1] != 2:
        raise _layout_error(d, 'bpe-record-shape', 'a BPE shape [M, 2]')
    merges = d.shape[0]
    if BPE_BASE_VOCABULARY + merges - 1 > U32_MAX:
        raise FormatError(
            'FORMAT_BPE', f'BPE table with {merges} merges: vocabulary 258 + M - 1 does not fit in u32',
            reason='layout-overflow', record_index=d.index, record_name=d.name,
        )
    raw = _record(data, d)
    values = struct.unpack(f'<{2 * merges}I', raw) if merges else ()
    pairs: List[Tuple[int, int]] = []
    seen_pairs = set()
    for rank in range(merges):
        left, right = values[2 * rank], values[2 * rank + 1]
        limit = 256 + rank
        for side, token, at in (('left', left, 0), ('right', right, 4)):
            if token >= limit:
                raise FormatError(
                    'FORMAT_BPE', f'BPE merge rank {rank}: unknown {side} operand {token}, expected an id below {limit}',
                    reason='unknown-operand', offset=d.offset + 8 * rank + at, field=f'training-pairs[{rank}].{side}',
                    record_index=d.index, record_name=d.name, element_index=rank, expected=f'< {limit}', found=str(token),
                )
        if (left, right) in seen_pairs:
            raise FormatError(
                'FORMAT_BPE', f'BPE merge rank {rank}: duplicate pair ({left}, {right}) of an earlier rank',
                reason='duplicate-pair', offset=d.offset + 8 * rank, field=f'training-pairs[{rank}]',
                record_index=d.index, record_name=d.name, element_index=rank, found=f'({left}, {right})',
            )
        seen_pairs.add((left, right))
        pairs.append((left, right))
    derived = BPE_BASE_VOCABULARY + merges
    if derived != h.tokenizer_vocabulary:
        raise FormatError(
            'FORMAT_VOCABULARY_MISMATCH',
            f'BPE table with {merges} merges defines {derived} ids: expected the declared tokenizer vocabulary {h.tokenizer_vocabulary} to equal 258 + M',
            reason='bpe-vocabulary', offset=59, field='tokenizer vocabulary', expected=str(derived), found=str(h.tokenizer_vocabulary),
        )
    return BpeTokenizer(pairs)


def _model_error(reason: str, message: str, **extra: Any) -> FormatError:
    return FormatError('FORMAT_MODEL', message, reason=reason, **extra)


def _validate_decoder_config(c: Tuple[int, int, int, int, int, int, float, float]) -> None:
    """SPEC §6.1, first bullet, in the order listed there."""
    vocab, width, heads, ffn, _layers, positions, rope_base, rms_eps = c
    for name, value, reason in (('vocabularySize', vocab, 'invalid-vocabulary-size'), ('modelWidth', width, 'invalid-model-width'), ('heads', heads, 'invalid-heads')):
        if value < 1:
            raise _model_error(reason, f'decoder {name} is {value}: expected >= 1', field=name, expected='>= 1', found=str(value))
    if width % heads != 0:
        raise _model_error('width-not-divisible-by-heads', f'decoder model_width {width} is not divisible by heads {heads}', field='heads', expected=f'a divisor of {width}', found=str(heads))
    if (width // heads) % 2 != 0:
        raise _model_error(
            'odd-head-width', f'head width {width // heads} (model_width {width} / heads {heads}) is odd: expected an even head width for RoPE',
            field='heads', expected='even head width', found=str(width // heads),
        )
    if ffn < 1:
        raise _model_error('invalid-feed-forward-width', f'decoder feed_forward_width is {ffn}: expected >= 1', field='feedForwardWidth', expected='>= 1', found=str(ffn))
    if positions < 1:
        raise _model_error('invalid-max-positions', f'decoder max_positions is {positions}: expected >= 1', field='maxPositions', expected='>= 1', found=str(positions))
    if not (_is_finite(rope_base) and rope_base > 0):
        raise _model_error('invalid-rope-base', f'decoder rope_base is {_f64_text(rope_base)}: expected a finite value > 0', field='ropeBase', expected='finite > 0', found=_f64_text(rope_base))
    if not (_is_finite(rms_eps) and rms_eps >= 0):
        raise _model_error('invalid-rms-epsilon', f'decoder rms_epsilon is {_f64_text(rms_eps)}: expected a finite value >= 0', field='rmsEpsilon', expected='finite >= 0', found=_f64_text(rms_eps))


def _rotary_problem(head_width: int, max_positions: int, rope_base: float) -> Optional[str]:
    """SPEC §6.1 rotary realisability; only the last position needs checking (p·f is monotone)."""
    pairs = head_width // 2
    if max_positions * pairs > ROTARY_ENTRY_LIMIT:
        return f'rotary table of {max_positions} × {pairs} entries is too large'
    last = float(max_positions - 1)
    for i in range(pairs):
        inverse = _finite_pow(rope_base, (-2 * i) / head_width)
        if not _is_finite(inverse):
            return f'inverse frequency {i} ({rope_base}^({-2 * i}/{head_width})) is not finite'
        if not _is_finite(last * inverse):
            return f'rotary angle at position {int(last)}, pair {i} is not finite'
    return None


def _validate_model_shapes(c: Tuple[int, int, int, int, int, int, float, float], records: List[_Descriptor]) -> None:
    """SPEC §9.5 step 6: structural problems at once, plain mismatches remembered (the first one)."""
    vocab, width_cfg, heads, ffn, _layers, positions, rope_base, _eps = c
    layers = (len(records) - 2) // 9
    remembered: List[FormatError] = []

    def remember(e: FormatError) -> None:
        if not remembered:
            remembered.append(e)

    def structural(r: _Descriptor, reason: str, what: str) -> FormatError:
        return _model_error(reason, f'parameter "{r.name}" (descriptor[{r.index}]) shape {_shape_text(r.shape)}: {what}', record_name=r.name, record_index=r.index, found=_shape_text(r.shape))

    def is_matrix(r: _Descriptor) -> bool:
        return len(r.shape) == 2 and r.shape[0] != 0 and r.shape[1] != 0

    def is_vector(r: _Descriptor) -> bool:
        return len(r.shape) == 1 and r.shape[0] != 0

    emb = records[0]
    if not is_matrix(emb):
        raise structural(emb, 'invalid-embedding-shape', 'expected rank 2 with non-zero dimensions')
    if emb.shape[0] != vocab:
        remember(_model_error('embedding-vocabulary-mismatch', f'token_embedding.weight has {emb.shape[0]} rows: expected decoder vocabulary_size {vocab}',
                              record_name=emb.name, record_index=emb.index, expected=str(vocab), found=str(emb.shape[0])))
    elif emb.shape[1] != width_cfg:
        remember(_model_error('embedding-width-mismatch', f'token_embedding.weight has {emb.shape[1]} columns: expected decoder model_width {width_cfg}',
                              record_name=emb.name, record_index=emb.index, expected=str(width_cfg), found=str(emb.shape[1])))
    rotary_cache: Dict[int, Optional[str]] = {}
    for layer in range(layers):
        an, q, k, v, o, fn, gate, up, down = records[1 + 9 * layer:10 + 9 * layer]

        def mismatch(r: _Descriptor, what: str) -> FormatError:
            return structural(r, 'layer-shape', f'{what} (layer {layer})')

        if not is_vector(an):
            raise structural(an, 'invalid-norm-shape', f'expected rank 1 with a non-zero width (layer {layer})')
        for r in (q, k, v):
            if not is_matrix(r):
                raise structural(r, 'invalid-weight-shape', f'expected rank 2 with non-zero dimensions (layer {layer})')
        if k.shape[0] != q.shape[0] or v.shape[0] != q.shape[0]:
            raise mismatch(k if k.shape[0] != q.shape[0] else v, f'query/key/value input widths differ ({q.shape[0]}, {k.shape[0]}, {v.shape[0]})')
        if k.shape[1] != q.shape[1] or v.shape[1] != q.shape[1]:
            raise mismatch(k if k.shape[1] != q.shape[1] else v, f'query/key/value output widths differ ({q.shape[1]}, {k.shape[1]}, {v.shape[1]})')
        if not is_matrix(o):
            raise structural(o, 'invalid-weight-shape', f'expected rank 2 with non-zero dimensions (layer {layer})')
        width = q.shape[0]
        if width % heads != 0:
            raise mismatch(q, f'query input width {width} is not divisible by heads {heads}')
        head_width = width // heads
        if head_width % 2 != 0:
            raise mismatch(q, f'head width {head_width} is odd')
        if q.shape[1] != width:
            raise mismatch(q, f'query output width {q.shape[1]} differs from its input width {width}')
        if o.shape[0] != width or o.shape[1] != width:
            raise mismatch(o, f'output projection must be [{width}, {width}]')
        if head_width not in rotary_cache:
            rotary_cache[head_width] = _rotary_problem(head_width, positions, rope_base)
        rotary = rotary_cache[head_width]
        if rotary is not None:
            raise _model_error('rotary-table', f'layer {layer}: {rotary}', record_name=q.name, record_index=q.index)
        if not is_vector(fn):
            raise structural(fn, 'invalid-norm-shape', f'expected rank 1 with a non-zero width (layer {layer})')
        for r in (gate, up, down):
            if not is_matrix(r):
                raise structural(r, 'invalid-weight-shape', f'expected rank 2 with non-zero dimensions (layer {layer})')
        if up.shape[0] != gate.shape[0]:
            raise mismatch(up, f'gate and up input widths differ ({gate.shape[0]}, {up.shape[0]})')
        if up.shape[1] != gate.shape[1]:
            raise mismatch(up, f'gate and up output widths differ ({gate.shape[1]}, {up.shape[1]})')
        if down.shape[0] != gate.shape[1]:
            raise mismatch(down, f'down input width {down.shape[0]} differs from the hidden width {gate.shape[1]}')
        if an.shape[0] != width:
            raise mismatch(an, f'attention norm width {an.shape[0]} differs from the layer width {width}')
        if fn.shape[0] != width:
            raise mismatch(fn, f'feed-forward norm width {fn.shape[0]} differs from the layer width {width}')
        if gate.shape[0] != width:
            raise mismatch(gate, f'gate input width {gate.shape[0]} differs from the layer width {width}')
        if down.shape[1] != width:
            raise mismatch(down, f'down output width {down.shape[1]} differs from the layer width {width}')
        if width != width_cfg:
            remember(_model_error('layer-width-mismatch', f'layer {layer} width {width}: expected decoder model_width {width_cfg}',
                                  record_name=q.name, record_index=q.index, expected=str(width_cfg), found=str(width)))
        elif gate.shape[1] != ffn:
            remember(_model_error('hidden-width-mismatch', f'layer {layer} hidden width {gate.shape[1]}: expected decoder feed_forward_width {ffn}',
                                  record_name=gate.name, record_index=gate.index, expected=str(ffn), found=str(gate.shape[1])))
    fin = records[-1]
    if not is_vector(fin):
        raise structural(fin, 'invalid-norm-shape', 'expected rank 1 with a non-zero width')
    if fin.shape[0] != width_cfg:
        remember(_model_error('final-norm-width-mismatch', f'final_norm.gain width {fin.shape[0]}: expected decoder model_width {width_cfg}',
                              record_name=fin.name, record_index=fin.index, expected=str(width_cfg), found=str(fin.shape[0])))
    if remembered:
        raise remembered[0]


def _validate_beta_powers(step: int, b1: float, b2: float, offsets: Tuple[int, int]) -> None:
    """SPEC §6.4: exactly 1.0 at step 0 (1.0 has one bit pattern, so == is a bit test), finite in [0, 1) after."""
    for name, value, offset in (('beta1Power', b1, offsets[0]), ('beta2Power', b2, offsets[1])):
        ok = value == 1.0 if step == 0 else (_is_finite(value) and 0 <= value < 1)
        if not ok:
            expected = 'exactly 1.0 at step 0' if step == 0 else f'a finite value in [0, 1) at step {step}'
            raise FormatError(
                'FORMAT_ADAMW_STATE', f'invalid {name} at offset {offset}: expected {expected}, found {_f64_text(value)}',
                reason='invalid-beta-power', offset=offset, field=name, expected=expected, found=_f64_text(value),
            )


def _validate_records(data: bytes, h: _Header, partition: Tuple[int, int, int]) -> Dict[str, Any]:
    tokenizer_count, model_count, _ = partition
    all_d = h.descriptors
    tok_slice = all_d[:tokenizer_count]
    model_slice = all_d[tokenizer_count:tokenizer_count + model_count]
    opt_slice = all_d[tokenizer_count + model_count:]

    tokenizer = _validate_tokenizer(data, h, tok_slice)  # §9.4

    # §9.5 model
    if not model_slice:
        raise FormatError(
            'FORMAT_LAYOUT', 'model parameter count is 0: expected at least the embedding and the final norm',
            reason='empty-model-slice', field='model parameter count', expected='>= 2', found='0',
        )
    for d in model_slice:
        if d.role_tag != 3 or d.dtype_tag != 3:
            raise _layout_error(d, 'model-record', 'a model parameter record: role 3, dtype f64')
        raw = _record(data, d)
        if _strides_overflow(d.shape):
            raise FormatError(
                'FORMAT_TENSOR_SHAPE', f'parameter "{d.name}" shape {_shape_text(d.shape)}: row-major strides overflow u64',
                reason='stride-overflow', offset=d.entry_offset, record_index=d.index, record_name=d.name,
            )
        problem = _parameter_name_problem(d.name)
        if problem is not None:
            raise FormatError(
                'FORMAT_INVALID_PARAMETER',
                f'parameter name "{d.name}" (descriptor[{d.index}]) is invalid ({problem}): expected lowercase ASCII letters, digits, "_" and "." with no empty segment',
                reason=problem, offset=d.entry_offset, field=f'descriptor[{d.index}].name', record_index=d.index, record_name=d.name,
            )
        bad, value = _first_non_finite(raw)
        if bad >= 0:
            at = d.offset + 8 * bad
            raise FormatError(
                'FORMAT_INVALID_PARAMETER', f'parameter "{d.name}" element {bad} at offset {at} is {_f64_text(value)}: expected a finite value',
                reason='non-finite-parameter', offset=at, record_index=d.index, record_name=d.name, element_index=bad,
                expected='finite', found=_f64_text(value),
            )
    _validate_decoder_config(h.decoder)
    layers = h.decoder[4]
    if len(model_slice) != 2 + 9 * layers:
        raise _model_error(
            'parameter-count-mismatch', f'model has {len(model_slice)} parameter records: expected 2 + 9 × {layers} layers = {2 + 9 * layers}',
            field='model parameter count', expected=str(2 + 9 * layers), found=str(len(model_slice)),
        )
    for i, d in enumerate(model_slice):
        expected = model_parameter_name(i, layers)
        if d.name != expected:
            raise _model_error(
                'name-mismatch', f'model parameter {i} is named "{d.name}": expected "{expected}" (model order, SPEC.md §7)',
                offset=d.entry_offset, record_index=d.index, record_name=d.name, element_index=i, expected=expected, found=d.name,
            )
    _validate_model_shapes(h.decoder, model_slice)

    # §9.6 optimizer
    moments: List[Tuple[_Descriptor, _Descriptor]] = []
    for p in range(0, len(opt_slice) - 1, 2):
        first, second = opt_slice[p], opt_slice[p + 1]
        if first.role_tag != 4 or first.dtype_tag != 3:
            raise _layout_error(first, 'first-moment-record', 'a first-moment record: role 4, dtype f64')
        if second.role_tag != 5 or second.dtype_tag != 3 or second.name != first.name:
            raise _layout_error(second, 'second-moment-record', f'a second-moment record for "{first.name}": role 5, dtype f64')
        if first.shape != second.shape:
            raise _layout_error(second, 'moment-shape-mismatch', f'the shape of its first moment {_shape_text(first.shape)}')
        for d in (first, second):
            bad, value = _first_non_finite(_record(data, d))
            if bad >= 0:
                at = d.offset + 8 * bad
                raise FormatError(
                    'FORMAT_ADAMW_STATE', f'{"first" if d.role_tag == 4 else "second"} moment of "{d.name}" element {bad} at offset {at} is {_f64_text(value)}: expected a finite value',
                    reason='non-finite-moment', offset=at, record_index=d.index, record_name=d.name, element_index=bad, expected='finite', found=_f64_text(value),
                )
        neg, value = _first_negative(_record(data, second))
        if neg >= 0:
            at = second.offset + 8 * neg
            raise FormatError(
                'FORMAT_ADAMW_STATE', f'second moment of "{second.name}" element {neg} at offset {at} is {_f64_text(value)}: expected a value >= 0',
                reason='negative-second-moment', offset=at, record_index=second.index, record_name=second.name, element_index=neg,
                expected='>= 0', found=_f64_text(value),
            )
        moments.append((first, second))
    step = h.optimizer_step
    _validate_beta_powers(step, h.beta1_power, h.beta2_power, (h.optimizer_step_offset + 8, h.optimizer_step_offset + 16))
    if step == 0 and moments:
        raise FormatError(
            'FORMAT_ADAMW_STATE', f'optimizer step 0 with {len(moments)} moment entries: expected no moment state at step 0',
            reason='state-presence', field='optimizer state count', expected='0', found=str(len(moments)),
        )
    if step > 0 and not moments:
        raise FormatError(
            'FORMAT_ADAMW_STATE', f'optimizer step {step} without moment state: expected moments for every parameter',
            reason='state-presence', field='optimizer state count', expected='> 0', found='0',
        )
    if h.groups is not None and step > 0:
        union = sorted([n for n, _ in h.groups[0]] + [n for n, _ in h.groups[1]])
        names = sorted(f.name for f, _ in moments)
        for i in range(max(len(union), len(names))):
            a = union[i] if i < len(union) else None
            b = names[i] if i < len(names) else None
            if a != b:
                raise FormatError(
                    'FORMAT_ADAMW_STATE',
                    f'parameter groups do not match the moment state: at sorted position {i} expected {"no further name" if b is None else repr(b)} (from moments), found {"no further name" if a is None else repr(a)} (from groups)',
                    reason='groups-mismatch', field='parameter groups', element_index=i, expected=b if b is not None else '(none)', found=a if a is not None else '(none)',
                )

    # §9.7 cross-component
    if h.tokenizer_vocabulary != h.decoder[0]:
        raise FormatError(
            'FORMAT_VOCABULARY_MISMATCH', f'tokenizer vocabulary {h.tokenizer_vocabulary} differs from decoder vocabulary_size {h.decoder[0]}',
            reason='decoder-vocabulary', offset=59, field='tokenizer vocabulary', expected=str(h.decoder[0]), found=str(h.tokenizer_vocabulary),
        )
    if h.selected_step != step:
        raise FormatError(
            'FORMAT_STEP_MISMATCH', f'selected step {h.selected_step} at offset 42 differs from optimizer step {step}',
            reason='step-mismatch', offset=42, field='selected step', expected=str(step), found=str(h.selected_step),
        )
    if h.selected_step > 0:
        moment_names = sorted(f.name for f, _ in moments)
        model_names = sorted(d.name for d in model_slice)
        for i in range(max(len(moment_names), len(model_names))):
            a = moment_names[i] if i < len(moment_names) else None
            b = model_names[i] if i < len(model_names) else None
            if a != b:
                raise FormatError(
                    'FORMAT_OPTIMIZER_NAMES',
                    f'optimizer moment names differ from model parameter names at sorted position {i}: expected {b or "(none)"}, found {a or "(none)"}',
                    reason='optimizer-names', element_index=i, expected=b if b is not None else '(none)', found=a if a is not None else '(none)',
                )
        shapes = {d.name: d.shape for d in model_slice}
        by_name = {d.name: d for d in opt_slice if d.role_tag == 4}
        for name in moment_names:
            d = by_name[name]
            if d.shape != shapes[name]:
                raise FormatError(
                    'FORMAT_OPTIMIZER_SHAPE', f'moment shape of "{name}" is {_shape_text(d.shape)}: expected the parameter shape {_shape_text(shapes[name])}',
                    reason='optimizer-shape', offset=d.entry_offset, record_index=d.index, record_name=name,
                    expected=_shape_text(shapes[name]), found=_shape_text(d.shape),
                )

    # SPEC §15.2: feed_forward_width and max_positions may be any u64 (@llmcp/format keeps the exact value in
    # `decoder.exact`). The other sizes are bounded by record shapes, so this mirrors a check of @llmcp/format
    # that a valid file cannot reach.
    for name, value in zip(('vocabularySize', 'modelWidth', 'heads', 'layers'), (h.decoder[0], h.decoder[1], h.decoder[2], h.decoder[4])):
        if value > MAX_SAFE_INTEGER:
            raise FormatError(
                'FORMAT_LIMIT_EXCEEDED', f'decoder {name} {value} exceeds 2^53 - 1, the largest integer this runtime represents exactly',
                reason='unsafe-integer', field=name, expected=f'<= {MAX_SAFE_INTEGER}', found=str(value),
            )
    return {'tokenizer': tokenizer, 'model': model_slice, 'moments': moments}


# ---------------------------------------------------------------------------
# Canonical writer (SPEC §8)
# ---------------------------------------------------------------------------


@dataclass
class _PlannedRecord:
    role_tag: int
    name_bytes: bytes
    dtype_tag: int
    shape: Tuple[int, ...]
    payload: bytes


def _header_length(groups: Optional[Tuple[List[bytes], List[bytes]]], records: Sequence[_PlannedRecord]) -> int:
    """SPEC §4.3."""
    total = BASE_HEADER_BYTES
    if groups is not None:
        total += 8 + sum(4 + len(n) for n in groups[0]) + sum(4 + len(n) for n in groups[1])
    return total + sum(26 + len(r.name_bytes) + 8 * len(r.shape) for r in records)


def _write_file(
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
    records: Sequence[_PlannedRecord],
    with_checksum: bool = True,
) -> bytes:
    header_bytes = _header_length(groups, records)
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


def _where(h: _Header, offset: int) -> str:
    if h.groups is not None and 172 <= offset < h.optimizer_step_offset:
        return 'parameter-group lists (names must be sorted byte-wise)'
    for d in h.descriptors:
        if d.entry_offset <= offset < d.entry_offset + d.entry_length:
            return f'descriptor[{d.index}] ("{d.name}") entry (optimizer records must be sorted byte-wise by name, first moment then second)'
    return 'header'


def _assert_canonical(data: bytes, h: _Header, validated: Dict[str, Any]) -> None:
    """SPEC §9.8: re-encode the decoded state; any differing byte outside the checksum field is NonCanonical."""
    tokenizer_count = 1 if h.tokenizer_kind_tag == 2 else h.tokenizer_vocabulary
    records = [_PlannedRecord(d.role_tag, d.name_bytes, d.dtype_tag, tuple(d.shape), _record(data, d)) for d in h.descriptors[:tokenizer_count]]
    records += [_PlannedRecord(3, d.name_bytes, 3, tuple(d.shape), _record(data, d)) for d in validated['model']]
    for first, second in sorted(validated['moments'], key=lambda pair: pair[0].name):
        records.append(_PlannedRecord(4, first.name_bytes, 3, tuple(first.shape), _record(data, first)))
        records.append(_PlannedRecord(5, second.name_bytes, 3, tuple(second.shape), _record(data, second)))
    groups = None
    if h.groups is not None:
        groups = tuple([n.encode('utf-8') for n in sorted(name for name, _ in names)] for names in h.groups)
    mine = _write_file(
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


# ---------------------------------------------------------------------------
# decode / encode
# ---------------------------------------------------------------------------


def _as_bytes(data: Any) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, (bytearray, memoryview)):
        return bytes(data)
    raise TypeError(f'decode: data must be bytes, bytearray or memoryview, got {type(data).__name__}')


def _validate_file(data: bytes, verify_checksum: bool, canonical: bool) -> Tuple[_Header, Dict[str, Any]]:
    h = _parse_fixed_header(data)  # §9.1 steps 1-5, §15.2 header limit
    if verify_checksum:  # §9.1 step 6
        computed = file_checksum(data)
        if computed != h.stored_checksum:
            raise FormatError(
                'FORMAT_CHECKSUM_MISMATCH', f'checksum mismatch at offset 30: stored {checksum_label(h.stored_checksum)}, computed {checksum_label(computed)}',
                reason='checksum', offset=30, field='checksum', expected=checksum_label(computed), found=checksum_label(h.stored_checksum),
            )
    _parse_variable_header(data, h)  # §9.2
    partition = _check_geometry(h, len(data))  # §9.3
    validated = _validate_records(data, h, partition)  # §9.4-§9.7
    if canonical:
        _assert_canonical(data, h, validated)  # §9.8
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
    kind = _resolve_kind(tensors)
    h, validated = _validate_file(data, verify_checksum=True, canonical=True)
    return _checkpoint_from(data, h, validated, kind)


def load(path: Any, *, tensors: str = 'auto') -> Checkpoint:
    """Read a file and :func:`decode` it. A read failure is ``FormatError('FORMAT_IO')``."""
    try:
        with open(path, 'rb') as f:
            data = f.read()
    except OSError as e:
        raise FormatError('FORMAT_IO', f'cannot read {path}: {e}', reason='read', field=str(path)) from e
    return decode(data, tensors=tensors)


def _checkpoint_from(data: bytes, h: _Header, validated: Dict[str, Any], kind: str) -> Checkpoint:
    vocab, width, heads, ffn, layers, positions, rope_base, rms_eps = h.decoder
    decoder = DecoderConfig(vocab, width, heads, ffn, layers, positions, rope_base, rms_eps)
    parameters = [Tensor(d.name, tuple(d.shape), _tensor_from_bytes(_record(data, d), tuple(d.shape), kind)) for d in validated['model']]
    moments = [
        Moment(f.name, tuple(f.shape), _tensor_from_bytes(_record(data, f), tuple(f.shape), kind), _tensor_from_bytes(_record(data, s), tuple(s.shape), kind))
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
    return Checkpoint(validated['tokenizer'], decoder, parameters, optimizer, h.selected_step, h.sampling_rng_state, layout)


def _u64_field(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f'encode: {field} must be an int, got {type(value).__name__}')
    if value < 0:
        raise ValueError(f'encode: {field} must be >= 0, got {value}')
    if value > U64_MAX:
        raise FormatError('FORMAT_SIZE_OVERFLOW', f'{field} {value} does not fit in u64', reason='u64-field', field=field, expected=f'<= {U64_MAX}', found=str(value))
    return value


def _f64_field(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f'encode: {field} must be a float, got {type(value).__name__}')
    return float(value)


def _utf8_name(name: Any, field: str) -> bytes:
    if not isinstance(name, str):
        raise TypeError(f'encode: {field} must be a str, got {type(name).__name__}')
    try:
        raw = name.encode('utf-8', 'strict')
    except UnicodeEncodeError:
        raise FormatError(
            'FORMAT_INVALID_UTF8', f'{field} "{name!r}" holds a lone surrogate and cannot be written as UTF-8',
            reason='invalid-utf8', field=field, record_name=name, expected='a well-formed string', found='lone surrogate',
        ) from None
    if len(raw) > U32_MAX:
        raise FormatError('FORMAT_SIZE_OVERFLOW', f'{field} is {len(raw)} bytes long, more than a u32 string length', reason='string-length', field=field)
    return raw


def _shape_of(shape: Any, field: str) -> Tuple[int, ...]:
    if not isinstance(shape, (list, tuple)):
        raise TypeError(f'encode: {field} must be a sequence of dimensions')
    dims = tuple(_u64_field(d, f'{field} dimension') for d in shape)
    if len(dims) > U32_MAX:
        raise FormatError('FORMAT_SIZE_OVERFLOW', f'{field} rank {len(dims)} does not fit in u32', reason='rank', field=field)
    return dims


def encode(checkpoint: Checkpoint, *, validate: bool = True) -> bytes:
    """Canonical LLMCP35 v1 bytes of ``checkpoint`` (SPEC §8), identical to ``encodeCheckpoint`` of ``@llmcp/format``.

    Records in spec order (tokenizer, model order, optimizer pairs sorted by name with first/second moments
    interleaved), group lists sorted, f64 bit patterns preserved (−0 included), FNV-1a checksum at offset 30.
    With ``validate`` (the default) the written bytes are checked with the decoder's rules first, so an
    invalid state raises the :class:`FormatError` the decoder would raise for that file.

    :raises FormatError: for a state that breaks a rule; TypeError/ValueError for values of the wrong type or sign.
    """
    if not isinstance(checkpoint, Checkpoint):
        raise TypeError(f'encode: expected a Checkpoint, got {type(checkpoint).__name__}')
    opt = checkpoint.optimizer
    dc = checkpoint.decoder
    selected_step = _u64_field(checkpoint.selected_step, 'selected_step')
    rng_state = _u64_field(checkpoint.sampling_rng_state, 'sampling_rng_state')
    optimizer_step = _u64_field(opt.step, 'optimizer.step')
    decoder = (
        _u64_field(dc.vocabulary_size, 'decoder.vocabulary_size'),
        _u64_field(dc.model_width, 'decoder.model_width'),
        _u64_field(dc.heads, 'decoder.heads'),
        _u64_field(dc.feed_forward_width, 'decoder.feed_forward_width'),
        _u64_field(dc.layers, 'decoder.layers'),
        _u64_field(dc.max_positions, 'decoder.max_positions'),
        _f64_field(dc.rope_base, 'decoder.rope_base'),
        _f64_field(dc.rms_epsilon, 'decoder.rms_epsilon'),
    )
    c = opt.config
    adamw = tuple(_f64_field(getattr(c, k), f'optimizer.config.{k}') for k in ('learning_rate', 'beta1', 'beta2', 'epsilon', 'weight_decay'))
    beta1_power = _f64_field(opt.beta1_power, 'optimizer.beta1_power')
    beta2_power = _f64_field(opt.beta2_power, 'optimizer.beta2_power')

    tok = checkpoint.tokenizer
    records: List[_PlannedRecord] = []
    if getattr(tok, 'kind', None) == 'literal':
        kind_tag = 1
        for i, piece in enumerate(tok.pieces):
            if not isinstance(piece, (bytes, bytearray, memoryview)):
                raise TypeError(f'encode: tokenizer.pieces[{i}] must be bytes, got {type(piece).__name__}')
            piece = bytes(piece)
            records.append(_PlannedRecord(1, str(i).encode('ascii'), 1, (len(piece),), piece))
        vocabulary = len(tok.pieces)
    elif getattr(tok, 'kind', None) == 'bpe':
        kind_tag = 2
        flat: List[int] = []
        for r, pair in enumerate(tok.pairs):
            if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= U32_MAX for x in pair):
                raise ValueError(f'encode: tokenizer.pairs[{r}] must hold two integers in [0, 2^32), got {pair!r}')
            flat.extend(pair)
        records.append(_PlannedRecord(2, BPE_RECORD_NAME.encode('ascii'), 2, (len(tok.pairs), 2), struct.pack(f'<{len(flat)}I', *flat)))
        vocabulary = BPE_BASE_VOCABULARY + len(tok.pairs)
    else:
        raise TypeError(f"encode: tokenizer.kind must be 'literal' or 'bpe', got {getattr(tok, 'kind', None)!r}")

    groups = None
    if opt.groups is not None:
        lists = []
        for label, names in (('decay', opt.groups.decay), ('no-decay', opt.groups.no_decay)):
            encoded = [(n, _utf8_name(n, f'{label} group[{i}]')) for i, n in enumerate(names)]
            encoded.sort(key=lambda e: e[0])  # str order = code point order = UTF-8 byte order (SPEC §4)
            lists.append([raw for _, raw in encoded])
        groups = (lists[0], lists[1])
        if any(len(g) > U32_MAX for g in groups):
            raise FormatError('FORMAT_SIZE_OVERFLOW', 'a parameter-group list has more than 2^32 - 1 names', reason='count')

    for i, p in enumerate(checkpoint.parameters):
        records.append(_PlannedRecord(3, _utf8_name(p.name, f'parameters[{i}].name'), 3, _shape_of(p.shape, f'parameters[{i}].shape'), _f64_bytes(p.data, f'parameters[{i}].data')))
    for i, m in sorted(enumerate(opt.moments), key=lambda e: e[1].name if isinstance(e[1].name, str) else ''):
        name = _utf8_name(m.name, f'moments[{i}].name')
        shape = _shape_of(m.shape, f'moments[{i}].shape')
        records.append(_PlannedRecord(4, name, 3, shape, _f64_bytes(m.first, f'moments[{i}].first')))
        records.append(_PlannedRecord(5, name, 3, shape, _f64_bytes(m.second, f'moments[{i}].second')))
    for count, what in ((len(records), 'descriptor count'), (len(checkpoint.parameters), 'model parameter count'), (len(opt.moments), 'optimizer state count')):
        if count > U32_MAX:
            raise FormatError('FORMAT_SIZE_OVERFLOW', f'{what} {count} does not fit in u32', reason='count', field=what)
    if validate:
        _assert_header_within_limit(_header_length(groups, records))
    out = _write_file(
        selected_step=selected_step, rng_state=rng_state, kind_tag=kind_tag, vocabulary=vocabulary, decoder=decoder, adamw=adamw,
        groups=groups, optimizer_step=optimizer_step, beta1_power=beta1_power, beta2_power=beta2_power,
        model_count=len(checkpoint.parameters), moment_count=len(opt.moments), records=records, with_checksum=False,
    )
    if validate:
        # The decoder's own rules, in its order, on the file about to be returned (SPEC §15.1);
        # the checksum and the canonical comparison hold by construction.
        _validate_file(out, verify_checksum=False, canonical=False)
    buf = bytearray(out)
    struct.pack_into('<Q', buf, CHECKSUM_OFFSET, file_checksum(buf))
    return bytes(buf)


_SAVE_SERIAL = itertools.count()


def save(checkpoint: Checkpoint, path: Any) -> None:
    """Encode and write ``path`` atomically (temporary file in the same directory, fsync, rename, directory fsync)."""
    data = encode(checkpoint)
    directory = os.path.dirname(os.path.abspath(path))
    fd = -1
    tmp = ''
    for _ in range(128):  # SPEC §11 step 3: exclusive creation, next serial on a name clash
        tmp = os.path.join(directory, f'.{os.path.basename(path)}.tmp-{os.getpid()}-{next(_SAVE_SERIAL)}')
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            continue
        except OSError as e:
            raise FormatError('FORMAT_IO', f'cannot create a temporary file next to {path}: {e}', reason='create', field=str(path)) from e
    if fd < 0:
        raise FormatError('FORMAT_IO', f'cannot create a temporary file next to {path}: 128 names taken', reason='create', field=str(path))
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        if hasattr(os, 'O_DIRECTORY'):
            dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise FormatError('FORMAT_IO', f'cannot write {path}: {e}', reason='write', field=str(path)) from e


# ---------------------------------------------------------------------------
# torch.optim.AdamW mapping
# ---------------------------------------------------------------------------


def _group_of(checkpoint: Checkpoint) -> List[Tuple[str, List[str], float]]:
    """(llmcp group label, parameter names in model order, weight decay) for each torch param group."""
    names = [p.name for p in checkpoint.parameters]
    wd = checkpoint.optimizer.config.weight_decay
    groups = checkpoint.optimizer.groups
    if groups is None:
        return [('all', names, wd)]
    decay = set(groups.decay)
    # SPEC §4: with groups present, only names in the decay list are decayed (at step 0 the lists
    # need not cover the model; unlisted parameters are then not decayed, unknown names have no tensor).
    return [('decay', [n for n in names if n in decay], wd), ('no-decay', [n for n in names if n not in decay], 0.0)]


def _torch_scalar_dtype(torch: Any) -> Any:
    return torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32


def torch_param_groups(checkpoint: Checkpoint, parameters: Union[Dict[str, Any], Sequence[Any], None] = None) -> List[Dict[str, Any]]:
    """Parameter groups for ``torch.optim.AdamW(groups)`` matching the checkpoint's AdamW configuration.

    One group (every parameter decays) when the file has no groups, else a ``decay`` group and a
    ``no-decay`` group (``weight_decay=0.0``), parameters in model order within each. ``parameters``
    maps names to tensors (or lists them in model order); when omitted, each group lists names instead
    (``params`` is then a list of names, for :func:`torch_adamw_state_dict`'s index order).
    Each group carries ``param_names`` and ``llmcp_group`` (kept by torch, ignored by its update).
    """
    c = checkpoint.optimizer.config
    if parameters is not None and not isinstance(parameters, dict):
        parameters = dict(zip((p.name for p in checkpoint.parameters), parameters))
    out = []
    for label, names, wd in _group_of(checkpoint):
        params = [parameters[n] for n in names] if parameters is not None else list(names)
        out.append({
            'params': params,
            'lr': c.learning_rate,
            'betas': (c.beta1, c.beta2),
            'eps': c.epsilon,
            'weight_decay': wd,
            'amsgrad': False,
            'maximize': False,
            'param_names': list(names),
            'llmcp_group': label,
        })
    return out


def torch_adamw_state_dict(checkpoint: Checkpoint, *, tensors: str = 'torch') -> Dict[str, Any]:
    """The checkpoint's AdamW state as a ``torch.optim.AdamW.state_dict()``.

    ``state`` maps the index of each parameter (numbered across :func:`torch_param_groups` in order)
    to ``{'step', 'exp_avg', 'exp_avg_sq'}``; at step 0 it is empty, as in a fresh torch optimizer.
    ``param_groups`` holds ``lr`` (the stored *base* rate), ``betas``, ``eps``, ``weight_decay`` and
    torch's other defaults. With ``tensors='torch'`` (default; needs torch) moments are float64 tensors
    and ``step`` a scalar tensor of torch's scalar dtype (float32 unless the default dtype is float64);
    with ``'numpy'``/``'array'``/``'list'`` plain values are used (``step`` an int).
    The stored beta powers are not part of torch's state: torch recomputes ``beta ** step``.
    """
    kind = _resolve_kind(tensors)
    torch = _import_torch() if kind == 'torch' else None
    groups = torch_param_groups(checkpoint)
    defaults: Dict[str, Any] = {}
    if torch is not None:
        probe = torch.optim.AdamW([torch.zeros(1, requires_grad=True)])
        defaults = {k: v for k, v in probe.defaults.items()}
    index = 0
    by_name = {m.name: m for m in checkpoint.optimizer.moments}
    state: Dict[int, Dict[str, Any]] = {}
    param_groups = []
    for g in groups:
        ids = []
        for name in g['params']:
            m = by_name.get(name)
            if m is not None:
                entry: Dict[str, Any] = {
                    'step': torch.tensor(float(checkpoint.optimizer.step), dtype=_torch_scalar_dtype(torch)) if torch is not None else checkpoint.optimizer.step,
                    'exp_avg': _convert_tensor(m.first, m.shape, kind),
                    'exp_avg_sq': _convert_tensor(m.second, m.shape, kind),
                }
                state[index] = entry
            ids.append(index)
            index += 1
        group = dict(defaults)
        group.update({k: v for k, v in g.items() if k != 'params'})
        group['params'] = ids
        param_groups.append(group)
    return {'state': state, 'param_groups': param_groups}


def _convert_tensor(data: Any, shape: Tuple[int, ...], kind: str) -> Any:
    return _tensor_from_bytes(_f64_bytes(data, 'tensor'), tuple(shape), kind)


def torch_adamw(checkpoint: Checkpoint, parameters: Union[Dict[str, Any], Sequence[Any]]) -> Any:
    """A ``torch.optim.AdamW`` over ``parameters`` (name → tensor, or model order) with the checkpoint's state loaded."""
    torch = _import_torch()
    opt = torch.optim.AdamW(torch_param_groups(checkpoint, parameters))
    opt.load_state_dict(torch_adamw_state_dict(checkpoint, tensors='torch'))
    return opt


def _repeated_power(beta: float, step: int) -> float:
    """beta^step by repeated multiplication from 1.0, as llmcp's AdamW keeps it (SPEC §6.4)."""
    p = 1.0
    for _ in range(step):
        p *= beta
        if p == 0.0:
            break
    return p


def adamw_state_from_torch(
    state_dict: Dict[str, Any],
    names: Optional[Sequence[str]] = None,
    *,
    shapes: Optional[Dict[str, Sequence[int]]] = None,
    learning_rate: Optional[float] = None,
    groups: Union[str, None, ParameterGroups] = 'auto',
    beta_powers: Optional[Tuple[float, float]] = None,
) -> AdamWState:
    """An llmcp :class:`AdamWState` from a ``torch.optim.AdamW.state_dict()`` (the inverse of :func:`torch_adamw_state_dict`).

    :param names: parameter name of each torch index (default: the groups' ``param_names``).
    :param shapes: name → shape, when the moment tensors are not shaped.
    :param learning_rate: the base rate to store (default: the first group's ``lr``, which a scheduler may have changed).
    :param groups: ``'auto'`` uses the groups' ``llmcp_group`` markers if present, else no groups when every group
        has the same weight decay, else decay / no-decay by ``weight_decay == 0``; or pass groups (or None) explicitly.
    :param beta_powers: the running powers; default ``beta ** step`` by repeated multiplication from 1.0 (exactly what
        llmcp stores; for steps above 10^7 ``math.pow`` is used instead).
    """
    pgs = state_dict['param_groups']
    if names is None:
        names = [n for g in pgs for n in g.get('param_names', ())]
        if len(names) != sum(len(g['params']) for g in pgs):
            raise ValueError('adamw_state_from_torch: pass names (the param groups carry no param_names)')
    index_name: Dict[int, str] = {}
    k = 0
    for g in pgs:
        for i in g['params']:
            index_name[i] = names[k]
            k += 1
    decay_group = next((g for g in pgs if g.get('weight_decay', 0) != 0), pgs[0])
    beta1, beta2 = (float(b) for b in decay_group['betas'])
    config = AdamWConfig(float(learning_rate if learning_rate is not None else decay_group['lr']), beta1, beta2, float(decay_group['eps']), float(decay_group['weight_decay']))
    if groups == 'auto':
        labels = [g.get('llmcp_group') for g in pgs]
        if all(label == 'all' for label in labels):
            groups = None
        elif all(label in ('decay', 'no-decay') for label in labels):
            groups = ParameterGroups(
                [index_name[i] for g in pgs if g['llmcp_group'] == 'decay' for i in g['params']],
                [index_name[i] for g in pgs if g['llmcp_group'] == 'no-decay' for i in g['params']],
            )
        elif len({float(g.get('weight_decay', 0)) for g in pgs}) == 1:
            groups = None
        else:
            groups = ParameterGroups(
                [index_name[i] for g in pgs if g.get('weight_decay', 0) != 0 for i in g['params']],
                [index_name[i] for g in pgs if g.get('weight_decay', 0) == 0 for i in g['params']],
            )
    steps = {int(float(s['step'])) for s in state_dict['state'].values()}
    if len(steps) > 1:
        raise ValueError(f'adamw_state_from_torch: parameters are at different steps {sorted(steps)}; llmcp stores one step')
    step = steps.pop() if steps else 0
    moments = []
    for i, s in state_dict['state'].items():
        name = index_name[i]
        first, second = s['exp_avg'], s['exp_avg_sq']
        shape = tuple(shapes[name]) if shapes is not None and name in shapes else tuple(int(d) for d in getattr(first, 'shape', (len(first),)))
        moments.append(Moment(name, shape, first, second))
    if beta_powers is None:
        beta_powers = (_repeated_power(beta1, step), _repeated_power(beta2, step)) if step <= 10_000_000 else (math.pow(beta1, step), math.pow(beta2, step))
    return AdamWState(config, groups, step, beta_powers[0], beta_powers[1], moments)


# ---------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------


def _summary(ckpt: Checkpoint) -> Dict[str, Any]:
    lay = ckpt.layout
    tok = ckpt.tokenizer
    return {
        'fileLength': lay.file_length if lay else None,
        'checksum': lay.checksum_label if lay else None,
        'headerBytes': lay.header_bytes if lay else None,
        'payloadBytes': lay.payload_bytes if lay else None,
        'tokenizer': {'kind': tok.kind, 'vocabulary': tok.vocabulary_size, **({'merges': len(tok.pairs)} if tok.kind == 'bpe' else {})},
        'decoder': {
            'vocabularySize': ckpt.decoder.vocabulary_size,
            'modelWidth': ckpt.decoder.model_width,
            'heads': ckpt.decoder.heads,
            'feedForwardWidth': ckpt.decoder.feed_forward_width,
            'layers': ckpt.decoder.layers,
            'maxPositions': ckpt.decoder.max_positions,
            'ropeBase': ckpt.decoder.rope_base,
            'rmsEpsilon': ckpt.decoder.rms_epsilon,
        },
        'optimizer': {
            'learningRate': ckpt.optimizer.config.learning_rate,
            'beta1': ckpt.optimizer.config.beta1,
            'beta2': ckpt.optimizer.config.beta2,
            'epsilon': ckpt.optimizer.config.epsilon,
            'weightDecay': ckpt.optimizer.config.weight_decay,
            'groups': None if ckpt.optimizer.groups is None else {'decay': ckpt.optimizer.groups.decay, 'noDecay': ckpt.optimizer.groups.no_decay},
            'step': str(ckpt.optimizer.step),
            'beta1Power': ckpt.optimizer.beta1_power,
            'beta2Power': ckpt.optimizer.beta2_power,
            'moments': len(ckpt.optimizer.moments),
        },
        'selectedStep': str(ckpt.selected_step),
        'samplingRngState': f'0x{ckpt.sampling_rng_state:016x}',
        'parameters': [{'name': p.name, 'shape': list(p.shape)} for p in ckpt.parameters],
        'parameterCount': sum(math.prod(p.shape) for p in ckpt.parameters),
    }


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python3 -m llmcp_format inspect FILE [--json]`` / ``verify FILE...``; exit status 1 on an invalid file."""
    import argparse  # noqa: PLC0415
    import json  # noqa: PLC0415

    parser = argparse.ArgumentParser(prog='python3 -m llmcp_format', description='Read and validate LLMCP35 v1 checkpoints (llmcp).')
    sub = parser.add_subparsers(dest='command', required=True)
    p_inspect = sub.add_parser('inspect', help='validate one file and describe it')
    p_inspect.add_argument('file')
    p_inspect.add_argument('--json', action='store_true', help='print JSON (the summary, or the error as formatErrorData)')
    p_verify = sub.add_parser('verify', help='validate files; one line each')
    p_verify.add_argument('files', nargs='+')
    args = parser.parse_args(argv)

    if args.command == 'verify':
        status = 0
        for path in args.files:
            try:
                ckpt = load(path, tensors='array')
                print(f'{path}: ok {ckpt.layout.checksum_label} step {ckpt.selected_step}')
            except FormatError as e:
                status = 1
                print(f'{path}: {e.code} ({e.category}) {e.message}')
        return status

    try:
        ckpt = load(args.file, tensors='array')
    except FormatError as e:
        if args.json:
            print(json.dumps({'ok': False, 'error': e.to_dict()}, indent=2))
        else:
            where = f' at offset {e.offset}' if e.offset is not None else ''
            print(f'{args.file}: invalid LLMCP35 v1 file: {e.code} ({e.category}, {e.reason}){where}\n  {e.message}')
        return 1
    s = _summary(ckpt)
    if args.json:
        print(json.dumps({'ok': True, 'checkpoint': s}, indent=2))
        return 0
    d, o = s['decoder'], s['optimizer']
    tok = s['tokenizer']
    print(f'{args.file}: valid LLMCP35 v1, {s["fileLength"]} bytes, {s["checksum"]}')
    print(f'  header {s["headerBytes"]} bytes, payload {s["payloadBytes"]} bytes')
    print(f'  tokenizer  {tok["kind"]}, {tok["vocabulary"]} ids' + (f' ({tok["merges"]} merges)' if 'merges' in tok else ''))
    print(f'  decoder    V={d["vocabularySize"]} D={d["modelWidth"]} H={d["heads"]} F={d["feedForwardWidth"]} L={d["layers"]} '
          f'positions={d["maxPositions"]} rope_base={d["ropeBase"]!r} rms_epsilon={d["rmsEpsilon"]!r}')
    print(f'  parameters {len(s["parameters"])} tensors, {s["parameterCount"]} values')
    print(f'  AdamW      lr={o["learningRate"]!r} betas=({o["beta1"]!r}, {o["beta2"]!r}) eps={o["epsilon"]!r} weight_decay={o["weightDecay"]!r}, '
          f'step {o["step"]}, {o["moments"]} moment pairs, groups {"none" if o["groups"] is None else str(len(o["groups"]["decay"])) + " decay / " + str(len(o["groups"]["noDecay"])) + " no-decay"}')
    print(f'  selected step {s["selectedStep"]}, sampling RNG state {s["samplingRngState"]}')
    for p in s['parameters']:
        print(f'    {p["name"]:<40} {p["shape"]}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
