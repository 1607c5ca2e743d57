// DuckDB's ASOF JOIN as the oracle for Strata's point-in-time join.
//
// Usage: node pit_oracle.mjs SPEC.json
// SPEC: {"cases": [{"entities": PATH, "ts": "event_timestamp", "result": PATH (ours),
//         "views": [{"source": PATH, "keys": [..], "ts": COL, "created": COL|null,
//                    "ttl_seconds": N, "features": [..], "outputs": [..]}]}]}
// Every file is Parquet; the entity file has a __row column (its row number).
// For each view the oracle keeps, per (keys, ts), the row with the largest
// created timestamp, ASOF-joins it (the largest ts <= the entity's), then
// applies the TTL (ts >= entity ts - ttl, inclusive) — Feast's SQL semantics.
// Exits 0 when our result equals the oracle's, row for row.
import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';

const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
const q = (s) => "'" + s.replaceAll("'", "''") + "'";
const id = (s) => '"' + s.replaceAll('"', '""') + '"';
let failures = 0;

for (const [ci, c] of spec.cases.entries()) {
  const ets = id(c.ts);
  const parts = [];
  c.views.forEach((v, vi) => {
    const keys = v.keys.map(id);
    const dedup = v.created
      ? `QUALIFY row_number() OVER (PARTITION BY ${keys.join(', ')}, ${id(v.ts)} ORDER BY ${id(v.created)} DESC NULLS LAST) = 1`
      : '';
    // DuckDB's ASOF matches a NULL probe timestamp with the last row; in SQL
    // (and Feast) `feature_ts <= NULL` is never true, so a NULL entity time gets NULLs.
    // Likewise DuckDB 1.5's ASOF pairs NULL keys with NULL keys; SQL equality never does.
    const ttl = `e.${ets} IS NOT NULL` + v.keys.map((k) => ` AND e.${id(k)} IS NOT NULL`).join('') +
      (v.ttl_seconds > 0 ? ` AND f.${id(v.ts)} >= e.${ets} - to_seconds(${v.ttl_seconds})` : '');
    const cols = v.features.map((f, i) => `CASE WHEN ${ttl} THEN f.${id(f)} END AS ${id(v.outputs[i])}`);
    const on = v.keys.map((k) => `e.${id(k)} = f.${id(k)}`).concat([`e.${ets} >= f.${id(v.ts)}`]).join(' AND ');
    parts.push(`v${vi} AS (
      WITH f AS (SELECT * FROM read_parquet(${q(v.source)}) WHERE ${id(v.ts)} IS NOT NULL ${v.keys.map((k) => `AND ${id(k)} IS NOT NULL `).join('')}${dedup})
      SELECT e.__row, ${cols.join(', ')}
      FROM read_parquet(${q(c.entities)}) e ASOF LEFT JOIN f ON ${on})`);
  });
  const outputs = c.views.flatMap((v, vi) => v.outputs.map((o) => ({ o, vi })));
  const joins = c.views.map((_, vi) => `LEFT JOIN v${vi} USING (__row)`).join(' ');
  const oracle = `WITH ${parts.join(',\n')}
    SELECT e.__row, ${outputs.map(({ o, vi }) => `v${vi}.${id(o)}`).join(', ')}
    FROM read_parquet(${q(c.entities)}) e ${joins}`;
  const diff = `WITH x AS (${oracle}), o AS (SELECT * FROM read_parquet(${q(c.result)}))
    SELECT o.__row, x.__row, ${outputs.map(({ o }) => `o.${id(o)}, x.${id(o)}`).join(', ')}
    FROM o FULL OUTER JOIN x ON o.__row = x.__row
    WHERE o.__row IS NULL OR x.__row IS NULL OR ${outputs.map(({ o }) => `o.${id(o)} IS DISTINCT FROM x.${id(o)}`).join(' OR ')}
    ORDER BY 1 LIMIT 10`;
  const bad = (await conn.runAndReadAll(diff)).getRows();
  const counts = (await conn.runAndReadAll(`SELECT (SELECT count(*) FROM read_parquet(${q(c.result)})),
      (SELECT count(*) FROM read_parquet(${q(c.entities)})),
      (SELECT count(*) FROM (${oracle}) WHERE ${outputs.map(({ o }) => `${id(o)} IS NOT NULL`).join(' OR ')})`)).getRows();
  if (bad.length > 0 || Number(counts[0][0]) !== Number(counts[0][1])) {
    failures++;
    console.error(`FAIL case ${ci}: ours has ${counts[0][0]} rows for ${counts[0][1]} entity rows; first differences ` +
      '(our __row, oracle __row, then ours/oracle per output):');
    for (const r of bad) console.error('  ' + r.map((x) => String(x)).join(' | '));
  } else {
    console.log(`case ${ci}: ${counts[0][0]} rows equal, ${counts[0][2]} with a match`);
  }
}
console.log(`${spec.cases.length} cases checked, ${failures} failures`);
process.exit(failures ? 1 : 0);
