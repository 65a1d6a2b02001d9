# Sourced by .ci/demo and .ci/test: make .venv (Python 3.11) hold sparkseq and its
# test dependencies. Reinstalls only when pyproject.toml changed since the last run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

PYTHON=${PYTHON:-python3.11}
if ! command -v java >/dev/null 2>&1 && [ -z "${JAVA_HOME:-}" ]; then
    echo "sparkseq needs Java 17 or later for Spark (install a JDK, or set JAVA_HOME)" >&2
    exit 1
fi
# OpenLDAP's slapd: tests/servers/test_server_security.py starts one (its own configuration, a
# loopback port; never the system service). Installed from the OS packages when missing.
if [ ! -x /usr/sbin/slapd ] && ! command -v slapd >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing slapd and ldap-utils (the LDAP server of the security tests)" >&2
        apt_log=$(mktemp)
        apt=(apt-get -y -q -o DPkg::Lock::Timeout=300)  # waits for another apt-get instead of failing
        if ! DEBIAN_FRONTEND=noninteractive "${apt[@]}" install slapd ldap-utils > "$apt_log" 2>&1; then
            # a fresh machine may have no package lists yet
            if ! { "${apt[@]}" update && DEBIAN_FRONTEND=noninteractive "${apt[@]}" install slapd ldap-utils; } \
                    > "$apt_log" 2>&1; then
                cat "$apt_log" >&2
                exit 1
            fi
        fi
        rm -f "$apt_log"
    else
        echo "slapd not found: install OpenLDAP's server (Debian: apt-get install slapd) for the security tests" >&2
    fi
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
