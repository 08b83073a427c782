"""What every test module of the Python package shares: paths, the package on sys.path, and the outcome of a decode.

The tests run against the package in the source tree (python/llmcp), found
through ``sys.path`` the way ``PYTHONPATH=python`` finds it; test_package.py
also installs it into a virtual environment and imports it from there.
"""

from __future__ import annotations

import os
import sys

sys.dont_write_bytecode = True  # leave no __pycache__ in the repository
os.environ['PYTHONDONTWRITEBYTECODE'] = '1'  # nor from the subprocesses the tests start

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.dirname(TESTS_DIR)
ROOT = os.path.dirname(PYTHON_DIR)
if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)

FIXTURES = os.path.join(ROOT, 'packages', 'conformance', 'fixtures')
GOLDEN_PATH = os.path.join(FIXTURES, 'golden-6330.llmcp')

try:
    import numpy as np
except ImportError:  # pragma: no cover
    np = None
try:
    import torch
except ImportError:  # pragma: no cover
    torch = None

RESULTS = []
"""Structured results the vitest side reads (tools/python-reader.test.ts), appended by the tests."""


def read(path):
    with open(path, 'rb') as f:
        return f.read()

