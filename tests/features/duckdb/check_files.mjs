// DuckDB as the oracle for files Strata wrote.
//
// Usage: node check_files.mjs SPEC.json
// SPEC: {"files": [{"path", "format": "parquet"|"csv", "columns": [{"name", "kind", "duckdb_type"}],
//        "rows": [[cell, ...], ...], "row_groups": N (parquet), "null_counts": [n per column]}]}
// A cell is null or a string: integers and timestamps (in the column's unit) in
// decimal, floats in shortest round-trip form (or nan/inf/-inf), binaries in hex.
// Exits 0 when DuckDB reads every file back with the same types and values.
import { readFileSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';

const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
let failures = 0;
const fail = (msg) => { failures++; if (failures <= 30) console.error('FAIL ' + msg); };
const q = (s) => "'" + s.replaceAll("'", "''") + "'";
const ident = (s) => '"' + s.replaceAll('"', '""') + '"';

function expr(col) {
  const c = ident(col.name);
  switch (col.kind) {
    case 'float': case 'double': return `CAST(${c} AS DOUBLE)`;
    case 'timestamp_ms': return `CAST(epoch_ms(${c}) AS VARCHAR)`;
    case 'timestamp_us': return `CAST(epoch_us(${c}) AS VARCHAR)`;
    case 'timestamp_ns': return `CAST(epoch_ns(${c}) AS VARCHAR)`;
    case 'date': return `CAST(${c} - DATE '1970-01-01' AS VARCHAR)`;
    case 'binary': return `lower(hex(${c}))`;
    default: return `CAST(${c} AS VARCHAR)`;
  }
}

function sameFloat(got, want) {
  const w = want === 'nan' ? NaN : want === 'inf' ? Infinity : want === '-inf' ? -Infinity : parseFloat(want);
  if (Number.isNaN(w)) return Number.isNaN(got);
  return Object.is(got, w);
}

for (const f of spec.files) {
  const src = f.format === 'csv'
    ? `read_csv(${q(f.path)}, header = true, allow_quoted_nulls = false, columns = {${
        f.columns.map((c) => `${q(c.name)}: ${q(c.duckdb_type)}`).join(', ')}})`
    : `read_parquet(${q(f.path)})`;
  // Types as DuckDB sees them.
  const desc = (await conn.runAndReadAll(`DESCRIBE SELECT * FROM ${src}`)).getRows();
  if (desc.length !== f.columns.length) fail(`${f.path}: DuckDB sees ${desc.length} columns, we wrote ${f.columns.length}`);
  f.columns.forEach((c, i) => {
    if (desc[i] && (desc[i][0] !== c.name || desc[i][1] !== c.duckdb_type)) {
      fail(`${f.path}: column ${i} is ${desc[i][0]} ${desc[i][1]} in DuckDB, expected ${c.name} ${c.duckdb_type}`);
    }
  });
  const rows = (await conn.runAndReadAll(`SELECT ${f.columns.map(expr).join(', ')} FROM ${src}`)).getRows();
  if (rows.length !== f.rows.length) fail(`${f.path}: DuckDB reads ${rows.length} rows, we wrote ${f.rows.length}`);
  for (let r = 0; r < Math.min(rows.length, f.rows.length); r++) {
    f.columns.forEach((c, i) => {
      const got = rows[r][i], want = f.rows[r][i];
      let ok;
      if (want === null) ok = got === null;
      else if (got === null) ok = false;
      else if (c.kind === 'float' || c.kind === 'double') ok = sameFloat(got, want);
      else ok = String(got) === want;
      if (!ok) fail(`${f.path}: row ${r} column ${c.name}: DuckDB ${String(got)}, we wrote ${want}`);
    });
  }
  if (f.format === 'parquet' && f.row_groups > 0) {
    const groups = (await conn.runAndReadAll(
      `SELECT count(DISTINCT row_group_id) FROM parquet_metadata(${q(f.path)})`)).getRows();
    if (Number(groups[0][0]) !== f.row_groups) fail(`${f.path}: DuckDB sees ${groups[0][0]} row groups, we wrote ${f.row_groups}`);
    const stats = (await conn.runAndReadAll(
      `SELECT path_in_schema, sum(stats_null_count) FROM parquet_metadata(${q(f.path)}) GROUP BY 1`)).getRows();
    const nulls = new Map(stats.map(([p, n]) => [String(p), Number(n)]));
    f.columns.forEach((c, i) => {
      if (nulls.get(c.name) !== f.null_counts[i]) {
        fail(`${f.path}: statistics say ${nulls.get(c.name)} NULLs in ${c.name}, the data has ${f.null_counts[i]}`);
      }
    });
  }
}
console.log(`${spec.files.length} files checked, ${failures} failures`);
process.exit(failures ? 1 : 0);
