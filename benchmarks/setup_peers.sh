#!/usr/bin/env bash
# Peers for the transport benchmark (benchmarks/transport), each in its own virtual
# environment under benchmarks/.peers/<name>: Timeflux pins numpy 1.26 and networkx 2.5, so
# it cannot share edgert's environment, and MNE-LSL brings MNE and its own liblsl.
#
# Timeflux 0.17 imports pylsl's resolve_stream, which pylsl 1.18 removed, so its venv gets
# pylsl 1.16; that wheel carries no liblsl for Linux, so it borrows the one pylsl 1.18 ships
# in edgert's environment through PYLSL_LIB (the benchmark sets it the same way).
#
# Idempotent: a peer whose venv installed and imported fine (.peers/<name>/ok) is left alone.
# A peer that fails leaves its error in .peers/<name>.error, which the benchmark reports.
# Usage: bash benchmarks/setup_peers.sh [PYTHON]   (default: python3, edgert's Python)
set -u
cd "$(dirname "$0")"
PYTHON=${1:-python3}
mkdir -p .peers
LIBLSL=$("$PYTHON" -c "import pathlib, pylsl; print(sorted((pathlib.Path(pylsl.__file__).parent / 'lib').glob('liblsl.so*'))[0])" 2>/dev/null)

install_peer() {
    local name=$1 check=$2
    shift 2
    local venv=.peers/$name log=.peers/$name.log
    if [ -f "$venv/ok" ]; then
        echo "$name: ready ($venv)"
        return 0
    fi
    echo "$name: installing into $venv"
    rm -rf "$venv" ".peers/$name.error"
    if "$PYTHON" -m venv "$venv" >"$log" 2>&1 &&
        "$venv/bin/python" -m pip install -q --upgrade pip >>"$log" 2>&1 &&
        "$venv/bin/python" -m pip install -q "$@" >>"$log" 2>&1 &&
        PYLSL_LIB=$LIBLSL "$venv/bin/python" -c "$check" >>"$log" 2>&1; then
        touch "$venv/ok"
        echo "$name: ready ($venv)"
    else
        tail -n 20 "$log" >".peers/$name.error"
        echo "$name: FAILED, see benchmarks/.peers/$name.error" >&2
        return 1
    fi
}

status=0
install_peer timeflux "import timeflux.nodes.lsl" \
    "timeflux==0.17.2" "pylsl>=1.16,<1.17" || status=1
install_peer mne_lsl "import mne_lsl.stream, pylsl" \
    "mne-lsl>=1.14" "pylsl>=1.18.6" || status=1
exit $status
