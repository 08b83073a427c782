"""The one error of the package, :class:`FormatError`, and its stable codes.

The codes, their categories and the error's context fields are those of
``FormatError`` in ``@llmcp/format`` (``packages/format/src/errors.ts``; SPEC
§9.9, §15.1), so a Python caller and a TypeScript caller see the same
``code``, ``category``, ``reason``, ``offset``, ``field``, record, element,
``expected`` and ``found`` for the same bytes.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

__all__ = ['FormatError', 'FORMAT_ERROR_CODES', 'FORMAT_ERROR_CATEGORIES']

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
    """Every failure of this package: bad bytes, or a state the encoder cannot write.

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

