#!/bin/sh
# playwright_install.sh — playwright-core at a pinned version, installed into
# $BUILD/npm-playwright (never globally, never into the repository), for the
# browser test of `d9 serve`'s page (test_serve_browser.sh), which drives
# Debian's Chromium with it. Installs only what is missing.
BUILD=${BUILD:-build}
PLAYWRIGHT_VERSION=1.49.1
DIR=$BUILD/npm-playwright
grep -q "\"version\": \"$PLAYWRIGHT_VERSION\"" "$DIR/node_modules/playwright-core/package.json" 2>/dev/null && exit 0
command -v npm >/dev/null 2>&1 || { echo "d9: npm is missing (.ci/install-deps installs it)"; exit 1; }
mkdir -p "$DIR" || exit 1
timeout 300 npm install --prefix "$DIR" --no-audit --no-fund --no-save --loglevel=error \
    "playwright-core@$PLAYWRIGHT_VERSION" >"$DIR/install.log" 2>&1 ||
    { tail -n 20 "$DIR/install.log"; exit 1; }
