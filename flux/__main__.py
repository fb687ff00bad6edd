"""`python -m flux ...`, for where the `flux` script is not on PATH."""
import os
import sys

# `-m` puts the current folder first on the path (not with -P or PYTHONSAFEPATH): a folder of the user's holding
# packages named as ours (core, api, memory...) would shadow them. It goes, unless it holds this package (a
# checkout's root).
_ours = os.path.realpath(os.path.dirname(os.path.dirname(__file__)))
if not sys.flags.safe_path and os.path.realpath(sys.path[0]) != _ours:
    del sys.path[0]

from flux.cli import main  # noqa: E402 - after the path is set

sys.exit(main())
