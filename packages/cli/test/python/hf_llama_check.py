"""Rebuilds a Hugging Face Llama directory written by `llmcp export --to hf`
from its config.json and model.safetensors alone, with the standard Llama
equations (as in transformers' modeling_llama.py) written out in PyTorch f64,
and compares its logits with llmcp's.

Nothing of llmcp is used here and `transformers` is not needed: the tensors
are read from the safetensors bytes by hand, and the forward pass is the
textbook one -- RMSNorm, rotate-half rotary embeddings on (i, i + d/2),
causal softmax attention, SwiGLU MLP, final norm, tied output head.

usage: python3 hf_llama_check.py DIR EXPECTED.json
EXPECTED.json: {"sequences": [{"ids": [...], "logits": [[V floats] per position]}]}
Prints one JSON line {"sequences", "positions", "max_abs_error", "max_relative_error"}
where the relative error of a sequence is max |ours - llmcp| / max |llmcp|.
"""
import json
import math
import struct
import sys

import torch

DTYPES = {"F64": torch.float64, "F32": torch.float32}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = bytearray(f.read())
    (n,) = struct.unpack("<Q", bytes(data[:8]))
    header = json.loads(bytes(data[8 : 8 + n]).decode("utf-8"))
    metadata = header.pop("__metadata__", {})
    tensors = {}
    for name, info in header.items():
        dtype = DTYPES[info["dtype"]]
        start, end = info["data_offsets"]
        width = torch.tensor([], dtype=dtype).element_size()
        count = (end - start) // width
        t = torch.frombuffer(data, dtype=dtype, count=count, offset=8 + n + start)
        tensors[name] = t.reshape(info["shape"]).to(torch.float64)
    return metadata, tensors


def rms_norm(x, weight, eps):
    variance = x.pow(2).mean(-1, keepdim=True)
    return weight * (x * torch.rsqrt(variance + eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def llama_logits(config, w, ids):
    D = config["hidden_size"]
    H = config["num_attention_heads"]
    Hkv = config["num_key_value_heads"]
    d = config.get("head_dim") or D // H
    eps = config["rms_norm_eps"]
    base = config["rope_theta"]
    T = len(ids)
    assert Hkv == H, "grouped-query attention is not produced by llmcp"
    x = w["model.embed_tokens.weight"][torch.tensor(ids)]  # (T, D)
    inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=torch.float64) / d))  # (d/2)
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)  # (T, d/2)
    emb = torch.cat((freqs, freqs), dim=-1)  # (T, d)
    cos, sin = emb.cos(), emb.sin()
    mask = torch.full((T, T), float("-inf"), dtype=torch.float64).triu(1)
    for l in range(config["num_hidden_layers"]):
        p = f"model.layers.{l}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = (h @ w[p + "self_attn.q_proj.weight"].T).view(T, H, d).transpose(0, 1)  # (H, T, d)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).view(T, H, d).transpose(0, 1)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).view(T, H, d).transpose(0, 1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(d) + mask  # (H, T, T)
        attn = torch.softmax(scores, dim=-1) @ v  # (H, T, d)
        x = x + attn.transpose(0, 1).reshape(T, D) @ w[p + "self_attn.o_proj.weight"].T
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        gate = h @ w[p + "mlp.gate_proj.weight"].T
        up = h @ w[p + "mlp.up_proj.weight"].T
        x = x + (torch.nn.functional.silu(gate) * up) @ w[p + "mlp.down_proj.weight"].T
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["lm_head.weight"] if "lm_head.weight" in w and not config.get("tie_word_embeddings", True) else w["model.embed_tokens.weight"]
    return x @ head.T  # (T, V)


def main() -> int:
    directory, expected_path = sys.argv[1], sys.argv[2]
    with open(f"{directory}/config.json", encoding="utf-8") as f:
        config = json.load(f)
    if config.get("architectures") != ["LlamaForCausalLM"] or config.get("model_type") != "llama":
        raise SystemExit(f"not a LlamaForCausalLM config: {config.get('architectures')}")
    metadata, weights = read_safetensors(f"{directory}/model.safetensors")
    if metadata.get("format") != "pt":
        raise SystemExit(f"__metadata__.format is {metadata.get('format')!r}; transformers needs 'pt'")
    total = sum(t.numel() for t in weights.values())
    if metadata.get("total_parameters") != str(total):
        raise SystemExit(f"__metadata__.total_parameters {metadata.get('total_parameters')!r} != {total}")
    with open(expected_path, encoding="utf-8") as f:
        expected = json.load(f)
    max_abs = 0.0
    max_rel = 0.0
    positions = 0
    with torch.no_grad():
        for seq in expected["sequences"]:
            ours = llama_logits(config, weights, seq["ids"])
            ref = torch.tensor(seq["logits"], dtype=torch.float64)
            if ours.shape != ref.shape:
                raise SystemExit(f"logits shape {tuple(ours.shape)} != {tuple(ref.shape)}")
            err = (ours - ref).abs().max().item()
            max_abs = max(max_abs, err)
            max_rel = max(max_rel, err / ref.abs().max().item())
            positions += len(seq["ids"])
    print(json.dumps({"sequences": len(expected["sequences"]), "positions": positions, "max_abs_error": max_abs, "max_relative_error": max_rel}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
