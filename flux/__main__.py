"""`python -m flux ...`, for where the `flux` script is not on PATH."""
import sys

from flux.cli import main

sys.exit(main())
