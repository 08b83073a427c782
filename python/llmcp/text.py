"""How values are written in error texts: numbers, bytes and shapes.

A :class:`~llmcp.errors.FormatError`'s ``expected`` and ``found`` must read
exactly as ``@llmcp/format`` writes them, so these follow JavaScript's
spelling of the same values.
"""

from __future__ import annotations

import math
from typing import Sequence

__all__ = ['f64_text', 'hex_bytes', 'shape_text']


def f64_text(value: float) -> str:
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


def hex_bytes(data: bytes) -> str:
    """Bytes as two-digit lowercase hex, space-separated (``hexBytes`` of ``@llmcp/format``)."""
    return ' '.join(f'{b:02x}' for b in data)


def shape_text(shape: Sequence[int]) -> str:
    """A shape as ``[2, 3]``."""
    return '[' + ', '.join(str(d) for d in shape) + ']'
