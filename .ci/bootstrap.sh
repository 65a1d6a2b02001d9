# Sourced by .ci/demo and .ci/test: make .venv (Python 3.11) hold sparkseq and its
# test dependencies. Reinstalls only when pyproject.toml changed since the last run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON=${PYTHON:-python3.11}
if ! command -v java >/dev/null 2>&1 && [ -z "${JAVA_HOME:-}" ]; then
    echo "sparkseq needs Java 17 or later for Spark (install a JDK, or set JAVA_HOME)" >&2
    exit 1
fi
if [ ! -x .venv/bin/python ]; then
    command -v "$PYTHON" >/dev/null 2>&1 || { echo "$PYTHON not found (set PYTHON=/path/to/python3.11)" >&2; exit 1; }
    echo "creating .venv with $PYTHON" >&2
    "$PYTHON" -m venv .venv
fi
stamp=".venv/.sparkseq-installed"
want=$(.venv/bin/python -c 'import hashlib,sys; print(hashlib.sha256(open("pyproject.toml","rb").read()).hexdigest())')
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "installing sparkseq and its dependencies into .venv (first run: a few minutes)" >&2
    if ! .venv/bin/python -m pip install --disable-pip-version-check -e '.[test]' > .venv/pip.log 2>&1; then
        cat .venv/pip.log >&2
        exit 1
    fi
    echo "$want" > "$stamp"
fi
