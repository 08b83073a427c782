"""The rules of LLMCP35 v1 (SPEC §3–§7, §9.3–§9.7, §15.2): constants, the checksum, names and shapes, and validation.

Each rule raises the :class:`~llmcp.errors.FormatError` ``@llmcp/format``
raises for it (the same code, reason and context), in the reference's order.
The reader (:mod:`llmcp.reader`) parses bytes and calls these; the writer
(:mod:`llmcp.writer`) runs the reader's validation on what it writes.
"""

from __future__ import annotations

import math
import re
import struct
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import tensors
from .errors import FormatError
from .text import f64_text, js_number_text, shape_text

if TYPE_CHECKING:  # pragma: no cover
    from .checkpoint import DecoderConfig
    from .reader import RawDescriptor, RawHeader

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
# Names and shapes (SPEC §6.5, §7)
# ---------------------------------------------------------------------------


def _is_finite(value: float) -> bool:
    return value - value == 0


def _finite_pow(base: float, exponent: float) -> float:
    try:
        return math.pow(base, exponent)
    except OverflowError:
        return math.inf


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



def assert_header_within_limit(header_bytes: int) -> None:
    """The header-size limit of SPEC §15.2 (``FORMAT_LIMIT_EXCEEDED`` above 64 MiB)."""
    if header_bytes > MAX_HEADER_BYTES:
        raise FormatError(
            'FORMAT_LIMIT_EXCEEDED',
            f'header_bytes at offset 14 is too large: expected at most {MAX_HEADER_BYTES} (64 MiB, SPEC §15.2; a header holds only names and descriptors), found {header_bytes}',
            reason='header-too-large', offset=14, field='header_bytes', expected=f'<= {MAX_HEADER_BYTES}', found=str(header_bytes),
        )


_ADAMW_FIELDS = (('learningRate', 131), ('beta1', 139), ('beta2', 147), ('epsilon', 155), ('weightDecay', 163))


def validate_adamw_config(values: Tuple[float, float, float, float, float]) -> None:
    """SPEC §6.2, in order. Values read as ``String(value)`` there (``-0`` as ``0``; adamw-rules.ts)."""
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
                'FORMAT_ADAMW_CONFIG', f'invalid AdamW {name} at offset {offset}: expected {rule}, found {js_number_text(value)}',
                reason=reason, offset=offset, field=name, expected=rule, found=js_number_text(value),
            )
    if wd != 0:
        product = lr * wd
        if not (_is_finite(product) and 0 < product < 1):
            raise FormatError(
                'FORMAT_ADAMW_CONFIG', f'invalid AdamW decay product learning_rate × weight_decay = {js_number_text(product)}: expected a finite value in (0, 1)',
                reason='invalid-decay-product', offset=163, field='weightDecay',
                expected='learning_rate × weight_decay in (0, 1)', found=js_number_text(product),
            )


def validate_groups(decay: List[Tuple[str, int]], no_decay: List[Tuple[str, int]]) -> None:
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


def _geometry_layout(message: str, d: RawDescriptor, reason: str, field: Optional[str] = None, expected: Optional[str] = None, found: Optional[str] = None) -> FormatError:
    return FormatError(
        'FORMAT_LAYOUT', message, reason=reason, offset=d.entry_offset, field=field or f'descriptor[{d.index}]',
        record_index=d.index, record_name=d.name, expected=expected, found=found,
    )


def check_geometry(h: RawHeader, file_length: int) -> Tuple[int, int, int]:
    """SPEC §9.3 in order; returns the record partition (tokenizer, model, optimizer record counts)."""
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
                'FORMAT_SIZE_OVERFLOW', f'size of descriptor[{d.index}] ("{d.name}", shape {shape_text(d.shape)} × {width} bytes) overflows u64',
                reason='record-size', offset=d.entry_offset, field=f'descriptor[{d.index}].shape', record_index=d.index, record_name=d.name,
            )
        if d.byte_length != expected:
            raise _geometry_layout(
                f'byte_len of descriptor[{d.index}] ("{d.name}") is {d.byte_length}: expected {expected} (shape {shape_text(d.shape)} × {width} bytes)',
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


def _first_difference(xs: Sequence[str], ys: Sequence[str]) -> Optional[Tuple[int, Optional[str], Optional[str]]]:
    """The first position where two sorted name lists differ, with each side's name there (None past its end), or None."""
    for i in range(max(len(xs), len(ys))):
        a = xs[i] if i < len(xs) else None
        b = ys[i] if i < len(ys) else None
        if a != b:
            return i, a, b
    return None


def _raise_on_difference(xs: Sequence[str], ys: Sequence[str], code: str, reason: str, message: Callable[[int, Optional[str], Optional[str]], str], **fields: Any) -> None:
    """Raises `code` at the first sorted position where the name lists `xs` (found) and `ys` (expected) differ, if any."""
    difference = _first_difference(xs, ys)
    if difference is None:
        return
    i, a, b = difference
    raise FormatError(code, message(i, a, b), reason=reason, element_index=i, expected=b if b is not None else '(none)', found=a if a is not None else '(none)', **fields)


def _describe(d: RawDescriptor) -> str:
    return f'descriptor[{d.index}] ("{d.name}", role {d.role_tag}, dtype {d.dtype_tag}, shape {shape_text(d.shape)})'


def _layout_error(d: RawDescriptor, reason: str, expected: str) -> FormatError:
    return FormatError(
        'FORMAT_LAYOUT', f'{_describe(d)} at entry offset {d.entry_offset}: expected {expected}',
        reason=reason, offset=d.entry_offset, field=f'descriptor[{d.index}]', record_index=d.index, record_name=d.name,
        expected=expected, found=f'role {d.role_tag}, dtype {d.dtype_tag}, name "{d.name}", shape {shape_text(d.shape)}',
    )


def record_bytes(data: bytes, d: RawDescriptor) -> bytes:
    """The payload bytes of the record described by ``d``."""
    return data[d.offset:d.offset + d.byte_length]


def _first_non_finite(raw: bytes) -> Tuple[int, float]:
    """First index of a NaN or ±∞ among little-endian f64 values, with the value; (-1, 0.0) when all finite."""
    if tensors.np is not None:
        a = tensors.np.frombuffer(raw, dtype='<f8')
        bad = ~tensors.np.isfinite(a)
        if bad.any():
            i = int(tensors.np.argmax(bad))
            return i, float(a[i])
        return -1, 0.0
    for i, v in enumerate(tensors.f64_array(raw)):
        if v - v != 0:
            return i, v
    return -1, 0.0


def _first_negative(raw: bytes) -> Tuple[int, float]:
    if tensors.np is not None:
        a = tensors.np.frombuffer(raw, dtype='<f8')
        neg = a < 0
        if neg.any():
            i = int(tensors.np.argmax(neg))
            return i, float(a[i])
        return -1, 0.0
    for i, v in enumerate(tensors.f64_array(raw)):
        if v < 0:
            return i, v
    return -1, 0.0


def _validate_tokenizer(data: bytes, h: RawHeader, tok: List[RawDescriptor]) -> Union[List[bytes], List[Tuple[int, int]]]:
    """SPEC §9.4: the literal pieces (kind 1) or the BPE merge pairs (kind 2)."""
    if h.tokenizer_kind_tag == 1:
        pieces: List[bytes] = []
        for i, d in enumerate(tok):
            if d.role_tag != 1 or d.dtype_tag != 1 or d.name != str(i):
                raise _layout_error(d, 'literal-record', f'a literal token record: role 1, dtype u8, name "{i}"')
            if len(d.shape) != 1 or d.shape[0] == 0:
                raise _layout_error(d, 'literal-record-shape', 'a literal token shape [n] with n >= 1')
            pieces.append(bytes(record_bytes(data, d)))
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
        return pieces
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
    raw = record_bytes(data, d)
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
    return pairs


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
        raise _model_error('invalid-rope-base', f'decoder rope_base is {js_number_text(rope_base)}: expected a finite value > 0', field='ropeBase', expected='finite > 0', found=js_number_text(rope_base))
    if not (_is_finite(rms_eps) and rms_eps >= 0):
        raise _model_error('invalid-rms-epsilon', f'decoder rms_epsilon is {js_number_text(rms_eps)}: expected a finite value >= 0', field='rmsEpsilon', expected='finite >= 0', found=js_number_text(rms_eps))


def _rotary_problem(head_width: int, max_positions: int, rope_base: float) -> Optional[str]:
    """SPEC §6.1 rotary realisability; only the last position needs checking (p·f is monotone)."""
    pairs = head_width // 2
    if max_positions * pairs > ROTARY_ENTRY_LIMIT:
        return f'rotary table of {max_positions} × {pairs} entries is too large'
    last = float(max_positions - 1)
    for i in range(pairs):
        inverse = _finite_pow(rope_base, (-2 * i) / head_width)
        if not _is_finite(inverse):
            return f'inverse frequency {i} ({js_number_text(rope_base)}^({-2 * i}/{head_width})) is not finite'
        if not _is_finite(last * inverse):
            return f'rotary angle at position {js_number_text(last)}, pair {i} is not finite'
    return None


def _validate_model_shapes(c: Tuple[int, int, int, int, int, int, float, float], records: List[RawDescriptor]) -> None:
    """SPEC §9.5 step 6: structural problems at once, plain mismatches remembered (the first one)."""
    vocab, width_cfg, heads, ffn, _layers, positions, rope_base, _eps = c
    layers = (len(records) - 2) // 9
    remembered: List[FormatError] = []

    def remember(e: FormatError) -> None:
        if not remembered:
            remembered.append(e)

    def structural(r: RawDescriptor, reason: str, what: str) -> FormatError:
        return _model_error(reason, f'parameter "{r.name}" (descriptor[{r.index}]) shape {shape_text(r.shape)}: {what}', record_name=r.name, record_index=r.index, found=shape_text(r.shape))

    def is_matrix(r: RawDescriptor) -> bool:
        return len(r.shape) == 2 and r.shape[0] != 0 and r.shape[1] != 0

    def is_vector(r: RawDescriptor) -> bool:
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

        def mismatch(r: RawDescriptor, what: str) -> FormatError:
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
    """SPEC §6.4: exactly 1.0 at step 0 (1.0 has one bit pattern, so == is a bit test), finite in [0, 1) after.

    Here the value reads as ``f64Text`` writes it (``-0`` kept), the other f64 rules as ``String`` does.
    """
    for name, value, offset in (('beta1Power', b1, offsets[0]), ('beta2Power', b2, offsets[1])):
        ok = value == 1.0 if step == 0 else (_is_finite(value) and 0 <= value < 1)
        if not ok:
            expected = 'exactly 1.0 at step 0' if step == 0 else f'a finite value in [0, 1) at step {step}'
            raise FormatError(
                'FORMAT_ADAMW_STATE', f'invalid {name} at offset {offset}: expected {expected}, found {f64_text(value)}',
                reason='invalid-beta-power', offset=offset, field=name, expected=expected, found=f64_text(value),
            )


def validate_records(data: bytes, h: RawHeader, partition: Tuple[int, int, int]) -> Dict[str, Any]:
    """SPEC §9.4–§9.7 in order: tokenizer, model, optimizer and cross-component rules.

    :returns: ``tokenizer`` (literal pieces or BPE pairs), ``model`` (the model descriptors in model
        order) and ``moments`` (the (first, second) descriptor pairs).
    """
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
        raw = record_bytes(data, d)
        if _strides_overflow(d.shape):
            raise FormatError(
                'FORMAT_TENSOR_SHAPE', f'parameter "{d.name}" shape {shape_text(d.shape)}: row-major strides overflow u64',
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
                'FORMAT_INVALID_PARAMETER', f'parameter "{d.name}" element {bad} at offset {at} is {js_number_text(value)}: expected a finite value',
                reason='non-finite-parameter', offset=at, record_index=d.index, record_name=d.name, element_index=bad,
                expected='finite', found=js_number_text(value),
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
    moments: List[Tuple[RawDescriptor, RawDescriptor]] = []
    for p in range(0, len(opt_slice) - 1, 2):
        first, second = opt_slice[p], opt_slice[p + 1]
        if first.role_tag != 4 or first.dtype_tag != 3:
            raise _layout_error(first, 'first-moment-record', 'a first-moment record: role 4, dtype f64')
        if second.role_tag != 5 or second.dtype_tag != 3 or second.name != first.name:
            raise _layout_error(second, 'second-moment-record', f'a second-moment record for "{first.name}": role 5, dtype f64')
        if first.shape != second.shape:
            raise _layout_error(second, 'moment-shape-mismatch', f'the shape of its first moment {shape_text(first.shape)}')
        for d in (first, second):
            bad, value = _first_non_finite(record_bytes(data, d))
            if bad >= 0:
                at = d.offset + 8 * bad
                raise FormatError(
                    'FORMAT_ADAMW_STATE', f'{"first" if d.role_tag == 4 else "second"} moment of "{d.name}" element {bad} at offset {at} is {js_number_text(value)}: expected a finite value',
                    reason='non-finite-moment', offset=at, record_index=d.index, record_name=d.name, element_index=bad, expected='finite', found=js_number_text(value),
                )
        neg, value = _first_negative(record_bytes(data, second))
        if neg >= 0:
            at = second.offset + 8 * neg
            raise FormatError(
                'FORMAT_ADAMW_STATE', f'second moment of "{second.name}" element {neg} at offset {at} is {js_number_text(value)}: expected a value >= 0',
                reason='negative-second-moment', offset=at, record_index=second.index, record_name=second.name, element_index=neg,
                expected='>= 0', found=js_number_text(value),
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
        _raise_on_difference(
            union, names, 'FORMAT_ADAMW_STATE', 'groups-mismatch',
            lambda i, a, b: f'parameter groups do not match the moment state: at sorted position {i} expected {"no further name" if b is None else repr(b)} (from moments), found {"no further name" if a is None else repr(a)} (from groups)',
            field='parameter groups',
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
        _raise_on_difference(
            moment_names, model_names, 'FORMAT_OPTIMIZER_NAMES', 'optimizer-names',
            lambda i, a, b: f'optimizer moment names differ from model parameter names at sorted position {i}: expected {b or "(none)"}, found {a or "(none)"}',
        )
        shapes = {d.name: d.shape for d in model_slice}
        by_name = {d.name: d for d in opt_slice if d.role_tag == 4}
        for name in moment_names:
            d = by_name[name]
            if d.shape != shapes[name]:
                raise FormatError(
                    'FORMAT_OPTIMIZER_SHAPE', f'moment shape of "{name}" is {shape_text(d.shape)}: expected the parameter shape {shape_text(shapes[name])}',
                    reason='optimizer-shape', offset=d.entry_offset, record_index=d.index, record_name=name,
                    expected=shape_text(shapes[name]), found=shape_text(d.shape),
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

