"""The command line, under both names: ``python -m llmcp`` and the compatibility ``python -m llmcp_format``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import unittest

from support import FIXTURES, GOLDEN_PATH, PYTHON_DIR


class CliTest(unittest.TestCase):
    def run_cli(self, module, *args):
        return subprocess.run([sys.executable, '-m', module, *args], cwd=PYTHON_DIR, capture_output=True, text=True, check=False)

    def test_inspect_reports_a_valid_file_and_an_invalid_one(self):
        r = self.run_cli('llmcp', 'inspect', GOLDEN_PATH, '--json')
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)['checkpoint']['checksum'], 'fnv1a64:2b8b6097eaed6a91')
        r = self.run_cli('llmcp', 'inspect', os.path.join(FIXTURES, 'malformed', 'heads-3.llmcp'))
        self.assertEqual(r.returncode, 1)
        self.assertIn('FORMAT_MODEL', r.stdout)
        r = self.run_cli('llmcp', 'inspect', os.path.join(FIXTURES, 'malformed', 'heads-3.llmcp'), '--json')
        self.assertEqual(r.returncode, 1)
        self.assertEqual(json.loads(r.stdout)['error']['code'], 'FORMAT_MODEL')
        r = self.run_cli('llmcp', 'verify', GOLDEN_PATH)
        self.assertEqual(r.returncode, 0)
        self.assertIn('ok fnv1a64:2b8b6097eaed6a91', r.stdout)

    def test_the_compatibility_name_runs_the_same_command_line(self):
        r = self.run_cli('llmcp_format', 'verify', GOLDEN_PATH, os.path.join(FIXTURES, 'malformed', 'heads-3.llmcp'))
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stdout.count('\n'), 2)
        self.assertIn('ok fnv1a64:2b8b6097eaed6a91', r.stdout)
        self.assertIn('FORMAT_MODEL', r.stdout)
        r = self.run_cli('llmcp_format')
        self.assertEqual(r.returncode, 2)
        self.assertIn('usage: python3 -m llmcp_format ', r.stderr)

    def test_usage_names_the_module(self):
        r = self.run_cli('llmcp')
        self.assertEqual(r.returncode, 2)
        self.assertIn('usage: python3 -m llmcp ', r.stderr)

if __name__ == '__main__':
    unittest.main()
