"""The torch engine in `pnpm bench:peers` (tools/bench-peers): llmcp's own PyTorch engine (python/llmcp/engine).

One measurement: full training steps through the engine protocol (the batch
sent to rank 0, forward, backward, DDP sum over the ranks, clip to global
norm 1.0, AdamW with lr 1e-3 as torch_peer.py) on the same batch, after a
warm-up, with `threads` ranks of one intra-op thread each (or one rank on
CUDA). Starts from llmcp's initial weights (`<dump>.params.f64`). Prints one
`RESULT {json}` line like torch_peer.py: tokens/s, the step-1 loss and its
relative difference to llmcp's, the ranks' CPU time per step (all ranks), the
BLAS each rank mapped.

Usage: /usr/bin/python3 torch_engine_peer.py '<spec json>'
"""
import json
import os
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

from llmcp.engine.client import LocalEngine  # noqa: E402


def cpu_seconds(pids):
    """User + system CPU seconds of processes (Linux /proc)."""
    total = 0
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / tick


def median(xs):
    xs = sorted(xs)
    m = len(xs) // 2
    return xs[m] if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


def main():
    spec = json.loads(sys.argv[1])
    cfg, B, T, dump = spec["config"], spec["batch"], spec["context"], spec["dump"]
    device = spec.get("device", "cpu")
    with open(dump + ".params.f64", "rb") as f:
        raw = f.read()
    parameters = struct.unpack("<%dd" % (len(raw) // 8), raw)
    with open(dump + ".inputs.i32", "rb") as f:
        inputs = f.read()
    with open(dump + ".targets.i32", "rb") as f:
        targets = f.read()
    inputs = struct.unpack("<%di" % (len(inputs) // 4), inputs)
    targets = struct.unpack("<%di" % (len(targets) // 4), targets)
    ranks = 1 if device == "cuda" else spec["threads"]
    optimizer = dict(beta1=0.9, beta2=0.999, epsilon=1e-8, weightDecay=0.01, groups="gain-no-decay", clipNorm=1.0)
    with LocalEngine(world_size=ranks, device=device, threads=1) as engine:
        ready = engine.init(cfg, optimizer, parameters, dtype=spec.get("dtype", "f64"))
        losses = []
        warm = time.perf_counter()
        while len(losses) < spec["warmup"] or (time.perf_counter() - warm) * 1000 < spec.get("warmupMs", 0):
            losses.append(engine.step(inputs, targets, B, T, 1e-3)[0])
        pids = [p.pid for p in engine.ranks]
        times = []
        # The ranks' CPU time is read in clock ticks: taken over the whole timed loop, not per step.
        cpu_start = cpu_seconds(pids)
        start = time.perf_counter()
        while len(times) < spec["minSteps"] or (time.perf_counter() - start) * 1000 < spec["budgetMs"]:
            t0 = time.perf_counter()
            losses.append(engine.step(inputs, targets, B, T, 1e-3)[0])
            times.append((time.perf_counter() - t0) * 1000)
        cpu_ms = (cpu_seconds(pids) - cpu_start) * 1000 / len(times)
    ms = median(times)
    first = losses[0] if losses else None
    ref = spec.get("llmcpFirstLoss")
    print("RESULT " + json.dumps({
        "implementation": "torch-engine",
        "threads": ranks,
        "parameters": len(parameters),
        "tokensPerSecond": B * T * 1000 / ms,
        "msPerStep": ms,
        "cpuMsPerStep": cpu_ms,
        "steps": len(times),
        "firstLoss": first,
        "firstLossRelDiff": abs(first - ref) / abs(ref) if (first is not None and ref) else None,
        "torch": ready.get("torch"),
        "device": ready.get("device"),
        "blasLibraries": ready.get("blas", []),
    }), flush=True)


if __name__ == "__main__":
    main()
