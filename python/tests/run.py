"""Runs the Python package's tests; with a job, also records each file's outcome for the vitest side.

Alone (``/usr/bin/python3 python/tests/run.py``, or ``python3 -m unittest
discover -s python/tests``) it checks the golden file, the malformed corpus
against its manifest, the encoder, the no-numpy path, the error texts, the
torch AdamW mapping (when torch is installed), the command line, the
compatibility module and an install into a virtual environment (skipped,
saying so, without python3-venv/pip/setuptools).

Run by ``tools/python-reader.test.ts`` it is given a job: a bundle of files
(the corpus, trainer checkpoints, random valid states, hostile mutations)
whose outcomes the vitest side compares with ``@llmcp/format``'s::

    python3 python/tests/run.py --job job.json --out result.json

``result.json`` holds the unittest summary and, for every job entry, the
accept/reject outcome with the error's code, category, reason and context,
and for accepted files whether re-encoding reproduced them byte for byte.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import unittest

from support import RESULTS, TESTS_DIR, np, torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--job', help='job JSON written by tools/python-reader.test.ts')
    parser.add_argument('--out', help='write the structured result here')
    parser.add_argument('--only', action='append', default=[], metavar='MODULE', help='run only this test module (e.g. test_install); repeatable')
    parser.add_argument('--skip', action='append', default=[], metavar='MODULE', help='leave this test module out; repeatable')
    args = parser.parse_args()
    if args.job:
        os.environ['LLMCP_PY_JOB'] = args.job
    started = time.time()
    modules = sorted(f[:-3] for f in os.listdir(TESTS_DIR) if f.startswith('test_') and f.endswith('.py'))
    unknown = [m for m in args.only + args.skip if m not in modules]
    if unknown:
        parser.error(f'no test module {", ".join(unknown)} (modules: {", ".join(modules)})')
    chosen = [m for m in (args.only or modules) if m not in args.skip]
    suite = unittest.defaultTestLoader.loadTestsFromNames(chosen)
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
