"""The torch engine driven from Python (llmcp.engine.client): no Node needed.

Run: /usr/bin/python3 python/tests/run.py --only test_engine (tools/python-engine.test.ts does, in pnpm test).
Skips without PyTorch. The trainer-side tests are packages/trainer/test/torch-engine.test.ts.
"""
import math
import random
import struct
import unittest

from support import torch

TORCH = None if torch is not None else "PyTorch is not importable"

from llmcp.checkpoint import DecoderConfig  # noqa: E402
from llmcp.engine.client import EngineError, LocalEngine  # noqa: E402
from llmcp.rules import expected_parameter_shapes  # noqa: E402

DECODER = dict(vocabularySize=40, modelWidth=8, heads=2, feedForwardWidth=16, layers=2, maxPositions=8, ropeBase=10000.0, rmsEpsilon=1e-6)
OPTIMIZER = dict(beta1=0.9, beta2=0.999, epsilon=1e-8, weightDecay=0.01, groups="gain-no-decay", clipNorm=1.0)
ROWS, COLUMNS = 6, 8


def initial_parameters(seed=1):
    rng = random.Random(seed)
    values = []
    config = DecoderConfig(vocabulary_size=40, model_width=8, heads=2, feed_forward_width=16, layers=2, max_positions=8, rope_base=10000.0, rms_epsilon=1e-6)
    for name, shape in expected_parameter_shapes(config):
        n = math.prod(shape)
        values += [1.0] * n if name.endswith(".gain") else [rng.uniform(-0.4, 0.4) for _ in range(n)]
    return values


def batches(count, seed=2):
    rng = random.Random(seed)
    for _ in range(count):
        ids = [rng.randrange(DECODER["vocabularySize"]) for _ in range(ROWS * COLUMNS + 1)]
        yield ids[:-1], ids[1:]


def train(world_size, steps, start=None):
    with LocalEngine(world_size=world_size) as engine:
        if start is None:
            engine.init(DECODER, OPTIMIZER, initial_parameters())
        else:
            step, powers, parameters, first, second = start
            engine.init(DECODER, OPTIMIZER, parameters, moments=(first, second) if first is not None else None, step=step, powers=powers)
        losses = []
        done = 0 if start is None else start[0]
        for i, (inputs, targets) in enumerate(batches(steps)):
            if i < done:
                continue
            losses.append(engine.step(inputs, targets, ROWS, COLUMNS, 0.01)[0])
        return losses, engine.state()


@unittest.skipIf(TORCH is not None, TORCH)
class EngineTest(unittest.TestCase):
    def test_one_and_two_ranks_agree_to_rounding(self):
        one, _ = train(1, 6)
        two, _ = train(2, 6)
        for a, b in zip(one, two):
            self.assertLess(abs(a - b) / abs(a), 1e-12)

    def test_a_run_resumed_from_its_handed_over_state_equals_the_uninterrupted_run_bit_for_bit(self):
        for world_size in (2,):
            whole_losses, whole_state = train(world_size, 8)
            _, middle = train(world_size, 3)
            rest_losses, resumed_state = train(world_size, 8, start=middle)
            self.assertEqual(rest_losses, whole_losses[3:])
            self.assertEqual(resumed_state, whole_state)

    def test_evaluate_is_the_loss_a_step_reports_before_its_update(self):
        with LocalEngine() as engine:
            engine.init(DECODER, OPTIMIZER, initial_parameters())
            inputs, targets = next(batches(1))
            before = engine.evaluate(inputs, targets, ROWS, COLUMNS)
            loss, _, _ = engine.step(inputs, targets, ROWS, COLUMNS, 0.01)
            self.assertEqual(before, loss)

    def test_a_non_finite_step_is_refused_and_changes_nothing(self):
        with LocalEngine() as engine:
            engine.init(DECODER, dict(OPTIMIZER, clipNorm=None), initial_parameters())
            (inputs, targets), (inputs2, targets2) = batches(2)
            # A huge rate makes the weights huge (still finite); the next forward pass overflows.
            engine.step(inputs, targets, ROWS, COLUMNS, 1e300)
            before = engine.state()
            with self.assertRaises(EngineError) as caught:
                engine.step(inputs2, targets2, ROWS, COLUMNS, 1e300)
            self.assertEqual(caught.exception.code, "ENGINE_NON_FINITE")
            self.assertEqual(engine.state(), before)

    def test_another_protocol_version_is_refused(self):
        engine = LocalEngine()
        try:
            with self.assertRaises(EngineError) as caught:
                engine.init(DECODER, OPTIMIZER, initial_parameters(), protocol="llmcp-engine/0")
            self.assertEqual(caught.exception.code, "ENGINE_PROTOCOL")
        finally:
            engine.close()

    def test_f32_state_is_exact_in_f64(self):
        with LocalEngine() as engine:
            engine.init(DECODER, OPTIMIZER, initial_parameters(), dtype="f32")
            inputs, targets = next(batches(1))
            engine.step(inputs, targets, ROWS, COLUMNS, 0.01)
            _, _, parameters, first, second = engine.state()
            for value in parameters + first + second:
                self.assertEqual(struct.unpack("<f", struct.pack("<f", value))[0], value)


if __name__ == "__main__":
    unittest.main()
