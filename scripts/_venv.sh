# Sourced by scripts/run and scripts/test: a local .venv with the project installed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "Flux Memory needs Python 3.11 or newer; '$PYTHON' is $("$PYTHON" --version 2>&1)." >&2
    echo "Set PYTHON=/path/to/python3.11 and run again." >&2
    exit 1
fi
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
# FLUX_EXTRAS: the optional parts to install (default: test; postgres adds psycopg).
extras=${FLUX_EXTRAS:-test}
stamp=.venv/.flux-installed
want="$extras $(cat pyproject.toml | "$PYTHON" -c 'import hashlib,sys; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())')"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "Installing Flux Memory [$extras] into .venv ..." >&2
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e ".[$extras]"
    echo "$want" > "$stamp"
fi
