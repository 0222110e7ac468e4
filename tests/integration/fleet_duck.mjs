// fleet_duck.mjs — DuckDB (through @duckdb/node-api) over a tree of d9's
// shipped Parquet companions, PARQUET_DIR/table=NAME/date=DAY/host=HOST/ID.parquet
// (Hive partitions), for test_fleet_parquet.sh. Run from the readers' npm
// directory (copied there by the test, so its imports resolve).
//   node fleet_duck.mjs query PARQUET_DIR THR
//     polls with dur_ns > THR per host and location, one CSV line each:
//     host,location,n,total_ns,max_ns (ordered by host, location)
//   node fleet_duck.mjs prune PARQUET_DIR
//     EXPLAIN ANALYZE of host-a's polls over every table's files of every
//     host: "scanning S/N files_read R" (DuckDB's counts: files left after
//     the partition filters of N, files opened), then the plan
import { DuckDBInstance } from '@duckdb/node-api';

async function duck() {
  const db = await DuckDBInstance.create(':memory:');
  return db.connect();
}

async function query(dir, thr) {
  const c = await duck();
  const r = await c.runAndReadAll(
    `SELECT host, location, count(*) AS n, sum(dur_ns) AS total_ns, max(dur_ns) AS max_ns
     FROM read_parquet('${dir}/table=polls/*/*/*.parquet', hive_partitioning = 1)
     WHERE dur_ns > ${Number(thr)} GROUP BY host, location ORDER BY host, location`);
  for (const row of r.getRows())
    console.log(row.map((v) => (v === null ? '' : String(v))).join(','));
}

async function prune(dir) {
  const c = await duck();
  // every table's files in one glob: the partitions decide what is opened
  const r = await c.runAndReadAll(
    `EXPLAIN ANALYZE SELECT count(*), sum(dur_ns) FROM read_parquet('${dir}/*/*/*/*.parquet',
       hive_partitioning = 1, union_by_name = 1) WHERE "table" = 'polls' AND host = 'host-a'`);
  const plan = String(r.getRows()[0][1]);
  const scan = plan.match(/Scanning Files: (\d+)\/(\d+)/);
  const read = plan.match(/Total Files Read: (\d+)/);
  console.log(`scanning ${scan ? scan[1] + '/' + scan[2] : '?'} files_read ${read ? read[1] : '?'}`);
  console.log(plan);
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === 'query') await query(args[0], args[1]);
else if (cmd === 'prune') await prune(args[0]);
else { console.error('usage: fleet_duck.mjs query DIR THR | prune DIR'); process.exit(2); }
