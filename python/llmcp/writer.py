"""Writing LLMCP35 v1: :func:`encode` (canonical bytes, SPEC §8) and :func:`save` (atomic file write, SPEC §11).

The bytes are identical to ``encodeCheckpoint`` of ``@llmcp/format``; before
returning them, :func:`encode` runs the reader's rules on them, so an invalid
state raises the :class:`~llmcp.errors.FormatError` the reader would raise.
"""

from __future__ import annotations

import itertools
import os
import struct
from typing import Any, List, Tuple

from .canonical import PlannedRecord, header_length, write_file
from .checkpoint import Checkpoint
from .errors import FormatError
from .reader import validate_file
from .rules import BPE_BASE_VOCABULARY, BPE_RECORD_NAME, CHECKSUM_OFFSET, U32_MAX, U64_MAX, assert_header_within_limit, file_checksum
from .tensors import f64_bytes

__all__ = ['encode', 'save']


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
    records: List[PlannedRecord] = []
    if getattr(tok, 'kind', None) == 'literal':
        kind_tag = 1
        for i, piece in enumerate(tok.pieces):
            if not isinstance(piece, (bytes, bytearray, memoryview)):
                raise TypeError(f'encode: tokenizer.pieces[{i}] must be bytes, got {type(piece).__name__}')
            piece = bytes(piece)
            records.append(PlannedRecord(1, str(i).encode('ascii'), 1, (len(piece),), piece))
        vocabulary = len(tok.pieces)
    elif getattr(tok, 'kind', None) == 'bpe':
        kind_tag = 2
        flat: List[int] = []
        for r, pair in enumerate(tok.pairs):
            if not isinstance(pair, (list, tuple)) or len(pair) != 2 or not all(isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= U32_MAX for x in pair):
                raise ValueError(f'encode: tokenizer.pairs[{r}] must hold two integers in [0, 2^32), got {pair!r}')
            flat.extend(pair)
        records.append(PlannedRecord(2, BPE_RECORD_NAME.encode('ascii'), 2, (len(tok.pairs), 2), struct.pack(f'<{len(flat)}I', *flat)))
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
        records.append(PlannedRecord(3, _utf8_name(p.name, f'parameters[{i}].name'), 3, _shape_of(p.shape, f'parameters[{i}].shape'), f64_bytes(p.data, f'parameters[{i}].data')))
    for i, m in sorted(enumerate(opt.moments), key=lambda e: e[1].name if isinstance(e[1].name, str) else ''):
        name = _utf8_name(m.name, f'moments[{i}].name')
        shape = _shape_of(m.shape, f'moments[{i}].shape')
        records.append(PlannedRecord(4, name, 3, shape, f64_bytes(m.first, f'moments[{i}].first')))
        records.append(PlannedRecord(5, name, 3, shape, f64_bytes(m.second, f'moments[{i}].second')))
    for count, what in ((len(records), 'descriptor count'), (len(checkpoint.parameters), 'model parameter count'), (len(opt.moments), 'optimizer state count')):
        if count > U32_MAX:
            raise FormatError('FORMAT_SIZE_OVERFLOW', f'{what} {count} does not fit in u32', reason='count', field=what)
    if validate:
        assert_header_within_limit(header_length(groups, records))
    out = write_file(
        selected_step=selected_step, rng_state=rng_state, kind_tag=kind_tag, vocabulary=vocabulary, decoder=decoder, adamw=adamw,
        groups=groups, optimizer_step=optimizer_step, beta1_power=beta1_power, beta2_power=beta2_power,
        model_count=len(checkpoint.parameters), moment_count=len(opt.moments), records=records, with_checksum=False,
    )
    if validate:
        # The decoder's own rules, in its order, on the file about to be returned (SPEC §15.1);
        # the checksum and the canonical comparison hold by construction.
        validate_file(out, verify_checksum=False, canonical=False)
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

