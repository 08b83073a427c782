"""Tests of llmcp_format (unittest only; numpy and torch optional).

Run alone (``python3 python/test_llmcp_format.py``) it checks the golden file,
the malformed corpus against its manifest, the encoder, the no-numpy path,
the torch AdamW mapping (when torch is installed) and the command line.

Run by ``tools/python-reader.test.ts`` it is given a job: a bundle of files
(the corpus, trainer checkpoints, random valid states, hostile mutations)
whose outcomes the vitest side compares with ``@llmcp/format``'s::

    python3 python/test_llmcp_format.py --job job.json --out result.json

``result.json`` holds the unittest summary and, for every job entry, the
accept/reject outcome with the error's code, category, reason and context,
and for accepted files whether re-encoding reproduced them byte for byte.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import struct
import subprocess
import sys
import time
import unittest
from array import array

sys.dont_write_bytecode = True  # leave no __pycache__ in the repository
os.environ['PYTHONDONTWRITEBYTECODE'] = '1'  # nor from the subprocesses below

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import llmcp_format as lf  # noqa: E402

FIXTURES = os.path.join(ROOT, 'packages', 'conformance', 'fixtures')
GOLDEN_PATH = os.path.join(FIXTURES, 'golden-6330.llmcp')

try:
    import numpy as np
except ImportError:  # pragma: no cover
    np = None
try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

JOB = None
RESULTS = []


def read(path):
    with open(path, 'rb') as f:
        return f.read()


def outcome(data, tensors='auto'):
    """What the vitest side compares: the outcome and the error's context (key names of formatErrorData)."""
    try:
        ckpt = lf.decode(data, tensors=tensors)
    except lf.FormatError as e:
        d = e.to_dict()
        d.pop('message')
        d.pop('expected', None)
        d.pop('found', None)
        return {'ok': False, 'error': d}
    again = lf.encode(ckpt)
    return {'ok': True, 'reencodeIdentical': again == data, 'checksum': ckpt.layout.checksum_label, 'step': str(ckpt.selected_step)}


class GoldenTest(unittest.TestCase):
    def test_golden_decodes_and_reencodes_to_the_identical_6330_bytes(self):
        data = read(GOLDEN_PATH)
        self.assertEqual(len(data), 6330)
        for kind in ['array', 'list'] + (['numpy'] if np is not None else []) + (['torch'] if torch is not None else []):
            ckpt = lf.decode(data, tensors=kind)
            self.assertEqual(lf.encode(ckpt), data, kind)
        ckpt = lf.decode(data)
        self.assertEqual(ckpt.layout.checksum_label, 'fnv1a64:2b8b6097eaed6a91')
        self.assertEqual((ckpt.layout.header_bytes, ckpt.layout.payload_bytes), (2869, 3461))
        self.assertEqual(ckpt.tokenizer.pieces, [b'0', b'1', b'2', b'3', b'4'])
        self.assertEqual(ckpt.sampling_rng_state, 0x9E3779B97F4A7C38)
        self.assertEqual(ckpt.optimizer.step, 8)
        self.assertEqual(struct.pack('<d', ckpt.optimizer.beta1_power).hex(), 'c7d23c57c68cdb3f')
        self.assertEqual(ckpt.layout.descriptors[5].offset, 2874)
        emb = ckpt.parameter('token_embedding.weight')
        self.assertEqual(emb.shape, (5, 4))
        first = emb.data[0][0] if np is not None else emb.data[0]
        self.assertEqual(struct.pack('<d', float(first)).hex(), '4504502e99aedcbf')

    def test_golden_matches_the_manifest_summary(self):
        manifest = json.loads(read(os.path.join(FIXTURES, 'manifest.json')))
        exp = manifest['golden']['expected']
        ckpt = lf.decode(read(GOLDEN_PATH))
        bits = lambda v: '0x' + struct.pack('>d', v).hex()  # noqa: E731
        self.assertEqual(bits(ckpt.decoder.rope_base), exp['decoder']['ropeBaseBits'])
        self.assertEqual(bits(ckpt.optimizer.config.weight_decay), exp['optimizer']['weightDecayBits'])
        self.assertEqual(ckpt.optimizer.groups.decay, exp['optimizer']['groups']['decay'])
        self.assertEqual(ckpt.optimizer.groups.no_decay, exp['optimizer']['groups']['noDecay'])
        self.assertEqual([m.name for m in ckpt.optimizer.moments], [m['name'] for m in exp['optimizer']['moments']])
        for m, e in zip(ckpt.optimizer.moments, exp['optimizer']['moments']):
            self.assertEqual(lf.checksum_label(lf.fnv1a64(lf._f64_bytes(m.first, 'first'))), e['first'])
            self.assertEqual(lf.checksum_label(lf.fnv1a64(lf._f64_bytes(m.second, 'second'))), e['second'])


class CorpusTest(unittest.TestCase):
    def test_every_corpus_case_gets_the_manifest_outcome(self):
        manifest = json.loads(read(os.path.join(FIXTURES, 'manifest.json')))
        for case in manifest['cases']:
            with self.subTest(case=case['id']):
                got = outcome(read(os.path.join(FIXTURES, case['file'])))
                exp = case['expect']
                if exp['outcome'] == 'accept':
                    self.assertTrue(got['ok'], got)
                    self.assertTrue(got['reencodeIdentical'])
                else:
                    self.assertFalse(got['ok'], case['id'])
                    self.assertEqual((got['error']['code'], got['error']['category'], got['error']['reason']), (exp['code'], exp['category'], exp['reason']))

    def test_decoding_without_numpy_gives_the_same_outcomes(self):
        script = (
            'import sys, json; sys.modules["numpy"] = None; sys.modules["torch"] = None; sys.path.insert(0, sys.argv[1]); '
            'import test_llmcp_format as t, llmcp_format as lf; assert lf._np is None; '
            'from array import array; '
            'c = lf.decode(t.read(t.GOLDEN_PATH)); assert isinstance(c.parameters[0].data, array); '
            'm = json.loads(t.read(t.os.path.join(t.FIXTURES, "manifest.json"))); '
            'print(json.dumps([t.outcome(t.read(t.os.path.join(t.FIXTURES, x["file"]))) for x in m["cases"]]))'
        )
        r = subprocess.run([sys.executable, '-c', script, HERE], capture_output=True, text=True, check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        without = json.loads(r.stdout)
        manifest = json.loads(read(os.path.join(FIXTURES, 'manifest.json')))
        with_default = [outcome(read(os.path.join(FIXTURES, x['file']))) for x in manifest['cases']]
        self.assertEqual(without, with_default)


class U64DecoderFieldTest(unittest.TestCase):
    def test_u64_max_positions_and_feed_forward_width_decode_and_reencode_exactly(self):
        u64_max = (1 << 64) - 1
        for name, ffn, positions in [('u64-max-positions-layers-0', 4, u64_max), ('u64-ffn-layers-0', u64_max, 1 << 53),
                                     ('u64-max-positions-2p53-plus-1', 4, (1 << 53) + 1), ('max-positions-rotary-limit', 4, ((1 << 63) - 1) // 8)]:
            with self.subTest(case=name):
                data = read(os.path.join(FIXTURES, 'malformed', f'{name}.llmcp'))
                ckpt = lf.decode(data)
                self.assertEqual((ckpt.decoder.feed_forward_width, ckpt.decoder.max_positions), (ffn, positions))
                self.assertEqual(lf.encode(ckpt), data)


class ErrorTest(unittest.TestCase):
    def test_errors_carry_code_category_offset_and_field(self):
        golden = bytearray(read(GOLDEN_PATH))
        golden[-1] ^= 1
        with self.assertRaises(lf.FormatError) as cm:
            lf.decode(bytes(golden))
        e = cm.exception
        self.assertIsInstance(e, Exception)
        self.assertEqual((e.code, e.category, e.reason, e.offset, e.field), ('FORMAT_CHECKSUM_MISMATCH', 'ChecksumMismatch', 'checksum', 30, 'checksum'))
        self.assertEqual(e.to_dict()['code'], 'FORMAT_CHECKSUM_MISMATCH')
        with self.assertRaises(lf.FormatError) as cm:
            lf.decode(b'LLMCP35')
        self.assertEqual((cm.exception.code, cm.exception.offset), ('FORMAT_TRUNCATED', 0))
        with self.assertRaises(TypeError):
            lf.decode('not bytes')
        with self.assertRaises(lf.FormatError) as cm:
            lf.load(os.path.join(HERE, 'no-such-file.llmcp'))
        self.assertEqual(cm.exception.code, 'FORMAT_IO')
        self.assertEqual(set(lf.FORMAT_ERROR_CODES), set(lf.FORMAT_ERROR_CATEGORIES))


class EncoderTest(unittest.TestCase):
    def setUp(self):
        self.golden = read(GOLDEN_PATH)

    def fresh(self):
        return lf.decode(self.golden, tensors='list')

    def test_encoder_sorts_moments_and_group_lists(self):
        c = self.fresh()
        c.optimizer.moments.reverse()
        c.optimizer.groups.decay.reverse()
        c.optimizer.groups.no_decay.reverse()
        self.assertEqual(lf.encode(c), self.golden)

    def test_encoder_accepts_every_tensor_kind(self):
        c = self.fresh()
        if np is not None:
            c.parameters[0].data = np.asarray(c.parameters[0].data)
        if torch is not None:
            c.parameters[1].data = torch.tensor(c.parameters[1].data, dtype=torch.float64)
        c.parameters[2].data = array('d', lf._flatten(c.parameters[2].data))
        c.parameters[3].data = tuple(lf._flatten(c.parameters[3].data))
        self.assertEqual(lf.encode(c), self.golden)

    def test_encoder_rejects_invalid_states_with_the_decoders_code(self):
        c = self.fresh()
        c.optimizer.config.learning_rate = 0.0
        with self.assertRaises(lf.FormatError) as cm:
            lf.encode(c)
        self.assertEqual((cm.exception.code, cm.exception.field, cm.exception.offset), ('FORMAT_ADAMW_CONFIG', 'learningRate', 131))
        c = self.fresh()
        c.parameters[3].data[0][1] = math.nan
        with self.assertRaises(lf.FormatError) as cm:
            lf.encode(c)
        self.assertEqual((cm.exception.code, cm.exception.reason), ('FORMAT_INVALID_PARAMETER', 'non-finite-parameter'))
        c = self.fresh()
        c.optimizer.groups.decay.append('\ud800')
        with self.assertRaises(lf.FormatError) as cm:
            lf.encode(c)
        self.assertEqual(cm.exception.code, 'FORMAT_INVALID_UTF8')
        c = self.fresh()
        c.selected_step = 9
        with self.assertRaises(lf.FormatError) as cm:
            lf.encode(c)
        self.assertEqual(cm.exception.code, 'FORMAT_STEP_MISMATCH')
        c = self.fresh()
        c.selected_step = 2 ** 64
        with self.assertRaises(lf.FormatError) as cm:
            lf.encode(c)
        self.assertEqual(cm.exception.code, 'FORMAT_SIZE_OVERFLOW')
        c = self.fresh()
        c.selected_step = -1
        with self.assertRaises(ValueError):
            lf.encode(c)

    def test_save_writes_the_canonical_bytes_atomically(self):
        import tempfile  # noqa: PLC0415

        with tempfile.TemporaryDirectory() as d:
            target = os.path.join(d, 'state.llmcp')
            lf.save(self.fresh(), target)
            lf.save(self.fresh(), target)
            self.assertEqual(read(target), self.golden)
            self.assertEqual(os.listdir(d), ['state.llmcp'])

    def test_negative_zero_survives_a_round_trip(self):
        c = self.fresh()
        c.parameters[0].data[0][0] = -0.0
        data = lf.encode(c)
        again = lf.decode(data, tensors='list')
        self.assertEqual(math.copysign(1.0, again.parameters[0].data[0][0]), -1.0)
        self.assertEqual(lf.encode(again), data)


def llmcp_adamw_step(w, m, v, g, lr, beta1, beta2, eps, wd, b1pow, b2pow):
    """One llmcp AdamW update of one element (packages/optim/src/adamw.ts), in f64."""
    c1 = 1.0 - b1pow * beta1
    c2 = 1.0 - b2pow * beta2
    m2 = beta1 * m + (1.0 - beta1) * g
    v2 = beta2 * v + (1.0 - beta2) * (g * g)
    direction = (m2 / c1) / (math.sqrt(v2 / c2) + eps)
    return w - lr * direction - (lr * wd) * w, m2, v2


def close(a, b, rel=1e-12):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


@unittest.skipIf(torch is None, 'torch is not installed: the torch.optim.AdamW mapping is not checked')
class TorchAdamWTest(unittest.TestCase):
    def test_state_dict_loads_into_torch_adamw_and_continues_like_llmcp(self):
        golden = read(GOLDEN_PATH)
        ckpt = lf.decode(golden, tensors='torch')
        params = {p.name: torch.nn.Parameter(p.data.clone()) for p in ckpt.parameters}
        opt = lf.torch_adamw(ckpt, params)
        sd = opt.state_dict()
        self.assertEqual(len(sd['state']), 11)
        self.assertEqual([g['weight_decay'] for g in sd['param_groups']], [0.01, 0.0])
        self.assertEqual([g['llmcp_group'] for g in sd['param_groups']], ['decay', 'no-decay'])
        self.assertEqual(sd['param_groups'][0]['param_names'], [n for n in params if n in ckpt.optimizer.groups.decay])
        self.assertEqual(float(sd['state'][0]['step']), 8.0)

        # Back: torch's state_dict -> llmcp AdamWState -> the identical 6330 bytes.
        shapes = {p.name: p.shape for p in ckpt.parameters}
        back = lf.adamw_state_from_torch(sd, shapes=shapes)
        self.assertEqual((back.beta1_power, back.beta2_power), (ckpt.optimizer.beta1_power, ckpt.optimizer.beta2_power))
        self.assertEqual(lf.encode(lf.Checkpoint(ckpt.tokenizer, ckpt.decoder, ckpt.parameters, back, ckpt.selected_step, ckpt.sampling_rng_state)), golden)

        # One more step in torch equals llmcp's update rule to 1e-12 relative.
        cfg = ckpt.optimizer.config
        decay = set(ckpt.optimizer.groups.decay)
        grads = {}
        for k, (name, p) in enumerate(params.items()):
            n = p.numel()
            grads[name] = torch.tensor([math.sin(0.37 * i + k) * 0.1 for i in range(n)], dtype=torch.float64).reshape(p.shape)
            p.grad = grads[name].clone()
        opt.step()
        moments = {m.name: m for m in ckpt.optimizer.moments}
        worst = 0.0
        for index, (name, p) in enumerate(params.items()):
            w0 = ckpt.parameter(name).data.reshape(-1).tolist()
            m0 = moments[name].first.reshape(-1).tolist()
            v0 = moments[name].second.reshape(-1).tolist()
            g = grads[name].reshape(-1).tolist()
            wd = cfg.weight_decay if name in decay else 0.0
            state = opt.state[p]
            got_w, got_m, got_v = p.detach().reshape(-1).tolist(), state['exp_avg'].reshape(-1).tolist(), state['exp_avg_sq'].reshape(-1).tolist()
            self.assertEqual(float(state['step']), 9.0)
            for i in range(len(w0)):
                w, m, v = llmcp_adamw_step(w0[i], m0[i], v0[i], g[i], cfg.learning_rate, cfg.beta1, cfg.beta2, cfg.epsilon, wd, ckpt.optimizer.beta1_power, ckpt.optimizer.beta2_power)
                for a, b in ((w, got_w[i]), (m, got_m[i]), (v, got_v[i])):
                    self.assertTrue(close(a, b), f'{name}[{i}]: llmcp {a!r}, torch {b!r}')
                    worst = max(worst, abs(a - b) / max(abs(a), abs(b), 1e-300))
        RESULTS.append({'id': 'torch-adamw-continuation', 'worstRelative': worst})

    def test_step_zero_maps_to_an_empty_state(self):
        data = read(os.path.join(FIXTURES, 'malformed', 'step-zero.llmcp'))
        ckpt = lf.decode(data, tensors='torch')
        sd = lf.torch_adamw_state_dict(ckpt)
        self.assertEqual(sd['state'], {})
        back = lf.adamw_state_from_torch(sd)
        self.assertEqual((back.step, back.beta1_power, back.moments), (0, 1.0, []))


class CliTest(unittest.TestCase):
    def run_cli(self, *args):
        return subprocess.run([sys.executable, '-m', 'llmcp_format', *args], cwd=HERE, capture_output=True, text=True, check=False)

    def test_inspect_reports_a_valid_file_and_an_invalid_one(self):
        r = self.run_cli('inspect', GOLDEN_PATH, '--json')
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        self.assertEqual(out['checkpoint']['checksum'], 'fnv1a64:2b8b6097eaed6a91')
        r = self.run_cli('inspect', os.path.join(FIXTURES, 'malformed', 'heads-3.llmcp'))
        self.assertEqual(r.returncode, 1)
        self.assertIn('FORMAT_MODEL', r.stdout)
        r = self.run_cli('verify', GOLDEN_PATH)
        self.assertEqual(r.returncode, 0)
        self.assertIn('ok fnv1a64:2b8b6097eaed6a91', r.stdout)


class JobTest(unittest.TestCase):
    def test_job_files(self):
        if os.environ.get('LLMCP_PY_JOB') is None:
            self.skipTest('no job: --job is given by tools/python-reader.test.ts')
        with open(os.environ['LLMCP_PY_JOB'], encoding='utf-8') as f:
            job = json.load(f)
        bundle = read(job['bundle'])
        started = time.time()
        failures = []
        for entry in job['entries']:
            data = bundle[entry['offset']:entry['offset'] + entry['length']]
            try:
                got = outcome(data)
            except Exception as e:  # a bug, not a FormatError: reported as a mismatch on the vitest side
                got = {'ok': False, 'error': {'code': 'PYTHON_EXCEPTION', 'category': type(e).__name__, 'reason': str(e)}}
                failures.append(entry['id'])
            got['id'] = entry['id']
            RESULTS.append(got)
            if got['ok'] and not got['reencodeIdentical']:
                failures.append(entry['id'])
        RESULTS.append({'id': 'job-seconds', 'seconds': time.time() - started})
        self.assertEqual(failures, [], 'files that raised a non-FormatError or did not re-encode identically')
        if np is None:
            return
        # The same entries (all but three in four mutations) decoded without numpy give the same outcomes.
        by_id = {r['id']: r for r in RESULTS if 'ok' in r}
        subset = [e for k, e in enumerate(job['entries']) if not e['id'].startswith('mutation:') or k % 4 == 0]
        script = (
            'import sys, json; sys.modules["numpy"] = None; sys.modules["torch"] = None; sys.path.insert(0, sys.argv[1]); '
            'import test_llmcp_format as t; job = json.load(open(sys.argv[2])); bundle = t.read(job["bundle"]); '
            'ids = set(json.load(open(sys.argv[3]))); '
            'print(json.dumps({e["id"]: t.outcome(bundle[e["offset"]:e["offset"] + e["length"]]) for e in job["entries"] if e["id"] in ids}))'
        )
        ids_path = os.environ['LLMCP_PY_JOB'] + '.no-numpy-ids.json'
        with open(ids_path, 'w', encoding='utf-8') as f:
            json.dump([e['id'] for e in subset], f)
        r = subprocess.run([sys.executable, '-c', script, HERE, os.environ['LLMCP_PY_JOB'], ids_path], capture_output=True, text=True, check=False)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        without = json.loads(r.stdout)
        differ = [i for i, got in without.items() if {**got, 'id': i} != by_id[i]]
        RESULTS.append({'id': 'no-numpy', 'compared': len(without), 'differ': differ[:10]})
        self.assertEqual(differ, [], 'outcomes that differ without numpy')


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--job', help='job JSON written by tools/python-reader.test.ts')
    parser.add_argument('--out', help='write the structured result here')
    args = parser.parse_args()
    if args.job:
        os.environ['LLMCP_PY_JOB'] = args.job
    started = time.time()
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    result = unittest.TextTestRunner(stream=sys.stderr, verbosity=2).run(suite)
    summary = {
        'python': sys.version.split()[0],
        'numpy': np.__version__ if np is not None else None,
        'torch': torch.__version__ if torch is not None else None,
        'seconds': time.time() - started,
        'unittest': {
            'testsRun': result.testsRun,
            'failures': [[str(t), tb] for t, tb in result.failures],
            'errors': [[str(t), tb] for t, tb in result.errors],
            'skipped': [[str(t), why] for t, why in result.skipped],
            'successful': result.wasSuccessful(),
        },
        'results': RESULTS,
    }
    if args.out:
        with open(args.out, 'w', encoding='utf-8') as f:
            json.dump(summary, f)
    return 0 if result.wasSuccessful() else 1


if __name__ == '__main__':
    sys.exit(main())
