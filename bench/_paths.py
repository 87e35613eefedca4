"""Run as ``python bench/NAME.py``, a bench has this folder first on ``sys.path``, where
``bench/langgraph.py`` hides the langgraph package. Importing this module (first) takes
the folder off the path and puts the repository's root there (for ``bench.*``)."""

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(_HERE.parent), *(p for p in sys.path if Path(p or ".").resolve() != _HERE)]
