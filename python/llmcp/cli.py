"""The command line: ``python -m llmcp inspect FILE [--json]`` and ``python -m llmcp verify FILE...``.

Exit status 0 when every file is valid, 1 when one is not (the error is
printed; ``--json`` prints it with the key names of ``formatErrorData``), 2
for a usage error.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any, Dict, Optional, Sequence

from .checkpoint import Checkpoint
from .errors import FormatError
from .reader import load

__all__ = ['main']


def _summary(ckpt: Checkpoint) -> Dict[str, Any]:
    lay = ckpt.layout
    tok = ckpt.tokenizer
    return {
        'fileLength': lay.file_length if lay else None,
        'checksum': lay.checksum_label if lay else None,
        'headerBytes': lay.header_bytes if lay else None,
        'payloadBytes': lay.payload_bytes if lay else None,
        'tokenizer': {'kind': tok.kind, 'vocabulary': tok.vocabulary_size, **({'merges': len(tok.pairs)} if tok.kind == 'bpe' else {})},
        'decoder': {
            'vocabularySize': ckpt.decoder.vocabulary_size,
            'modelWidth': ckpt.decoder.model_width,
            'heads': ckpt.decoder.heads,
            'feedForwardWidth': ckpt.decoder.feed_forward_width,
            'layers': ckpt.decoder.layers,
            'maxPositions': ckpt.decoder.max_positions,
            'ropeBase': ckpt.decoder.rope_base,
            'rmsEpsilon': ckpt.decoder.rms_epsilon,
        },
        'optimizer': {
            'learningRate': ckpt.optimizer.config.learning_rate,
            'beta1': ckpt.optimizer.config.beta1,
            'beta2': ckpt.optimizer.config.beta2,
            'epsilon': ckpt.optimizer.config.epsilon,
            'weightDecay': ckpt.optimizer.config.weight_decay,
            'groups': None if ckpt.optimizer.groups is None else {'decay': ckpt.optimizer.groups.decay, 'noDecay': ckpt.optimizer.groups.no_decay},
            'step': str(ckpt.optimizer.step),
            'beta1Power': ckpt.optimizer.beta1_power,
            'beta2Power': ckpt.optimizer.beta2_power,
            'moments': len(ckpt.optimizer.moments),
        },
        'selectedStep': str(ckpt.selected_step),
        'samplingRngState': f'0x{ckpt.sampling_rng_state:016x}',
        'parameters': [{'name': p.name, 'shape': list(p.shape)} for p in ckpt.parameters],
        'parameterCount': sum(math.prod(p.shape) for p in ckpt.parameters),
    }


def main(argv: Optional[Sequence[str]] = None, prog: str = 'python3 -m llmcp') -> int:
    """``python3 -m llmcp inspect FILE [--json]`` / ``verify FILE...``; exit status 1 on an invalid file."""
    parser = argparse.ArgumentParser(prog=prog, description='Read and validate LLMCP35 v1 checkpoints (llmcp).')
    sub = parser.add_subparsers(dest='command', required=True)
    p_inspect = sub.add_parser('inspect', help='validate one file and describe it')
    p_inspect.add_argument('file')
    p_inspect.add_argument('--json', action='store_true', help='print JSON (the summary, or the error as formatErrorData)')
    p_verify = sub.add_parser('verify', help='validate files; one line each')
    p_verify.add_argument('files', nargs='+')
    args = parser.parse_args(argv)

    if args.command == 'verify':
        status = 0
        for path in args.files:
            try:
                ckpt = load(path, tensors='array')
                print(f'{path}: ok {ckpt.layout.checksum_label} step {ckpt.selected_step}')
            except FormatError as e:
                status = 1
                print(f'{path}: {e.code} ({e.category}) {e.message}')
        return status

    try:
        ckpt = load(args.file, tensors='array')
    except FormatError as e:
        if args.json:
            print(json.dumps({'ok': False, 'error': e.to_dict()}, indent=2))
        else:
            where = f' at offset {e.offset}' if e.offset is not None else ''
            print(f'{args.file}: invalid LLMCP35 v1 file: {e.code} ({e.category}, {e.reason}){where}\n  {e.message}')
        return 1
    s = _summary(ckpt)
    if args.json:
        print(json.dumps({'ok': True, 'checkpoint': s}, indent=2))
        return 0
    d, o = s['decoder'], s['optimizer']
    tok = s['tokenizer']
    print(f'{args.file}: valid LLMCP35 v1, {s["fileLength"]} bytes, {s["checksum"]}')
    print(f'  header {s["headerBytes"]} bytes, payload {s["payloadBytes"]} bytes')
    print(f'  tokenizer  {tok["kind"]}, {tok["vocabulary"]} ids' + (f' ({tok["merges"]} merges)' if 'merges' in tok else ''))
    print(f'  decoder    V={d["vocabularySize"]} D={d["modelWidth"]} H={d["heads"]} F={d["feedForwardWidth"]} L={d["layers"]} '
          f'positions={d["maxPositions"]} rope_base={d["ropeBase"]!r} rms_epsilon={d["rmsEpsilon"]!r}')
    print(f'  parameters {len(s["parameters"])} tensors, {s["parameterCount"]} values')
    print(f'  AdamW      lr={o["learningRate"]!r} betas=({o["beta1"]!r}, {o["beta2"]!r}) eps={o["epsilon"]!r} weight_decay={o["weightDecay"]!r}, '
          f'step {o["step"]}, {o["moments"]} moment pairs, groups {"none" if o["groups"] is None else str(len(o["groups"]["decay"])) + " decay / " + str(len(o["groups"]["noDecay"])) + " no-decay"}')
    print(f'  selected step {s["selectedStep"]}, sampling RNG state {s["samplingRngState"]}')
    for p in s['parameters']:
        print(f'    {p["name"]:<40} {p["shape"]}')
    return 0

