"""The data model: what one LLMCP35 v1 file holds (SPEC §1, §4–§7), as dataclasses.

:func:`llmcp.decode` returns a :class:`Checkpoint`; :func:`llmcp.encode`
writes one. Tensor data may be a shaped numpy array, a torch tensor, a flat
row-major ``array('d')`` or a (nested) list (see :mod:`llmcp.tensors`).
"""

from __future__ import annotations

from dataclasses import dataclass, field as dc_field
from typing import Any, Dict, List, Optional, Tuple, Union

from .rules import BPE_BASE_VOCABULARY, TOKENIZER_KIND_NAMES, checksum_label

__all__ = [
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
]


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

