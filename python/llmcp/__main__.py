"""``python -m llmcp``: the command line of :mod:`llmcp.cli`."""

import sys

from .cli import main

sys.exit(main())
