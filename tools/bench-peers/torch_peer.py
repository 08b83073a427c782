"""PyTorch f64 peer of llmcp's decoder for `pnpm bench:peers` (tools/bench-peers).

The same model as @llmcp/model (../shared/spec/model.md): tied token embedding,
pre-norm blocks of RMSNorm (reciprocal root as exp(-0.5 * ln(ms + eps))),
causal multi-head attention with RoPE on adjacent feature pairs, SwiGLU
feed-forward, final RMSNorm, tied head, mean cross-entropy. No biases; every
projection is stored [in, out] and applied as x @ W. Parameters are one flat
f64 vector in llmcp's model order, so the initial weights written by llmcp's
measurement process (`<dump>.params.f64`) load directly.

One measurement: full training steps (forward, backward, clip to global norm
1.0, AdamW with lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight decay 0.01 on
everything but the gains) on the same batch, after a warm-up. Prints one
`RESULT {json}` line: tokens/s, the step-1 loss and its relative difference to
llmcp's, the parameter count, the torch threads and the BLAS library that is
mapped into the process (from /proc/self/maps).

Usage: /usr/bin/python3 torch_peer.py '<spec json>'
"""
import json
import math
import sys
import time


def main():
    spec = json.loads(sys.argv[1])
    import numpy as np
    import torch

    torch.set_num_threads(spec["threads"])
    torch.set_default_dtype(torch.float64)
    cfg = spec["config"]
    V, D, H, F, L = cfg["vocabularySize"], cfg["modelWidth"], cfg["heads"], cfg["feedForwardWidth"], cfg["layers"]
    eps, base = cfg["rmsEpsilon"], cfg["ropeBase"]
    B, T = spec["batch"], spec["context"]
    d = D // H

    # Flat parameters in llmcp's order: embedding, then per block
    # attention_norm.gain, query, key, value, output, ffn_norm.gain, gate, up, down; final_norm.gain.
    shapes = [("token_embedding.weight", (V, D))]
    for l in range(L):
        p = f"blocks.{l}."
        shapes += [
            (p + "attention_norm.gain", (D,)),
            (p + "attention.query.weight", (D, D)),
            (p + "attention.key.weight", (D, D)),
            (p + "attention.value.weight", (D, D)),
            (p + "attention.output.weight", (D, D)),
            (p + "ffn_norm.gain", (D,)),
            (p + "ffn.gate.weight", (D, F)),
            (p + "ffn.up.weight", (D, F)),
            (p + "ffn.down.weight", (F, D)),
        ]
    shapes.append(("final_norm.gain", (D,)))
    count = sum(math.prod(s) for _, s in shapes)

    dump = spec["dump"]
    flat = np.fromfile(dump + ".params.f64", dtype="<f8")
    if flat.size != count:
        raise SystemExit(f"parameter count: llmcp wrote {flat.size}, this model has {count}")
    inputs = torch.from_numpy(np.fromfile(dump + ".inputs.i32", dtype="<i4").astype(np.int64)).view(B, T)
    targets = torch.from_numpy(np.fromfile(dump + ".targets.i32", dtype="<i4").astype(np.int64)).view(B * T)

    params = {}
    off = 0
    for name, shape in shapes:
        n = math.prod(shape)
        params[name] = torch.nn.Parameter(torch.from_numpy(flat[off : off + n].copy()).view(shape))
        off += n

    # RoPE tables (../../docs/spec/model.md §9.2): inv_freq_i = base^(-2i/d), angle = p * inv_freq_i.
    i = torch.arange(d // 2, dtype=torch.float64)
    inv_freq = torch.pow(torch.tensor(base, dtype=torch.float64), (-2.0 * i) / d)
    angle = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq[None, :]
    cos, sin = torch.cos(angle), torch.sin(angle)  # (T, d/2)
    scale = 1.0 / math.sqrt(d)
    mask = torch.ones(T, T, dtype=torch.bool).tril()

    def rms_norm(x, g):
        ms = (x * x).sum(-1, keepdim=True) / D
        inv = torch.exp(torch.log(ms + eps) * -0.5)
        return x * inv * g

    def rope(x):  # (B, H, T, d), pairs (2i, 2i+1)
        l, r = x[..., 0::2], x[..., 1::2]
        out = torch.stack((l * cos - r * sin, l * sin + r * cos), dim=-1)
        return out.flatten(-2)

    E = params["token_embedding.weight"]

    def loss_fn():
        x = E[inputs]  # (B, T, D)
        for l in range(L):
            p = f"blocks.{l}."
            n1 = rms_norm(x, params[p + "attention_norm.gain"])
            q = (n1 @ params[p + "attention.query.weight"]).view(B, T, H, d).transpose(1, 2)
            k = (n1 @ params[p + "attention.key.weight"]).view(B, T, H, d).transpose(1, 2)
            v = (n1 @ params[p + "attention.value.weight"]).view(B, T, H, d).transpose(1, 2)
            s = (rope(q) @ rope(k).transpose(-1, -2)) * scale
            prob = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1)
            merged = (prob @ v).transpose(1, 2).reshape(B, T, D)
            h1 = x + merged @ params[p + "attention.output.weight"]
            n2 = rms_norm(h1, params[p + "ffn_norm.gain"])
            gate = n2 @ params[p + "ffn.gate.weight"]
            up = n2 @ params[p + "ffn.up.weight"]
            x = h1 + (gate * torch.sigmoid(gate) * up) @ params[p + "ffn.down.weight"]
        nf = rms_norm(x, params["final_norm.gain"])
        logits = nf.view(B * T, D) @ E.t()
        return torch.nn.functional.cross_entropy(logits, targets)

    decay = [params[n] for n, _ in shapes if not n.endswith(".gain")]
    no_decay = [params[n] for n, _ in shapes if n.endswith(".gain")]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
        lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
    )
    all_params = decay + no_decay
    losses = []

    def step():
        opt.zero_grad(set_to_none=False)
        loss = loss_fn()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(all_params, 1.0)
        opt.step()
        losses.append(loss.item())

    warm = time.perf_counter()
    done = 0
    while done < spec["warmup"] or (time.perf_counter() - warm) * 1000 < spec.get("warmupMs", 0):
        step()
        done += 1
    times = []
    cpu = []
    start = time.perf_counter()
    while len(times) < spec["minSteps"] or (time.perf_counter() - start) * 1000 < spec["budgetMs"]:
        c0 = time.process_time()
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1000)
        cpu.append((time.process_time() - c0) * 1000)

    def median(xs):
        xs = sorted(xs)
        m = len(xs) // 2
        return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2

    ms = median(times)

    with open("/proc/self/maps") as f:
        libs = sorted({line.split()[-1] for line in f if ("blas" in line or "lapack" in line) and "/" in line})
    config_text = torch.__config__.show()
    blas_info = [part.strip() for part in config_text.replace("\n", ",").split(",") if "BLAS_INFO" in part]
    first = losses[0] if losses else None
    ref = spec.get("llmcpFirstLoss")
    result = {
        "implementation": "pytorch",
        "threads": torch.get_num_threads(),
        "parameters": count,
        "tokensPerSecond": B * T * 1000 / ms,
        "msPerStep": ms,
        # Process CPU time per step (all threads).
        "cpuMsPerStep": median(cpu),
        "steps": len(times),
        "firstLoss": first,
        "firstLossRelDiff": abs(first - ref) / abs(ref) if (first is not None and ref) else None,
        "torch": torch.__version__,
        "blasLibraries": libs,
        "blasInfo": blas_info,
    }
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
