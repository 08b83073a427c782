"""Loads a safetensors file written by `llmcp export --to safetensors` into
PyTorch tensors, without the `safetensors` package (the format is simple
enough to read by hand), and compares every tensor with the expected values.

usage: python3 check_safetensors.py FILE EXPECTED.json
EXPECTED.json: {"tensors": {name: {"dtype": "F64"|"F32", "shape": [...], "bits": ["0x...", ...]}},
                "metadata": {key: value}}
Prints one line "ok <n> tensors <elements> elements" and exits 0 on success.
"""
import json
import struct
import sys

import torch

DTYPES = {"F64": (torch.float64, torch.int64, 8), "F32": (torch.float32, torch.int32, 4)}


def main() -> int:
    path, expected_path = sys.argv[1], sys.argv[2]
    with open(path, "rb") as f:
        data = bytearray(f.read())
    with open(expected_path, encoding="utf-8") as f:
        expected = json.load(f)
    (n,) = struct.unpack("<Q", bytes(data[:8]))
    header = json.loads(bytes(data[8 : 8 + n]).decode("utf-8"))
    metadata = header.pop("__metadata__", {})
    for key, value in expected["metadata"].items():
        if metadata.get(key) != value:
            raise SystemExit(f"metadata {key}: expected {value!r}, found {metadata.get(key)!r}")
    if set(header) != set(expected["tensors"]):
        raise SystemExit(f"tensor names differ: {sorted(header)} vs {sorted(expected['tensors'])}")
    base = 8 + n
    elements = 0
    for name, info in header.items():
        want = expected["tensors"][name]
        dtype, int_dtype, width = DTYPES[info["dtype"]]
        start, end = info["data_offsets"]
        count = (end - start) // width
        tensor = torch.frombuffer(data, dtype=dtype, count=count, offset=base + start).reshape(info["shape"])
        if list(tensor.shape) != want["shape"] or info["dtype"] != want["dtype"]:
            raise SystemExit(f"{name}: shape/dtype {list(tensor.shape)} {info['dtype']} vs {want['shape']} {want['dtype']}")
        bits = tensor.reshape(-1).view(int_dtype).tolist()
        mask = (1 << (8 * width)) - 1
        for i, (got, hexbits) in enumerate(zip(bits, want["bits"])):
            if got & mask != int(hexbits, 16):
                raise SystemExit(f"{name}[{i}]: bits {got & mask:#x} vs {hexbits}")
        if len(bits) != len(want["bits"]):
            raise SystemExit(f"{name}: {len(bits)} elements vs {len(want['bits'])}")
        # The values are usable as ordinary tensors.
        if not torch.isfinite(tensor).all():
            raise SystemExit(f"{name}: non-finite values")
        elements += len(bits)
    print(f"ok {len(header)} tensors {elements} elements")
    return 0


if __name__ == "__main__":
    sys.exit(main())
