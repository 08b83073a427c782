"""llmcp's torch engine: the trainer's decoder, loss, clipping and AdamW on PyTorch, one process per rank.

The llmcp trainer (TypeScript) owns the run; this package computes its steps
(docs/engine-protocol.md). Importing it does not import torch: the ranks do
(``python -m llmcp.engine``).
"""
from .wire import PROTOCOL

__all__ = ["PROTOCOL"]
