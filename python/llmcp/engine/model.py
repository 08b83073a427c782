"""llmcp's decoder in PyTorch (docs/spec/model.md), for the torch engine.

The same model as @llmcp/model: a tied token embedding, pre-norm blocks of
RMSNorm (reciprocal root as exp(-0.5 · ln(ms + eps)), §7), causal multi-head
attention with RoPE on adjacent feature pairs (§9.2), SwiGLU (§11), a final
RMSNorm and the tied output head (§12), mean next-token cross-entropy (§13).
No biases; every projection is stored [in, out] and applied as x @ W, so the
parameters are llmcp's own tensors, in llmcp's canonical order (§3), held in
one flat buffer that the checkpoint hand-over reads and writes directly.

PyTorch sums in its own orders (BLAS products, vectorised reductions), so the
values agree with llmcp's to rounding, not to the bit; what this engine
guarantees bit for bit is itself: the same inputs, world size and settings
give the same bits on every run.
"""
import math

import torch

from ..checkpoint import DecoderConfig
from ..rules import expected_parameter_shapes


def parameter_shapes(decoder):
    """[(name, shape)] in llmcp's canonical order (docs/spec/model.md §3), from the format's rules (one home)."""
    return expected_parameter_shapes(
        DecoderConfig(
            vocabulary_size=decoder["vocabularySize"], model_width=decoder["modelWidth"], heads=decoder["heads"],
            feed_forward_width=decoder["feedForwardWidth"], layers=decoder["layers"], max_positions=decoder["maxPositions"],
            rope_base=decoder["ropeBase"], rms_epsilon=decoder["rmsEpsilon"],
        )
    )


def rope_tables(decoder, positions, dtype, device):
    """cos and sin (positions, d/2) of §9.2, from the C library's pow/sin/cos as the reference computes them."""
    d = decoder["modelWidth"] // decoder["heads"]
    base = decoder["ropeBase"]
    inv_freq = [math.pow(base, (-2.0 * i) / d) for i in range(d // 2)]
    cos = [[math.cos(p * f) for f in inv_freq] for p in range(positions)]
    sin = [[math.sin(p * f) for f in inv_freq] for p in range(positions)]
    as_tensor = lambda rows: torch.tensor(rows, dtype=torch.float64).reshape(positions, d // 2).to(device=device, dtype=dtype)
    return as_tensor(cos), as_tensor(sin)


class Decoder(torch.nn.Module):
    """The decoder over one flat parameter buffer (a view per named parameter)."""

    def __init__(self, decoder, flat):
        super().__init__()
        self.config = dict(decoder)
        self.names = []
        offset = 0
        for name, shape in parameter_shapes(decoder):
            n = math.prod(shape)
            # Parameters share the flat buffer's storage: the hand-over reads and writes `flat`.
            self.register_parameter(name.replace(".", "__"), torch.nn.Parameter(flat[offset : offset + n].view(shape)))
            self.names.append(name)
            offset += n
        if offset != flat.numel():
            raise ValueError("the flat buffer holds %d values, the decoder %d" % (flat.numel(), offset))
        self.flat = flat
        self._rope = {}

    def parameter(self, name):
        return getattr(self, name.replace(".", "__"))

    def _tables(self, positions, like):
        key = (positions, like.dtype, like.device)
        if key not in self._rope:
            self._rope[key] = rope_tables(self.config, positions, like.dtype, like.device)
        return self._rope[key]

    def _rms_norm(self, x, gain):
        """§7: ms = Σ x² / D; inv = exp(-0.5 · ln(ms + eps)); x · inv · g."""
        ms = (x * x).sum(-1, keepdim=True) / self.config["modelWidth"]
        inv = torch.exp(torch.log(ms + self.config["rmsEpsilon"]) * -0.5)
        return (x * inv) * gain

    def forward(self, inputs, targets):
        """The sum over the batch's tokens of the cross-entropy (a (rows, columns) batch; divide by the global token count)."""
        c = self.config
        B, T = inputs.shape
        D, H = c["modelWidth"], c["heads"]
        d = D // H
        cos, sin = self._tables(T, self.flat)
        scale = 1.0 / math.sqrt(d)
        allowed = torch.ones(T, T, dtype=torch.bool, device=inputs.device).tril()

        def rope(x):  # (B, H, T, d): rotate pairs (2i, 2i+1), §9.2
            left, right = x[..., 0::2], x[..., 1::2]
            return torch.stack((left * cos - right * sin, left * sin + right * cos), dim=-1).flatten(-2)

        def heads(x):  # (B, T, D) → (B, H, T, d), §9.1
            return x.view(B, T, H, d).transpose(1, 2)

        embedding = self.parameter("token_embedding.weight")
        x = embedding[inputs]  # §6
        for layer in range(c["layers"]):
            p = "blocks.%d." % layer
            w = lambda name: self.parameter(p + name)
            n1 = self._rms_norm(x, w("attention_norm.gain"))
            q, k, v = (heads(n1 @ w("attention.%s.weight" % m)) for m in ("query", "key", "value"))
            scores = (rope(q) @ rope(k).transpose(-1, -2)) * scale  # §9.4
            probabilities = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)  # §9.5
            merged = (probabilities @ v).transpose(1, 2).reshape(B, T, D)  # §9.6
            h1 = x + merged @ w("attention.output.weight")  # §10
            n2 = self._rms_norm(h1, w("ffn_norm.gain"))
            gate = n2 @ w("ffn.gate.weight")  # §11
            x = h1 + ((gate * torch.sigmoid(gate)) * (n2 @ w("ffn.up.weight"))) @ w("ffn.down.weight")
        final = self._rms_norm(x, self.parameter("final_norm.gain"))
        logits = final.reshape(B * T, D) @ embedding.t()  # §12: the tied head
        return torch.nn.functional.cross_entropy(logits, targets.reshape(B * T), reduction="sum")  # §13, summed
