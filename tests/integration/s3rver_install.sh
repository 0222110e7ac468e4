#!/bin/sh
# s3rver_install.sh — the S3-compatible server the S3 tests run on 127.0.0.1:
# the npm package s3rver at a pinned version, installed into $BUILD/npm (never
# globally, never into the repository) and run with the installed node.
# Called by `make deps` (so by `make test`); installs only what is missing:
# Debian's nodejs and npm when there is no node or npm at all.
BUILD=${BUILD:-build}
S3RVER_VERSION=3.7.1
DIR=$BUILD/npm
[ -x "$DIR/node_modules/.bin/s3rver" ] &&
    grep -q "\"version\": \"$S3RVER_VERSION\"" "$DIR/node_modules/s3rver/package.json" 2>/dev/null && exit 0
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "d9: installing nodejs and npm (the S3 tests' server)"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -q && $SUDO apt-get install -y -q --no-install-recommends nodejs npm || exit 1
fi
echo "d9: node $(node --version), npm $(npm --version): installing s3rver@$S3RVER_VERSION into $DIR"
mkdir -p "$DIR" || exit 1
npm install --prefix "$DIR" --no-audit --no-fund --no-save --loglevel=error "s3rver@$S3RVER_VERSION" >"$DIR/install.log" 2>&1 ||
    { tail -n 20 "$DIR/install.log"; exit 1; }
