"""python -m llmcp.engine: one rank of llmcp's torch engine (see rank.py)."""
import sys

from .rank import main

sys.exit(main())
