"""How values are written in error texts: numbers, bytes and shapes.

A :class:`~llmcp.errors.FormatError`'s ``expected`` and ``found`` must read
exactly as ``@llmcp/format`` writes them, so these follow JavaScript's
spelling of the same values.
"""

from __future__ import annotations

import math
from typing import Sequence, Tuple

__all__ = ['js_number_text', 'f64_text', 'hex_bytes', 'shape_text']


def js_number_text(value: float) -> str:
    """``String(value)`` of JavaScript: ECMA-262 Number::toString with radix 10.

    The shortest digits that read back as ``value`` (Python's ``repr`` finds
    the same ones), written as JavaScript writes them: plain digits while the
    decimal exponent n (value = 0.d₁d₂… × 10ⁿ) is in -6 < n <= 21, else
    ``d.ddde±x``; integers up to 1e21 padded with zeros past the digits
    (``2**63`` → ``'9223372036854776000'``, not Python's exact integer);
    ``-0`` → ``'0'``; ``NaN``, ``Infinity``, ``-Infinity``.
    """
    if value != value:
        return 'NaN'
    if value == 0:
        return '0'
    if value == math.inf:
        return 'Infinity'
    if value == -math.inf:
        return '-Infinity'
    sign = '-' if value < 0 else ''
    digits, n = _shortest_digits(abs(value))
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + '0' * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + '.' + digits[n:]
    if -6 < n <= 0:
        return sign + '0.' + '0' * -n + digits
    e = n - 1
    exponent = ('+' if e >= 0 else '-') + str(abs(e))
    if k == 1:
        return sign + digits + 'e' + exponent
    return sign + digits[0] + '.' + digits[1:] + 'e' + exponent


def _shortest_digits(value: float) -> Tuple[str, int]:
    """(digits, n) with value = 0.digits × 10ⁿ, digits the shortest that round-trip (no leading or trailing zero); value > 0, finite."""
    mantissa, _, exponent = repr(value).partition('e')
    whole, _, fraction = mantissa.partition('.')
    digits = whole + fraction
    n = len(whole) + (int(exponent) if exponent else 0)
    stripped = digits.lstrip('0')
    n -= len(digits) - len(stripped)
    return stripped.rstrip('0'), n


def f64_text(value: float) -> str:
    """``f64Text`` of ``@llmcp/format``: :func:`js_number_text`, but ``-0`` kept as ``'-0'``."""
    if value == 0 and math.copysign(1.0, value) < 0:
        return '-0'
    return js_number_text(value)


def hex_bytes(data: bytes) -> str:
    """Bytes as two-digit lowercase hex, space-separated (``hexBytes`` of ``@llmcp/format``)."""
    return ' '.join(f'{b:02x}' for b in data)


def shape_text(shape: Sequence[int]) -> str:
    """A shape as ``[2, 3]``."""
    return '[' + ', '.join(str(d) for d in shape) + ']'
