#!/usr/bin/env bash
# Install everything the tests need (Python packages, headless Chromium and a CJK font), then run them.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -e '.[test]'
if ! command -v chromium >/dev/null 2>&1 || ! fc-list 2>/dev/null | grep -qi "wenquanyi"; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && apt-get install -y -qq chromium fonts-wqy-microhei >/dev/null
    else
        echo "scripts/test.sh: chromium and fonts-wqy-microhei are needed for the browser tests" >&2
    fi
fi
set +e
python -m pytest -q "$@"
code=$?
set -e
# pytest exits 5 when it collected no test: that is a failure here, not a pass.
if [ "$code" = 5 ]; then echo "scripts/test.sh: no tests were collected" >&2; exit 1; fi
exit "$code"
