"""Tensor data in and out: numpy arrays, torch tensors, ``array('d')`` and lists.

numpy and torch are optional and never imported by ``import llmcp`` beyond
the numpy probe below: torch is imported only when a caller asks for torch
tensors or hands one in.
"""

from __future__ import annotations

import struct
import sys
from array import array
from typing import Any, List, Sequence, Tuple

try:  # numpy is optional
    import numpy as np
except ImportError:  # pragma: no cover - exercised by the no-numpy test run
    np = None

__all__ = ['TENSOR_KINDS', 'np', 'import_torch', 'resolve_kind', 'f64_array', 'tensor_from_bytes', 'flatten', 'f64_bytes']

LITTLE_ENDIAN_HOST = sys.byteorder == 'little'

TENSOR_KINDS = ('auto', 'numpy', 'torch', 'array', 'list')


def import_torch() -> Any:
    """torch, imported on request (ImportError saying so when it is not installed)."""
    try:
        import torch  # noqa: PLC0415 - optional, imported on request
    except ImportError as e:
        raise ImportError('llmcp: torch is not installed (tensors="torch" needs it)') from e
    return torch


def resolve_kind(kind: str) -> str:
    """The concrete tensor kind of a ``tensors=`` argument (``'auto'`` → numpy when installed, else ``'array'``)."""
    if kind not in TENSOR_KINDS:
        raise ValueError(f'tensors must be one of {", ".join(TENSOR_KINDS)}, got {kind!r}')
    if kind == 'auto':
        return 'numpy' if np is not None else 'array'
    if kind == 'numpy' and np is None:
        raise ImportError('llmcp: numpy is not installed (tensors="numpy" needs it)')
    if kind == 'torch':
        import_torch()
    return kind


def f64_array(raw: bytes) -> array:
    """Little-endian f64 bytes as an ``array('d')``."""
    a = array('d')
    a.frombytes(raw)
    if not LITTLE_ENDIAN_HOST:
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


def tensor_from_bytes(raw: bytes, shape: Tuple[int, ...], kind: str) -> Any:
    """Little-endian f64 bytes as a tensor of ``kind`` (``'numpy'``, ``'torch'``, ``'list'`` or ``'array'``)."""
    if kind == 'numpy':
        return np.frombuffer(raw, dtype='<f8').astype(np.float64).reshape(shape)
    if kind == 'torch':
        torch = import_torch()
        if np is not None:
            return torch.from_numpy(np.frombuffer(raw, dtype='<f8').astype(np.float64).reshape(shape))
        return torch.tensor(list(f64_array(raw)), dtype=torch.float64).reshape(shape)
    if kind == 'list':
        return _nest(f64_array(raw).tolist(), shape)
    return f64_array(raw)


def flatten(values: Any) -> List[float]:
    """A nested list or tuple of numbers, flattened row-major into floats."""
    out: List[float] = []
    stack = [values]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, tuple)):
            stack.extend(reversed(v))
        else:
            out.append(float(v))
    return out


def f64_bytes(data: Any, what: str) -> bytes:
    """Little-endian f64 bytes of a tensor-like value (numpy, torch, array('d'), memoryview, (nested) list)."""
    if isinstance(data, array):
        if data.typecode != 'd':
            raise TypeError(f'{what}: expected an array of typecode "d", got "{data.typecode}"')
        if LITTLE_ENDIAN_HOST:
            return data.tobytes()
        swapped = array('d', data)
        swapped.byteswap()
        return swapped.tobytes()
    module = type(data).__module__ or ''
    if module.startswith('torch'):
        torch = import_torch()
        if not (data.is_floating_point() or data.dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)):
            raise TypeError(f'{what}: expected a real tensor, got dtype {data.dtype}')
        t = data.detach().to(device='cpu', dtype=torch.float64).contiguous().reshape(-1)
        if np is not None:
            return t.numpy().astype('<f8', copy=False).tobytes()
        flat = t.tolist()
        return struct.pack(f'<{len(flat)}d', *flat)
    if np is not None and isinstance(data, np.ndarray):
        if data.dtype.kind not in 'fiub':
            raise TypeError(f'{what}: expected a real numpy array, got dtype {data.dtype}')
        return np.ascontiguousarray(data.reshape(-1), dtype='<f8').tobytes()
    if isinstance(data, memoryview):
        if data.format != 'd':
            raise TypeError(f'{what}: expected a memoryview of format "d", got "{data.format}"')
        return f64_bytes(array('d', data.tolist()), what)
    if isinstance(data, (list, tuple)):
        flat = flatten(data)
        return struct.pack(f'<{len(flat)}d', *flat)
    raise TypeError(f'{what}: expected a numpy array, torch tensor, array("d") or list of floats, got {type(data).__name__}')

