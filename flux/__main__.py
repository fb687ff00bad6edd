"""`python -m flux ...`, for where the `flux` script is not on PATH."""
import os
import sys

# `-m` puts the current folder first on the path: a folder of the user's holding packages named as ours (core,
# api, memory...) would shadow them. It goes, unless it is the one holding this package (a checkout's root).
if sys.path and os.path.realpath(sys.path[0]) != os.path.realpath(os.path.dirname(os.path.dirname(__file__))):
    del sys.path[0]

from flux.cli import main

sys.exit(main())
