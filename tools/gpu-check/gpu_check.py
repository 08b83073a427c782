"""The GPU check of issue 29, for a machine with a CUDA GPU where Node may be absent (README.md beside this file).

Two parts, one report (printed last as a table; the whole as JSON in $OUT/gpu-check.json when OUT is set):

1. The torch engine (python/llmcp/engine) driven through its protocol by
   llmcp.engine.client: tokens/s of full training steps (forward, backward,
   clip, AdamW, same batch every step) on CUDA (f32 and f64) against the CPU
   (1 and 2 ranks of one thread, f64) of the same machine, for the
   bench:peers shapes medium, large and xl. Each CUDA row also checks its
   first loss against the CPU row's (f64: 1e-10 relative; f32: 1e-4).
2. The export: `llmcp export --to hf` of a small model (prepared by
   prepare.ts into .data/) loaded with the real transformers
   LlamaForCausalLM and AutoTokenizer, on CUDA when there is one: the
   tokenizer's ids for each prompt, the logits at every position (max
   relative error against llmcp's, in f64) and the greedy continuation,
   against what llmcp computed.

Usage: PYTHONPATH=python python3 tools/gpu-check/gpu_check.py [--quick]
"""
import argparse
import json
import math
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import torch  # noqa: E402

from llmcp.engine.client import LocalEngine  # noqa: E402

SHAPES = {
    "medium": dict(vocabularySize=512, modelWidth=64, heads=4, feedForwardWidth=256, layers=2, context=64),
    "large": dict(vocabularySize=2048, modelWidth=128, heads=4, feedForwardWidth=512, layers=4, context=128),
    "xl": dict(vocabularySize=4096, modelWidth=256, heads=8, feedForwardWidth=1024, layers=4, context=256),
}
BATCH = 8
OPTIMIZER = dict(beta1=0.9, beta2=0.999, epsilon=1e-8, weightDecay=0.01, groups="gain-no-decay", clipNorm=1.0)


def decoder_of(shape):
    return dict(
        vocabularySize=shape["vocabularySize"], modelWidth=shape["modelWidth"], heads=shape["heads"], feedForwardWidth=shape["feedForwardWidth"],
        layers=shape["layers"], maxPositions=shape["context"], ropeBase=10000.0, rmsEpsilon=1e-6,
    )


def initial(shape, seed=7):
    """Xavier-like uniform weights and unit gains in llmcp's order, and one batch (deterministic)."""
    from llmcp.checkpoint import DecoderConfig
    from llmcp.rules import expected_parameter_shapes

    d = decoder_of(shape)
    config = DecoderConfig(d["vocabularySize"], d["modelWidth"], d["heads"], d["feedForwardWidth"], d["layers"], d["maxPositions"], d["ropeBase"], d["rmsEpsilon"])
    rng = random.Random(seed)
    values = []
    for name, dims in expected_parameter_shapes(config):
        n = math.prod(dims)
        if name.endswith(".gain"):
            values += [1.0] * n
        else:
            bound = math.sqrt(6.0 / (dims[0] + dims[1]))
            values += [rng.uniform(-bound, bound) for _ in range(n)]
    ids = [rng.randrange(d["vocabularySize"]) for _ in range(BATCH * shape["context"] + 1)]
    return d, values, ids[:-1], ids[1:]


def measure(shape_name, device, ranks, dtype, steps):
    shape = SHAPES[shape_name]
    decoder, parameters, inputs, targets = initial(shape)
    T = shape["context"]
    with LocalEngine(world_size=ranks, device=device, threads=1) as engine:
        ready = engine.init(decoder, OPTIMIZER, parameters, dtype=dtype)
        first = engine.step(inputs, targets, BATCH, T, 1e-3)[0]
        engine.step(inputs, targets, BATCH, T, 1e-3)
        times = []
        for _ in range(steps):
            t0 = time.perf_counter()
            engine.step(inputs, targets, BATCH, T, 1e-3)
            times.append(time.perf_counter() - t0)
    times.sort()
    median = times[len(times) // 2]
    return {"shape": shape_name, "device": ready.get("device"), "ranks": ranks, "dtype": dtype, "tokensPerSecond": BATCH * T / median, "firstLoss": first, "torch": ready.get("torch")}


def engine_part(quick):
    rows = []
    cuda = torch.cuda.is_available()
    for name in (["medium", "xl"] if quick else ["medium", "large", "xl"]):
        steps = 3 if quick or name == "xl" else 8
        cpu = [measure(name, "cpu", ranks, "f64", steps) for ranks in (1, 2)]
        rows += cpu
        if cuda:
            for dtype, tolerance in (("f32", 1e-4), ("f64", 1e-10)):
                r = measure(name, "cuda", 1, dtype, max(steps, 10))
                r["firstLossRelDiff"] = abs(r["firstLoss"] - cpu[0]["firstLoss"]) / abs(cpu[0]["firstLoss"])
                r["firstLossOk"] = r["firstLossRelDiff"] <= tolerance
                r["vsCpu1"] = r["tokensPerSecond"] / cpu[0]["tokensPerSecond"]
                rows.append(r)
    return {"cuda": cuda, "gpu": torch.cuda.get_device_name(0) if cuda else None, "rows": rows}


def hf_part():
    data = os.path.join(HERE, ".data")
    expected_file = os.path.join(data, "expected.json")
    if not os.path.exists(expected_file):
        return {"skipped": "no .data/expected.json: run prepare.ts on a machine with Node and carry tools/gpu-check/.data"}
    try:
        from transformers import AutoTokenizer, LlamaForCausalLM
        import transformers
    except ImportError as e:
        return {"skipped": "transformers is not importable: %s" % e}
    with open(expected_file) as f:
        expected = json.load(f)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model = LlamaForCausalLM.from_pretrained(os.path.join(data, "hf"), torch_dtype=torch.float64).to(device).eval()
    tokenizer = AutoTokenizer.from_pretrained(os.path.join(data, "hf"))
    out = {"transformers": transformers.__version__, "device": device, "prompts": []}
    for p in expected["prompts"]:
        ids = tokenizer(p["text"], add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = model(torch.tensor([p["ids"]], device=device)).logits[0].double().cpu()
        reference = torch.tensor(p["logits"], dtype=torch.float64)
        relative = float((logits - reference).abs().max() / reference.abs().max())
        generated = model.generate(torch.tensor([p["ids"]], device=device), do_sample=False, max_new_tokens=len(p["greedy"]), pad_token_id=0)
        greedy = generated[0, len(p["ids"]) :].tolist()
        out["prompts"].append({
            "text": p["text"], "tokenizerIdsEqual": ids == p["ids"], "maxRelativeLogitError": relative,
            "greedyEqual": greedy == p["greedy"], "greedyCommonPrefix": next((i for i, (a, b) in enumerate(zip(greedy, p["greedy"])) if a != b), min(len(greedy), len(p["greedy"]))),
        })
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="medium and xl only, fewer steps")
    args = parser.parse_args()
    report = {"torch": torch.__version__, "engine": engine_part(args.quick), "hf": hf_part()}
    if os.environ.get("OUT"):
        with open(os.path.join(os.environ["OUT"], "gpu-check.json"), "w") as f:
            json.dump(report, f, indent=2)
    print("torch %s, GPU %s" % (report["torch"], report["engine"]["gpu"]))
    print("%-7s %-5s %5s %5s %12s %9s %s" % ("shape", "dev", "ranks", "dtype", "tokens/s", "÷cpu×1", "first loss vs cpu"))
    for r in report["engine"]["rows"]:
        print("%-7s %-5s %5d %5s %12.0f %9s %s" % (r["shape"], "cuda" if r["device"] != "cpu" else "cpu", r["ranks"], r["dtype"], r["tokensPerSecond"], "%.2f" % r["vsCpu1"] if "vsCpu1" in r else "", "%.1e %s" % (r["firstLossRelDiff"], "ok" if r["firstLossOk"] else "FAIL") if "firstLossRelDiff" in r else ""))
    hf = report["hf"]
    if "skipped" in hf:
        print("hf: skipped (%s)" % hf["skipped"])
    else:
        for p in hf["prompts"]:
            print("hf %s transformers %s: %r tokenizer ids %s, logits max relative %.1e, greedy %s (common prefix %d)" % (
                hf["device"], hf["transformers"], p["text"], "equal" if p["tokenizerIdsEqual"] else "DIFFER", p["maxRelativeLogitError"],
                "equal" if p["greedyEqual"] else "DIFFER", p["greedyCommonPrefix"]))


if __name__ == "__main__":
    main()
