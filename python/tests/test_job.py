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

from support import RESULTS, TESTS_DIR, np, outcome, read

from llmcp.text import f64_text, js_number_text


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
        # Number texts: each bit pattern as String and f64Text of JavaScript would write it (compared on the vitest side).
        values = [struct.unpack('>d', bytes.fromhex(h))[0] for h in job.get('f64Bits', [])]
        RESULTS.append({'id': 'f64-text', 'texts': [[js_number_text(v), f64_text(v)] for v in values]})
        self.assertEqual(failures, [], 'files that raised a non-FormatError or did not re-encode identically')
        if np is None:
            return
        # The same entries (all but three in four mutations) decoded without numpy give the same outcomes.
        by_id = {r['id']: r for r in RESULTS if 'ok' in r}
        subset = [e for k, e in enumerate(job['entries']) if not e['id'].startswith('mutation:') or k % 4 == 0]
        script = (
            'import sys, json; sys.modules["numpy"] = None; sys.modules["torch"] = None; sys.path.insert(0, sys.argv[1]); '
            'import support as t; job = json.load(open(sys.argv[2])); bundle = t.read(job["bundle"]); '
            'ids = set(json.load(open(sys.argv[3]))); '
            'print(json.dumps({e["id"]: t.outcome(bundle[e["offset"]:e["offset"] + e["length"]]) for e in job["entries"] if e["id"] in ids}))'
        )
        ids_path = os.environ['LLMCP_PY_JOB'] + '.no-numpy-ids.json'
        with open(ids_path, 'w', encoding='utf-8') as f:
            json.dump([e['id'] for e in subset], f)
        r = subprocess.run([sys.executable, '-c', script, TESTS_DIR, os.environ['LLMCP_PY_JOB'], ids_path], capture_output=True, text=True, check=False)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        without = json.loads(r.stdout)
        differ = [i for i, got in without.items() if {**got, 'id': i} != by_id[i]]
        RESULTS.append({'id': 'no-numpy', 'compared': len(without), 'differ': differ[:10]})
        self.assertEqual(differ, [], 'outcomes that differ without numpy')


if __name__ == '__main__':
    unittest.main()
