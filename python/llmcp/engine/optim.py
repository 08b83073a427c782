"""Global-norm clipping and AdamW as llmcp defines them (docs/spec/training.md §5, §6).

Both work on flat tensors in llmcp's canonical parameter order. The AdamW
update is elementwise and follows §6.3 operation by operation, each rounded
on its own (no fused multiply-add, no `torch.optim`): given the same
gradient it gives llmcp's bits. The beta powers are Python floats advanced by
repeated multiplication, exactly as stored in an LLMCP35 checkpoint.
"""
import torch


class NonFiniteError(Exception):
    """A loss, gradient or new optimizer value is not finite; nothing was changed."""


def clip_multiplier(gradient, max_norm):
    """§5 on a flat gradient: (norm before, multiplier or None when not clipping).

    The norm is scale · sqrt(Σ (g / scale)²) with scale = max |g|, the
    overflow-safe form of §5 summed in PyTorch's order; the decision and the
    multiplier ((max_norm / scale) / root) are §5's.
    """
    scale = float(gradient.abs().max()) if gradient.numel() > 0 else 0.0
    if scale == 0.0:
        return 0.0, None
    root = float(torch.sqrt(((gradient / scale) ** 2).sum()))
    norm = scale * root
    if norm == float("inf"):
        norm = 1.7976931348623157e308
    if max_norm is None or scale <= max_norm / root:
        return norm, None
    multiplier = (max_norm / scale) / root
    if multiplier == 0.0:
        raise NonFiniteError("the clip multiplier underflows to zero (norm %r)" % norm)
    return norm, multiplier


class AdamW:
    """The AdamW state of §6.2 over flat tensors, and the step of §6.3."""

    def __init__(self, count, hyper, decay_mask, like, state=None):
        """hyper: beta1, beta2, epsilon, weightDecay; decay_mask: a flat bool tensor, True where a value decays."""
        self.beta1 = hyper["beta1"]
        self.beta2 = hyper["beta2"]
        self.epsilon = hyper["epsilon"]
        self.weight_decay = hyper["weightDecay"]
        self.decay_mask = decay_mask
        if state is None:
            self.step = 0
            self.beta1_power = 1.0
            self.beta2_power = 1.0
            self.first = torch.zeros(count, dtype=like.dtype, device=like.device)
            self.second = torch.zeros(count, dtype=like.dtype, device=like.device)
        else:
            self.step, self.beta1_power, self.beta2_power, self.first, self.second = state

    def update(self, weights, gradient, learning_rate, multiplier):
        """One step of §6.3 on `weights` (in place); commits nothing unless every new value is finite."""
        b1 = self.beta1_power * self.beta1
        b2 = self.beta2_power * self.beta2
        c1 = 1.0 - b1
        c2 = 1.0 - b2
        g = gradient if multiplier is None else gradient * multiplier
        first = (self.beta1 * self.first) + ((1.0 - self.beta1) * g)
        second = (self.beta2 * self.second) + ((1.0 - self.beta2) * (g * g))
        direction = (first / c1) / (torch.sqrt(second / c2) + self.epsilon)
        adaptive = learning_rate * direction
        # (lr · wd) first, per group: lr · wd for decayed values, lr · 0.0 for the others (a signed zero times w).
        rate = torch.full_like(weights, learning_rate * 0.0).masked_fill_(self.decay_mask, learning_rate * self.weight_decay)
        decay = rate * weights
        updated = (weights - adaptive) - decay
        if not (bool(torch.isfinite(updated).all()) and bool(torch.isfinite(first).all()) and bool(torch.isfinite(second).all())):
            raise NonFiniteError("AdamW step %d gives a non-finite value" % (self.step + 1))
        weights.copy_(updated)
        self.first = first
        self.second = second
        self.beta1_power = b1
        self.beta2_power = b2
        self.step += 1
