"""The AdamW state of a checkpoint as ``torch.optim.AdamW`` holds it, and back.

torch is imported only when a function here needs torch tensors: with
``tensors='numpy'``/``'array'``/``'list'`` the mapping works without it.
See python/README.md ("How the AdamW state maps to torch.optim.AdamW") for
what maps exactly and what does not.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from .checkpoint import AdamWConfig, AdamWState, Checkpoint, Moment, ParameterGroups
from .tensors import f64_bytes, import_torch, resolve_kind, tensor_from_bytes

__all__ = ['torch_param_groups', 'torch_adamw_state_dict', 'torch_adamw', 'adamw_state_from_torch']


def _group_of(checkpoint: Checkpoint) -> List[Tuple[str, List[str], float]]:
    """(llmcp group label, parameter names in model order, weight decay) for each torch param group."""
    names = [p.name for p in checkpoint.parameters]
    wd = checkpoint.optimizer.config.weight_decay
    groups = checkpoint.optimizer.groups
    if groups is None:
        return [('all', names, wd)]
    decay = set(groups.decay)
    # SPEC §4: with groups present, only names in the decay list are decayed (at step 0 the lists
    # need not cover the model; unlisted parameters are then not decayed, unknown names have no tensor).
    return [('decay', [n for n in names if n in decay], wd), ('no-decay', [n for n in names if n not in decay], 0.0)]


def _torch_scalar_dtype(torch: Any) -> Any:
    return torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32


def torch_param_groups(checkpoint: Checkpoint, parameters: Union[Dict[str, Any], Sequence[Any], None] = None) -> List[Dict[str, Any]]:
    """Parameter groups for ``torch.optim.AdamW(groups)`` matching the checkpoint's AdamW configuration.

    One group (every parameter decays) when the file has no groups, else a ``decay`` group and a
    ``no-decay`` group (``weight_decay=0.0``), parameters in model order within each. ``parameters``
    maps names to tensors (or lists them in model order); when omitted, each group lists names instead
    (``params`` is then a list of names, for :func:`torch_adamw_state_dict`'s index order).
    Each group carries ``param_names`` and ``llmcp_group`` (kept by torch, ignored by its update).
    """
    c = checkpoint.optimizer.config
    if parameters is not None and not isinstance(parameters, dict):
        parameters = dict(zip((p.name for p in checkpoint.parameters), parameters))
    out = []
    for label, names, wd in _group_of(checkpoint):
        params = [parameters[n] for n in names] if parameters is not None else list(names)
        out.append({
            'params': params,
            'lr': c.learning_rate,
            'betas': (c.beta1, c.beta2),
            'eps': c.epsilon,
            'weight_decay': wd,
            'amsgrad': False,
            'maximize': False,
            'param_names': list(names),
            'llmcp_group': label,
        })
    return out


def torch_adamw_state_dict(checkpoint: Checkpoint, *, tensors: str = 'torch') -> Dict[str, Any]:
    """The checkpoint's AdamW state as a ``torch.optim.AdamW.state_dict()``.

    ``state`` maps the index of each parameter (numbered across :func:`torch_param_groups` in order)
    to ``{'step', 'exp_avg', 'exp_avg_sq'}``; at step 0 it is empty, as in a fresh torch optimizer.
    ``param_groups`` holds ``lr`` (the stored *base* rate), ``betas``, ``eps``, ``weight_decay`` and
    torch's other defaults. With ``tensors='torch'`` (default; needs torch) moments are float64 tensors
    and ``step`` a scalar tensor of torch's scalar dtype (float32 unless the default dtype is float64);
    with ``'numpy'``/``'array'``/``'list'`` plain values are used (``step`` an int).
    The stored beta powers are not part of torch's state: torch recomputes ``beta ** step``.
    """
    kind = resolve_kind(tensors)
    torch = import_torch() if kind == 'torch' else None
    groups = torch_param_groups(checkpoint)
    defaults: Dict[str, Any] = {}
    if torch is not None:
        probe = torch.optim.AdamW([torch.zeros(1, requires_grad=True)])
        defaults = {k: v for k, v in probe.defaults.items()}
    index = 0
    by_name = {m.name: m for m in checkpoint.optimizer.moments}
    state: Dict[int, Dict[str, Any]] = {}
    param_groups = []
    for g in groups:
        ids = []
        for name in g['params']:
            m = by_name.get(name)
            if m is not None:
                entry: Dict[str, Any] = {
                    'step': torch.tensor(float(checkpoint.optimizer.step), dtype=_torch_scalar_dtype(torch)) if torch is not None else checkpoint.optimizer.step,
                    'exp_avg': _convert_tensor(m.first, m.shape, kind),
                    'exp_avg_sq': _convert_tensor(m.second, m.shape, kind),
                }
                state[index] = entry
            ids.append(index)
            index += 1
        group = dict(defaults)
        group.update({k: v for k, v in g.items() if k != 'params'})
        group['params'] = ids
        param_groups.append(group)
    return {'state': state, 'param_groups': param_groups}


def _convert_tensor(data: Any, shape: Tuple[int, ...], kind: str) -> Any:
    return tensor_from_bytes(f64_bytes(data, 'tensor'), tuple(shape), kind)


def torch_adamw(checkpoint: Checkpoint, parameters: Union[Dict[str, Any], Sequence[Any]]) -> Any:
    """A ``torch.optim.AdamW`` over ``parameters`` (name → tensor, or model order) with the checkpoint's state loaded."""
    torch = import_torch()
    opt = torch.optim.AdamW(torch_param_groups(checkpoint, parameters))
    opt.load_state_dict(torch_adamw_state_dict(checkpoint, tensors='torch'))
    return opt


def _repeated_power(beta: float, step: int) -> float:
    """beta^step by repeated multiplication from 1.0, as llmcp's AdamW keeps it (SPEC §6.4)."""
    p = 1.0
    for _ in range(step):
        p *= beta
        if p == 0.0:
            break
    return p


def adamw_state_from_torch(
    state_dict: Dict[str, Any],
    names: Optional[Sequence[str]] = None,
    *,
    shapes: Optional[Dict[str, Sequence[int]]] = None,
    learning_rate: Optional[float] = None,
    groups: Union[str, None, ParameterGroups] = 'auto',
    beta_powers: Optional[Tuple[float, float]] = None,
) -> AdamWState:
    """An llmcp :class:`AdamWState` from a ``torch.optim.AdamW.state_dict()`` (the inverse of :func:`torch_adamw_state_dict`).

    :param names: parameter name of each torch index (default: the groups' ``param_names``).
    :param shapes: name → shape, when the moment tensors are not shaped.
    :param learning_rate: the base rate to store (default: the first group's ``lr``, which a scheduler may have changed).
    :param groups: ``'auto'`` uses the groups' ``llmcp_group`` markers if present, else no groups when every group
        has the same weight decay, else decay / no-decay by ``weight_decay == 0``; or pass groups (or None) explicitly.
    :param beta_powers: the running powers; default ``beta ** step`` by repeated multiplication from 1.0 (exactly what
        llmcp stores; for steps above 10^7 ``math.pow`` is used instead).
    """
    pgs = state_dict['param_groups']
    if names is None:
        names = [n for g in pgs for n in g.get('param_names', ())]
        if len(names) != sum(len(g['params']) for g in pgs):
            raise ValueError('adamw_state_from_torch: pass names (the param groups carry no param_names)')
    index_name: Dict[int, str] = {}
    k = 0
    for g in pgs:
        for i in g['params']:
            index_name[i] = names[k]
            k += 1
    decay_group = next((g for g in pgs if g.get('weight_decay', 0) != 0), pgs[0])
    beta1, beta2 = (float(b) for b in decay_group['betas'])
    config = AdamWConfig(float(learning_rate if learning_rate is not None else decay_group['lr']), beta1, beta2, float(decay_group['eps']), float(decay_group['weight_decay']))
    if groups == 'auto':
        labels = [g.get('llmcp_group') for g in pgs]
        if all(label == 'all' for label in labels):
            groups = None
        elif all(label in ('decay', 'no-decay') for label in labels):
            groups = ParameterGroups(
                [index_name[i] for g in pgs if g['llmcp_group'] == 'decay' for i in g['params']],
                [index_name[i] for g in pgs if g['llmcp_group'] == 'no-decay' for i in g['params']],
            )
        elif len({float(g.get('weight_decay', 0)) for g in pgs}) == 1:
            groups = None
        else:
            groups = ParameterGroups(
                [index_name[i] for g in pgs if g.get('weight_decay', 0) != 0 for i in g['params']],
                [index_name[i] for g in pgs if g.get('weight_decay', 0) == 0 for i in g['params']],
            )
    steps = {int(float(s['step'])) for s in state_dict['state'].values()}
    if len(steps) > 1:
        raise ValueError(f'adamw_state_from_torch: parameters are at different steps {sorted(steps)}; llmcp stores one step')
    step = steps.pop() if steps else 0
    moments = []
    for i, s in state_dict['state'].items():
        name = index_name[i]
        first, second = s['exp_avg'], s['exp_avg_sq']
        shape = tuple(shapes[name]) if shapes is not None and name in shapes else tuple(int(d) for d in getattr(first, 'shape', (len(first),)))
        moments.append(Moment(name, shape, first, second))
    if beta_powers is None:
        beta_powers = (_repeated_power(beta1, step), _repeated_power(beta2, step)) if step <= 10_000_000 else (math.pow(beta1, step), math.pow(beta2, step))
    return AdamWState(config, groups, step, beta_powers[0], beta_powers[1], moments)

