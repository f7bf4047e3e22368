#!/usr/bin/env python3
"""Run the ``pycudamlx`` command from a checkout, without installing it: ``python cli.py info``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pycudamlx.cli import main  # noqa: E402

if __name__ == "__main__":
    main(prog_name="pycudamlx")
