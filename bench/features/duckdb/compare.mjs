// Checks that two join outputs agree row for row (matched on entity_row).
// Usage: node compare.mjs OURS.parquet THEIRS.parquet
import { DuckDBInstance } from '@duckdb/node-api';
const [a, b] = process.argv.slice(2);
const q = (s) => "'" + s.replaceAll("'", "''") + "'";
const conn = await (await DuckDBInstance.create(':memory:')).connect();
const cols = ['conv_rate', 'acc_rate', 'trips'];
const rows = (await conn.runAndReadAll(`SELECT count(*),
    count(*) FILTER (WHERE x.entity_row IS NULL OR y.entity_row IS NULL OR
      ${cols.map((c) => `x.${c} IS DISTINCT FROM y.${c}`).join(' OR ')}),
    count(x.conv_rate)
  FROM read_parquet(${q(a)}) x FULL OUTER JOIN read_parquet(${q(b)}) y ON x.entity_row = y.entity_row`)).getRows()[0];
console.log(`compare: ${rows[0]} rows, ${rows[1]} differ, ${rows[2]} with conv_rate`);
process.exit(Number(rows[1]) === 0 ? 0 : 1);
