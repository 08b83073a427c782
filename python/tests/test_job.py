"""A job of tools/python-reader.test.ts: every file of a bundle decoded, its outcome recorded for the vitest side.

Skipped when no job is given (``run.py --job job.json``). The vitest side
compares each outcome with ``@llmcp/format``'s.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import time
import unittest

from oracle import job_outcomes
from support import RESULTS, TESTS_DIR, np

from llmcp.text import f64_text, js_number_text


class JobTest(unittest.TestCase):
    def test_job_files(self):
        if os.environ.get('LLMCP_PY_JOB') is None:
            self.skipTest('no job: --job is given by tools/python-reader.test.ts')
        job_path = os.environ['LLMCP_PY_JOB']
        with open(job_path, encoding='utf-8') as f:
            job = json.load(f)
        started = time.time()
        outcomes = job_outcomes(job)
        RESULTS.extend(outcomes)
        RESULTS.append({'id': 'job-seconds', 'seconds': time.time() - started})
        # Number texts: each bit pattern as String and f64Text of JavaScript would write it (compared on the vitest side).
        values = [struct.unpack('>d', bytes.fromhex(h))[0] for h in job.get('f64Bits', [])]
        RESULTS.append({'id': 'f64-text', 'texts': [[js_number_text(v), f64_text(v)] for v in values]})
        failures = [r['id'] for r in outcomes if (r['ok'] and not r['reencodeIdentical']) or (not r['ok'] and r['error']['code'] == 'PYTHON_EXCEPTION')]
        self.assertEqual(failures, [], 'files that raised a non-FormatError or did not re-encode identically')
        if np is None:
            return
        # The same entries (all but three in four mutations) decoded without numpy give the same outcomes.
        by_id = {r['id']: r for r in outcomes}
        subset = {**job, 'entries': [e for k, e in enumerate(job['entries']) if not e['id'].startswith('mutation:') or k % 4 == 0]}
        subset_path = job_path + '.no-numpy.json'
        out_path = job_path + '.no-numpy-outcomes.json'
        with open(subset_path, 'w', encoding='utf-8') as f:
            json.dump(subset, f)
        script = (
            'import sys; sys.modules["numpy"] = None; sys.modules["torch"] = None; sys.path.insert(0, sys.argv[1]); '
            'import oracle, llmcp.tensors; assert llmcp.tensors.np is None; sys.exit(oracle.main(["--job", sys.argv[2], "--out", sys.argv[3]]))'
        )
        r = subprocess.run([sys.executable, '-c', script, TESTS_DIR, subset_path, out_path], capture_output=True, text=True, check=False)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        with open(out_path, encoding='utf-8') as f:
            without = json.load(f)['outcomes']
        differ = [got['id'] for got in without if got != by_id[got['id']]]
        RESULTS.append({'id': 'no-numpy', 'compared': len(without), 'differ': differ[:10]})
        self.assertEqual(differ, [], 'outcomes that differ without numpy')

if __name__ == '__main__':
    unittest.main()
