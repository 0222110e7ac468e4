// duck_scan.mjs — one timed DuckDB scan for bench_fleet_scan.sh: the
// grouped-by-location question over d9's Parquet `polls` table.
// Run from the readers' npm directory (copied there by the bench, so the
// import resolves):
//   node duck_scan.mjs 'GLOB'
// prints one JSON line: {"ms": query wall ms, "rows": [[location, count, max_ns], ...]}
// (rows sorted by location, so two engines' answers compare as text).
import { DuckDBInstance } from '@duckdb/node-api';

const glob = process.argv[2];
const db = await DuckDBInstance.create(':memory:');
const c = await db.connect();
const q = `select location, count(*) as n, max(dur_ns) as mx from read_parquet('${glob.replace(/'/g, "''")}')
           group by location order by location`;
const t = process.hrtime.bigint();
const r = await c.runAndReadAll(q);
const ms = Number(process.hrtime.bigint() - t) / 1e6;
const rows = r.getRows().map((x) => [String(x[0]), Number(x[1]), Number(x[2])]);
console.log(JSON.stringify({ ms, rows }));
