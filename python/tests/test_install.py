"""``pip install ./python``: an installed llmcp, llmcp_format and ``python -m llmcp``.

The test makes a virtual environment that sees the system's packages
(``python3 -m venv --system-site-packages``) and installs a copy of python/
with ``pip install --no-build-isolation --no-index`` (nothing is downloaded;
the build uses the system's setuptools). It skips, saying what is missing,
where venv, pip or setuptools are absent (Debian: ``apt-get install
python3-venv python3-pip python3-setuptools``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from support import GOLDEN_PATH, PYTHON_DIR, ROOT


def _install_problem():
    """Why ``pip install`` into a venv cannot be tried here, or None."""
    for module, package in (('venv', 'python3-venv'), ('ensurepip', 'python3-venv'), ('pip', 'python3-pip'), ('setuptools', 'python3-setuptools'), ('wheel', 'python3-wheel')):
        r = subprocess.run([sys.executable, '-c', f'import {module}'], capture_output=True, text=True, check=False)
        if r.returncode != 0:
            return f'{sys.executable} has no {module} (Debian: apt-get install {package})'
    return None


@unittest.skipIf(_install_problem() is not None, f'pip install ./python not tried: {_install_problem()}')
class InstallTest(unittest.TestCase):
    def test_pip_install_gives_an_importable_llmcp_and_llmcp_format_and_the_command_line(self):
        with tempfile.TemporaryDirectory(prefix='llmcp-py-install-') as tmp:
            # A copy, so the build leaves no build/ or *.egg-info in the checkout.
            source = os.path.join(tmp, 'src')
            shutil.copytree(PYTHON_DIR, source, ignore=shutil.ignore_patterns('tests', 'build', '*.egg-info', '__pycache__'))
            env_dir = os.path.join(tmp, 'venv')
            subprocess.run([sys.executable, '-m', 'venv', '--system-site-packages', env_dir], check=True, capture_output=True)
            python = os.path.join(env_dir, 'bin', 'python')
            env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
            env['PIP_DISABLE_PIP_VERSION_CHECK'] = '1'
            r = subprocess.run([python, '-m', 'pip', 'install', '--no-build-isolation', '--no-index', '--quiet', source], cwd=tmp, env=env, capture_output=True, text=True, check=False)
            self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
            script = (
                'import json, sys, importlib.metadata as md, llmcp, llmcp_format; '
                'm = md.metadata("llmcp"); '
                'print(json.dumps({"file": llmcp.__file__, "compat": llmcp_format.__file__, "version": llmcp.__version__, "meta_version": m["Version"], '
                '"requires_python": m["Requires-Python"], "extras": sorted(m.get_all("Provides-Extra") or []), "requires": m.get_all("Requires-Dist") or [], '
                '"ok": llmcp.load(sys.argv[1]).layout.checksum_label}))'
            )
            r = subprocess.run([python, '-c', script, GOLDEN_PATH], cwd=tmp, env=env, capture_output=True, text=True, check=False)
            self.assertEqual(r.returncode, 0, r.stderr)
            got = json.loads(r.stdout)
            self.assertTrue(got['file'].startswith(env_dir), got['file'])
            self.assertTrue(got['compat'].startswith(env_dir), got['compat'])
            self.assertFalse(got['file'].startswith(ROOT), got['file'])
            self.assertEqual(got['version'], got['meta_version'])
            self.assertEqual(got['requires_python'], '>=3.8')
            self.assertEqual(got['extras'], ['numpy', 'torch'])
            self.assertTrue(all('extra ==' in req for req in got['requires']), got['requires'])
            self.assertEqual(got['ok'], 'fnv1a64:2b8b6097eaed6a91')
            r = subprocess.run([python, '-m', 'llmcp', 'verify', GOLDEN_PATH], cwd=tmp, env=env, capture_output=True, text=True, check=False)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn('ok fnv1a64:2b8b6097eaed6a91', r.stdout)


if __name__ == '__main__':
    unittest.main()
