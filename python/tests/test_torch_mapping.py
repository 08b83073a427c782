"""The torch.optim.AdamW mapping (skipped, saying so, without torch)."""

from __future__ import annotations

import math
import os
import unittest

from support import FIXTURES, GOLDEN_PATH, RESULTS, read, torch

import llmcp


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
        ckpt = llmcp.decode(golden, tensors='torch')
        params = {p.name: torch.nn.Parameter(p.data.clone()) for p in ckpt.parameters}
        opt = llmcp.torch_adamw(ckpt, params)
        sd = opt.state_dict()
        self.assertEqual(len(sd['state']), 11)
        self.assertEqual([g['weight_decay'] for g in sd['param_groups']], [0.01, 0.0])
        self.assertEqual([g['llmcp_group'] for g in sd['param_groups']], ['decay', 'no-decay'])
        self.assertEqual(sd['param_groups'][0]['param_names'], [n for n in params if n in ckpt.optimizer.groups.decay])
        self.assertEqual(float(sd['state'][0]['step']), 8.0)

        # Back: torch's state_dict -> llmcp AdamWState -> the identical 6330 bytes.
        shapes = {p.name: p.shape for p in ckpt.parameters}
        back = llmcp.adamw_state_from_torch(sd, shapes=shapes)
        self.assertEqual((back.beta1_power, back.beta2_power), (ckpt.optimizer.beta1_power, ckpt.optimizer.beta2_power))
        self.assertEqual(llmcp.encode(llmcp.Checkpoint(ckpt.tokenizer, ckpt.decoder, ckpt.parameters, back, ckpt.selected_step, ckpt.sampling_rng_state)), golden)

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
        ckpt = llmcp.decode(data, tensors='torch')
        sd = llmcp.torch_adamw_state_dict(ckpt)
        self.assertEqual(sd['state'], {})
        back = llmcp.adamw_state_from_torch(sd)
        self.assertEqual((back.step, back.beta1_power, back.moments), (0, 1.0, []))


if __name__ == '__main__':
    unittest.main()
