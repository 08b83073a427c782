"""The reader and the writer on the golden file, the malformed corpus and hand-made states (unittest; numpy optional)."""

from __future__ import annotations

import json
import math
import os
import struct
import subprocess
import sys
import unittest
from array import array

from oracle import outcome
from support import FIXTURES, GOLDEN_PATH, TESTS_DIR, np, read, torch

import llmcp
import llmcp.tensors


class GoldenTest(unittest.TestCase):
    def test_golden_decodes_and_reencodes_to_the_identical_6330_bytes(self):
        data = read(GOLDEN_PATH)
        self.assertEqual(len(data), 6330)
        for kind in ['array', 'list'] + (['numpy'] if np is not None else []) + (['torch'] if torch is not None else []):
            ckpt = llmcp.decode(data, tensors=kind)
            self.assertEqual(llmcp.encode(ckpt), data, kind)
        ckpt = llmcp.decode(data)
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
        ckpt = llmcp.decode(read(GOLDEN_PATH))
        bits = lambda v: '0x' + struct.pack('>d', v).hex()  # noqa: E731
        self.assertEqual(bits(ckpt.decoder.rope_base), exp['decoder']['ropeBaseBits'])
        self.assertEqual(bits(ckpt.optimizer.config.weight_decay), exp['optimizer']['weightDecayBits'])
        self.assertEqual(ckpt.optimizer.groups.decay, exp['optimizer']['groups']['decay'])
        self.assertEqual(ckpt.optimizer.groups.no_decay, exp['optimizer']['groups']['noDecay'])
        self.assertEqual([m.name for m in ckpt.optimizer.moments], [m['name'] for m in exp['optimizer']['moments']])
        for m, e in zip(ckpt.optimizer.moments, exp['optimizer']['moments']):
            self.assertEqual(llmcp.checksum_label(llmcp.fnv1a64(llmcp.tensors.f64_bytes(m.first, 'first'))), e['first'])
            self.assertEqual(llmcp.checksum_label(llmcp.fnv1a64(llmcp.tensors.f64_bytes(m.second, 'second'))), e['second'])


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
            'import support as t, oracle, llmcp, llmcp.tensors; assert llmcp.tensors.np is None; '
            'from array import array; '
            'c = llmcp.decode(t.read(t.GOLDEN_PATH)); assert isinstance(c.parameters[0].data, array); '
            'import os; m = json.loads(t.read(os.path.join(t.FIXTURES, "manifest.json"))); '
            'print(json.dumps([oracle.outcome(t.read(os.path.join(t.FIXTURES, x["file"]))) for x in m["cases"]]))'
        )
        r = subprocess.run([sys.executable, '-c', script, TESTS_DIR], capture_output=True, text=True, check=False)
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
                ckpt = llmcp.decode(data)
                self.assertEqual((ckpt.decoder.feed_forward_width, ckpt.decoder.max_positions), (ffn, positions))
                self.assertEqual(llmcp.encode(ckpt), data)


class ErrorTest(unittest.TestCase):
    def test_errors_carry_code_category_offset_and_field(self):
        golden = bytearray(read(GOLDEN_PATH))
        golden[-1] ^= 1
        with self.assertRaises(llmcp.FormatError) as cm:
            llmcp.decode(bytes(golden))
        e = cm.exception
        self.assertIsInstance(e, Exception)
        self.assertEqual((e.code, e.category, e.reason, e.offset, e.field), ('FORMAT_CHECKSUM_MISMATCH', 'ChecksumMismatch', 'checksum', 30, 'checksum'))
        self.assertEqual(e.to_dict()['code'], 'FORMAT_CHECKSUM_MISMATCH')
        with self.assertRaises(llmcp.FormatError) as cm:
            llmcp.decode(b'LLMCP35')
        self.assertEqual((cm.exception.code, cm.exception.offset), ('FORMAT_TRUNCATED', 0))
        with self.assertRaises(TypeError):
            llmcp.decode('not bytes')
        with self.assertRaises(llmcp.FormatError) as cm:
            llmcp.load(os.path.join(TESTS_DIR, 'no-such-file.llmcp'))
        self.assertEqual(cm.exception.code, 'FORMAT_IO')
        self.assertEqual(set(llmcp.FORMAT_ERROR_CODES), set(llmcp.FORMAT_ERROR_CATEGORIES))


class EncoderTest(unittest.TestCase):
    def setUp(self):
        self.golden = read(GOLDEN_PATH)

    def fresh(self):
        return llmcp.decode(self.golden, tensors='list')

    def test_encoder_sorts_moments_and_group_lists(self):
        c = self.fresh()
        c.optimizer.moments.reverse()
        c.optimizer.groups.decay.reverse()
        c.optimizer.groups.no_decay.reverse()
        self.assertEqual(llmcp.encode(c), self.golden)

    def test_encoder_accepts_every_tensor_kind(self):
        c = self.fresh()
        if np is not None:
            c.parameters[0].data = np.asarray(c.parameters[0].data)
        if torch is not None:
            c.parameters[1].data = torch.tensor(c.parameters[1].data, dtype=torch.float64)
        c.parameters[2].data = array('d', llmcp.tensors.flatten(c.parameters[2].data))
        c.parameters[3].data = tuple(llmcp.tensors.flatten(c.parameters[3].data))
        self.assertEqual(llmcp.encode(c), self.golden)

    def test_encoder_rejects_invalid_states_with_the_decoders_code(self):
        c = self.fresh()
        c.optimizer.config.learning_rate = 0.0
        with self.assertRaises(llmcp.FormatError) as cm:
            llmcp.encode(c)
        self.assertEqual((cm.exception.code, cm.exception.field, cm.exception.offset), ('FORMAT_ADAMW_CONFIG', 'learningRate', 131))
        c = self.fresh()
        c.parameters[3].data[0][1] = math.nan
        with self.assertRaises(llmcp.FormatError) as cm:
            llmcp.encode(c)
        self.assertEqual((cm.exception.code, cm.exception.reason), ('FORMAT_INVALID_PARAMETER', 'non-finite-parameter'))
        c = self.fresh()
        c.optimizer.groups.decay.append('\ud800')
        with self.assertRaises(llmcp.FormatError) as cm:
            llmcp.encode(c)
        self.assertEqual(cm.exception.code, 'FORMAT_INVALID_UTF8')
        c = self.fresh()
        c.selected_step = 9
        with self.assertRaises(llmcp.FormatError) as cm:
            llmcp.encode(c)
        self.assertEqual(cm.exception.code, 'FORMAT_STEP_MISMATCH')
        c = self.fresh()
        c.selected_step = 2 ** 64
        with self.assertRaises(llmcp.FormatError) as cm:
            llmcp.encode(c)
        self.assertEqual(cm.exception.code, 'FORMAT_SIZE_OVERFLOW')
        c = self.fresh()
        c.selected_step = -1
        with self.assertRaises(ValueError):
            llmcp.encode(c)

    def test_save_writes_the_canonical_bytes_atomically(self):
        import tempfile  # noqa: PLC0415

        with tempfile.TemporaryDirectory() as d:
            target = os.path.join(d, 'state.llmcp')
            llmcp.save(self.fresh(), target)
            llmcp.save(self.fresh(), target)
            self.assertEqual(read(target), self.golden)
            self.assertEqual(os.listdir(d), ['state.llmcp'])

    def test_negative_zero_survives_a_round_trip(self):
        c = self.fresh()
        c.parameters[0].data[0][0] = -0.0
        data = llmcp.encode(c)
        again = llmcp.decode(data, tensors='list')
        self.assertEqual(math.copysign(1.0, again.parameters[0].data[0][0]), -1.0)
        self.assertEqual(llmcp.encode(again), data)


if __name__ == '__main__':
    unittest.main()
