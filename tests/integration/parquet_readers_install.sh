#!/bin/sh
# parquet_readers_install.sh — the independent Parquet readers the Parquet
# export is tested against: DuckDB (npm @duckdb/node-api) and hyparquet (with
# hyparquet-compressors for zstd), at pinned versions, installed into
# $BUILD/npm-parquet (never globally, never into the repository); installs
# only what is missing, bounded in time. Called by `make deps` and by
# test_export_parquet.sh. Prints the directory's path on success.
BUILD=${BUILD:-build}
DUCKDB_VERSION=1.5.6-r.1
HYPARQUET_VERSION=1.33.0
HYPARQUET_COMPRESSORS_VERSION=1.1.2
NPM_TIMEOUT=300
DIR=$BUILD/npm-parquet
have() { grep -q "\"version\": \"$2\"" "$DIR/node_modules/$1/package.json" 2>/dev/null; }
if have @duckdb/node-api "$DUCKDB_VERSION" && have hyparquet "$HYPARQUET_VERSION" &&
   have hyparquet-compressors "$HYPARQUET_COMPRESSORS_VERSION"; then
    echo "$DIR"
    exit 0
fi
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 ||
    { echo "parquet readers: node and npm are needed (make deps installs them)" >&2; exit 1; }
mkdir -p "$DIR" || exit 1
[ -f "$DIR/package.json" ] || echo '{"name":"d9-parquet-readers","private":true}' >"$DIR/package.json"
echo "d9: installing @duckdb/node-api@$DUCKDB_VERSION hyparquet@$HYPARQUET_VERSION into $DIR" >&2
timeout "$NPM_TIMEOUT" npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error \
    "@duckdb/node-api@$DUCKDB_VERSION" "hyparquet@$HYPARQUET_VERSION" \
    "hyparquet-compressors@$HYPARQUET_COMPRESSORS_VERSION" >"$DIR/install.log" 2>&1 ||
    { tail -n 20 "$DIR/install.log" >&2; exit 1; }
echo "$DIR"
