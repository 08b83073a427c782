"""The package as a user imports it: ``import llmcp`` without torch, and the compatibility module ``llmcp_format``."""

from __future__ import annotations

import subprocess
import sys
import unittest

from support import PYTHON_DIR

import llmcp
import llmcp_format


class ImportTest(unittest.TestCase):
    def test_import_llmcp_loads_neither_torch_nor_the_command_line(self):
        script = 'import sys, llmcp; print(sorted(m for m in ("torch", "llmcp.cli") if m in sys.modules))'
        r = subprocess.run([sys.executable, '-c', script], cwd=PYTHON_DIR, capture_output=True, text=True, check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), '[]')

    def test_the_compatibility_module_re_exports_every_public_name_unchanged(self):
        self.assertEqual(list(llmcp_format.__all__), list(llmcp.__all__))
        for name in llmcp.__all__:
            self.assertIs(getattr(llmcp_format, name), getattr(llmcp, name), name)
        self.assertTrue(callable(llmcp_format.main))
        self.assertEqual(llmcp_format.__version__, llmcp.__version__)


if __name__ == '__main__':
    unittest.main()
