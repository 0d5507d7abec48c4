#!/usr/bin/env bash
# The cblearn peer: a virtual environment of its own, because cblearn 0.4 pins numpy<2 and the
# main environment runs numpy 2. The lore job runs methods/lore/cblearn_peer.py with its python.
# Idempotent: a venv marked ready by its `ok` file is left alone.
set -euo pipefail
venv="${EDGERT_CACHE:-$HOME/.cache/edgert}/peers/cblearn"
if [ -f "$venv/ok" ]; then
    echo "cblearn peer ready at $venv"
    exit 0
fi
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet "cblearn==0.4.*"
"$venv/bin/python" -c "import cblearn.embedding"
touch "$venv/ok"
echo "cblearn peer ready at $venv"
