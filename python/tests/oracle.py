"""The Python reader as an oracle: every file of a bundle decoded, its outcome recorded for a TypeScript caller to compare.

A job (JSON) names a bundle file and its entries (``id``, ``offset``,
``length``); each entry's outcome is what ``@llmcp/format`` must agree
with: the verdict, and for a rejected file every field of
``formatErrorData`` but the prose message (code, category, reason, offset,
field, record, element, ``expected`` and ``found``); for an accepted file
the checksum, the step and whether re-encoding gave the same bytes. An
exception other than :class:`llmcp.FormatError` is recorded as the code
``PYTHON_EXCEPTION`` (a bug the caller reports as a disagreement).

Used by tools/python-reader.test.ts (through test_job.py) and by the
reliability campaign (tools/reliability/src/python-oracle.ts)::

    python3 python/tests/oracle.py --job job.json --out outcomes.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from support import read

import llmcp


def outcome(data, tensors='auto'):
    """The outcome of decoding ``data``: ``{'ok': False, 'error': …}`` (formatErrorData's keys, no message) or ``{'ok': True, …}``."""
    try:
        ckpt = llmcp.decode(data, tensors=tensors)
    except llmcp.FormatError as e:
        d = e.to_dict()
        d.pop('message')
        return {'ok': False, 'error': d}
    again = llmcp.encode(ckpt)
    return {'ok': True, 'reencodeIdentical': again == data, 'checksum': ckpt.layout.checksum_label, 'step': str(ckpt.selected_step)}


def job_outcomes(job):
    """The outcome of every entry of ``job``, in order, each with its ``id``."""
    bundle = read(job['bundle'])
    out = []
    for entry in job['entries']:
        data = bundle[entry['offset']:entry['offset'] + entry['length']]
        try:
            got = outcome(data)
        except Exception as e:  # noqa: BLE001 - a bug, not a FormatError: the caller reports it as a disagreement
            got = {'ok': False, 'error': {'code': 'PYTHON_EXCEPTION', 'category': type(e).__name__, 'reason': str(e)[:500]}}
        got['id'] = entry['id']
        out.append(got)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description='Decode every file of a job with the Python package and write the outcomes.')
    parser.add_argument('--job', required=True, help='job JSON: {"bundle": path, "entries": [{"id", "offset", "length"}, …]}')
    parser.add_argument('--out', required=True, help='where to write {"python", "seconds", "outcomes"}')
    args = parser.parse_args(argv)
    with open(args.job, encoding='utf-8') as f:
        job = json.load(f)
    started = time.time()
    outcomes = job_outcomes(job)
    with open(args.out, 'w', encoding='utf-8') as f:
        json.dump({'python': sys.version.split()[0], 'seconds': time.time() - started, 'outcomes': outcomes}, f)
    return 0


if __name__ == '__main__':
    sys.exit(main())
