// parquet_read.mjs — reads d9's Parquet tables with two independent readers
// (DuckDB through @duckdb/node-api, and hyparquet) and compares every row
// with d9 sql's (jsonl). Run from the readers' npm directory (copied there by
// test_export_parquet.sh, so its imports resolve).
//   node parquet_read.mjs compare PARQUET_DIR JSONL_DIR TABLE...
//     one line per table: "ok TABLE ROWS" or "FAIL TABLE: why"
//   node parquet_read.mjs sql FILE 'SQL with {f} for the file'
//     prints the rows of a DuckDB query as JSON lines
//   node parquet_read.mjs prune FILE COLUMN VALUE
//     EXPLAIN ANALYZE of "count(*) WHERE COLUMN > VALUE" against a full scan:
//     prints "groups N skippable K bytes_filtered B bytes_full F rows R"
import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';
import { parquetReadObjects, asyncBufferFromFile, parquetMetadataAsync } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';

const TWO63 = 9223372036854775808;

// Equal values: d9 sql gives u64 values above INT64_MAX as REAL; the file keeps their bits.
function same(a, b) {
  if (a === null || a === undefined || b === null || b === undefined)
    return (a ?? null) === (b ?? null);
  if (typeof a === 'bigint' || typeof b === 'bigint' || typeof a === 'number' || typeof b === 'number') {
    const na = Number(a), nb = Number(b);
    if (na === nb) return true;
    if (typeof a === 'bigint' && a < 0n) return Number(BigInt.asUintN(64, a)) === nb;
    if (typeof b === 'bigint' && b < 0n) return Number(BigInt.asUintN(64, b)) === na;
    return na >= TWO63 && nb >= TWO63 && na === nb;
  }
  return String(a) === String(b);
}

function key(row, cols) {
  return cols.map((c) => {
    const v = row[c];
    if (v === null || v === undefined) return 'N';
    if (typeof v === 'bigint') return v < 0n && v !== 0n ? 'I' + Number(BigInt.asUintN(64, v)) : 'I' + Number(v);
    if (typeof v === 'number') return 'I' + v;
    return 'S' + JSON.stringify(String(v));
  }).join('|');
}

function compareRows(name, want, got, cols) {
  if (want.length !== got.length) return `${name}: ${got.length} rows, d9 sql has ${want.length}`;
  const a = want.map((r) => [key(r, cols), r]).sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
  const b = got.map((r) => [key(r, cols), r]).sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
  for (let i = 0; i < a.length; i++)
    for (const c of cols)
      if (!same(a[i][1][c], b[i][1][c]))
        return `${name}: row ${i} column ${c}: ${String(b[i][1][c])}, d9 sql has ${String(a[i][1][c])}`;
  return null;
}

async function duck() {
  const db = await DuckDBInstance.create(':memory:');
  return db.connect();
}

async function compare(pdir, jdir, tables) {
  const c = await duck();
  let bad = 0;
  for (const t of tables) {
    const file = `${pdir}/${t}.parquet`;
    const want = readFileSync(`${jdir}/${t}.jsonl`, 'utf8').split('\n').filter((l) => l).map((l) => JSON.parse(l));
    let why = null;
    let n = 0;
    try {
      const r = await c.runAndReadAll(`SELECT * FROM read_parquet('${file.replace(/'/g, "''")}')`);
      const cols = r.columnNames();
      const rows = r.getRowObjects();
      n = rows.length;
      const wantCols = want.length ? Object.keys(want[0]) : cols;
      if (JSON.stringify(wantCols) !== JSON.stringify(cols)) why = `${t}: columns ${cols} but d9 sql has ${wantCols}`;
      why = why || compareRows(`${t} (DuckDB)`, want, rows, cols);
      const hp = await parquetReadObjects({ file: await asyncBufferFromFile(file), compressors });
      why = why || compareRows(`${t} (hyparquet)`, want, hp, cols);
    } catch (e) {
      why = `${t}: ${e.message}`;
    }
    if (why) { bad++; console.log(`FAIL ${t}: ${why}`); } else console.log(`ok ${t} ${n}`);
  }
  return bad;
}

async function sql(file, q) {
  const c = await duck();
  const r = await c.runAndReadAll(q.replaceAll('{f}', `read_parquet('${file}')`));
  for (const row of r.getRowObjectsJson()) console.log(JSON.stringify(row));
  return 0;
}

async function prune(file, col, value) {
  // each query on a fresh instance: nothing cached from the one before
  const run = async (where) => {
    const c = await duck();
    await c.run("PRAGMA enable_profiling='json'");
    await c.run("PRAGMA profiling_mode='detailed'");
    // a small file would otherwise be read whole in one request
    await c.run('SET disable_parquet_prefetching = true');
    await c.run('SET enable_external_file_cache = false');
    const r = await c.runAndReadAll(`EXPLAIN ANALYZE SELECT count(*) FROM read_parquet('${file}') ${where}`);
    return JSON.parse(r.getRows()[0][1]);
  };
  // a filter statistics cannot decide (DuckDB rewrites col + 0 > v into col > v): every group is read
  const full = await run(`WHERE CAST(${col} AS VARCHAR) <> ''`);
  const filtered = await run(`WHERE ${col} > ${value}`);
  const meta = await parquetMetadataAsync(await asyncBufferFromFile(file));
  const idx = meta.schema.slice(1).findIndex((s) => s.name === col);
  let skippable = 0;
  for (const g of meta.row_groups) {
    const st = g.columns[idx].meta_data.statistics;
    if (st && st.max_value !== undefined && BigInt(st.max_value) <= BigInt(value)) skippable++;
  }
  const c = await duck();
  const cnt = await c.runAndReadAll(`SELECT count(*) FROM read_parquet('${file}') WHERE ${col} > ${value}`);
  console.log(`groups ${meta.row_groups.length} skippable ${skippable} bytes_filtered ${filtered.total_bytes_read} ` +
              `bytes_full ${full.total_bytes_read} rows ${cnt.getRows()[0][0]}`);
  return 0;
}

const [mode, ...args] = process.argv.slice(2);
let rc = 2;
if (mode === 'compare') rc = await compare(args[0], args[1], args.slice(2));
else if (mode === 'sql') rc = await sql(args[0], args[1]);
else if (mode === 'prune') rc = await prune(args[0], args[1], args[2]);
process.exit(rc ? 1 : 0);
