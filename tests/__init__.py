"""The test suite.

Importing this package (pytest does, before any conftest) caches bytecode under build/pycache, as
``./build.sh`` runs do (scripts/py-env.sh): where PYTHONDONTWRITEBYTECODE is set, a plain ``pytest``
otherwise compiles every module it imports from source, in itself and in every worker, emulator and
CLI process its tests start, on every run. Nothing is written beside the sources.
"""

import os
import sys
from pathlib import Path

_PREFIX = os.environ.setdefault(
    "PYTHONPYCACHEPREFIX", str(Path(__file__).resolve().parents[1] / "build" / "pycache")
)
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # for the processes the tests start
if sys.pycache_prefix is None:
    sys.pycache_prefix = _PREFIX
sys.dont_write_bytecode = False
