"""Compatibility module: ``import llmcp_format`` is ``import llmcp``.

The single-file reader that lived here became the package :mod:`llmcp`
(python/llmcp/). Every public name is re-exported unchanged, so code written
as ``import llmcp_format as lf`` keeps working, and so does the command line
``python3 -m llmcp_format inspect FILE [--json]`` / ``verify FILE...``. New
code should ``import llmcp``.
"""

from __future__ import annotations

import sys

from llmcp import *  # noqa: F401,F403 - the compatibility surface is exactly llmcp's
from llmcp import __all__, __version__  # noqa: F401
from llmcp.cli import main as _main


def main(argv=None) -> int:
    """``python3 -m llmcp_format …``: the command line of :mod:`llmcp.cli`."""
    return _main(argv, prog='python3 -m llmcp_format')


if __name__ == '__main__':
    sys.exit(main())
