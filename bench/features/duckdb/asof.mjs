// The anchor: DuckDB's ASOF JOIN computing Feast's point-in-time semantics on
// the benchmark's files, written to Parquet (ZSTD) like ours.
// Usage: node asof.mjs DIR TTL_SECONDS [OUT]
// Semantics (the same as the property test's oracle): per (key, ts) the row
// with the largest created wins; the largest ts <= the entity's; then
// ts >= entity ts - ttl; NULL keys or entity times match nothing.
import { DuckDBInstance } from '@duckdb/node-api';

const [dir, ttl = '604800', out = `${process.argv[2]}/out_duckdb.parquet`] = process.argv.slice(2);
const q = (s) => "'" + s.replaceAll("'", "''") + "'";
const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
const threads = (await conn.runAndReadAll("SELECT current_setting('threads')")).getRows()[0][0];
const sql = `COPY (
  WITH f AS (
    SELECT * FROM read_parquet(${q(dir + '/features.parquet')})
    WHERE event_timestamp IS NOT NULL AND driver_id IS NOT NULL
    QUALIFY row_number() OVER (PARTITION BY driver_id, event_timestamp ORDER BY created DESC NULLS LAST) = 1)
  SELECT e.*,
    CASE WHEN e.event_timestamp IS NOT NULL AND e.driver_id IS NOT NULL
              AND f.event_timestamp >= e.event_timestamp - to_seconds(${Number(ttl)}) THEN f.conv_rate END AS conv_rate,
    CASE WHEN e.event_timestamp IS NOT NULL AND e.driver_id IS NOT NULL
              AND f.event_timestamp >= e.event_timestamp - to_seconds(${Number(ttl)}) THEN f.acc_rate END AS acc_rate,
    CASE WHEN e.event_timestamp IS NOT NULL AND e.driver_id IS NOT NULL
              AND f.event_timestamp >= e.event_timestamp - to_seconds(${Number(ttl)}) THEN f.trips END AS trips
  FROM read_parquet(${q(dir + '/entities.parquet')}) e
  ASOF LEFT JOIN f ON e.driver_id = f.driver_id AND e.event_timestamp >= f.event_timestamp
) TO ${q(out)} (FORMAT parquet, COMPRESSION zstd)`;
const t0 = performance.now();
await conn.run(sql);
const secs = (performance.now() - t0) / 1000;
console.log(`duckdb: ${threads} threads, query ${secs.toFixed(2)} s (read, join, write)`);
