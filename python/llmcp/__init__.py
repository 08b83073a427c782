"""Read, validate and write LLMCP35 v1 checkpoints (llmcp) from Python.

A dependency-free port of ``@llmcp/format``'s decoder and encoder
(``packages/format/SPEC.md`` is the normative specification; sections are
cited as ``SPEC §9.3``). The decoder applies every rule of SPEC §9 in the
reference's order, plus this implementation family's limits of SPEC §15.2,
and reports the first failure as a :class:`FormatError` whose ``code``,
``category``, ``reason``, ``offset``, ``field``, ``record_name``,
``record_index``, ``element_index``, ``expected`` and ``found`` equal those of
the TypeScript ``FormatError`` for the same bytes. The encoder writes the
canonical bytes of SPEC §8, identical to ``encodeCheckpoint``.

* numpy is optional: with it, tensors are ``numpy.ndarray`` (float64, shaped);
  without it, flat row-major ``array('d')``.
* torch is optional and never imported by ``import llmcp``:
  ``decode(data, tensors='torch')`` returns ``torch.Tensor`` (float64), and
  :func:`torch_adamw_state_dict` maps the AdamW state to the ``state_dict`` of
  ``torch.optim.AdamW``.

Usage::

    import llmcp
    ckpt = llmcp.load('state.llmcp')            # or llmcp.decode(data)
    ckpt.parameter('token_embedding.weight').data.shape   # (V, D)
    assert llmcp.encode(ckpt) == open('state.llmcp', 'rb').read()

Modules, one job each: :mod:`llmcp.errors` (the error and its codes),
:mod:`llmcp.rules` (the rules of the format), :mod:`llmcp.reader`
(:func:`decode`, :func:`load`), :mod:`llmcp.canonical` (canonical bytes),
:mod:`llmcp.writer` (:func:`encode`, :func:`save`), :mod:`llmcp.checkpoint`
(the data model), :mod:`llmcp.tensors` (numpy, torch, arrays),
:mod:`llmcp.text` (how values read in errors), :mod:`llmcp.torch_mapping`
(``torch.optim.AdamW``) and :mod:`llmcp.cli` (``python -m llmcp``).
"""

from __future__ import annotations

from .checkpoint import (
    AdamWConfig,
    AdamWState,
    BpeTokenizer,
    Checkpoint,
    DecoderConfig,
    DescriptorLayout,
    Layout,
    LiteralTokenizer,
    Moment,
    ParameterGroups,
    Tensor,
)
from .errors import FORMAT_ERROR_CATEGORIES, FORMAT_ERROR_CODES, FormatError
from .reader import decode, load
from .rules import FORMAT_VERSION, MAGIC, MAX_HEADER_BYTES, checksum_label, expected_parameter_shapes, file_checksum, fnv1a64, model_parameter_name
from .torch_mapping import adamw_state_from_torch, torch_adamw, torch_adamw_state_dict, torch_param_groups
from .writer import encode, save

__version__ = '0.1.0'

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
