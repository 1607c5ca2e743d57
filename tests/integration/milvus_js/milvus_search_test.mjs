// Milvus search features through the official Node SDK
// (@zilliz/milvus2-sdk-node), each checked against a brute-force answer
// computed here from Milvus's documented semantics: range search (L2:
// range_filter <= d < radius; COSINE: radius < s <= range_filter),
// group_by_field with group_size, filter templates (exprValues), limit and
// offset, hybrid search with RRFRanker and WeightedRanker, searchIterator and
// queryIterator, FLOAT16/BFLOAT16 vector fields, default values, ARRAY fields
// with array_contains filters, and the
// errors for what is out of range or not supported.
// MILVUS_ADDRESS=127.0.0.1:PORT node milvus_search_test.mjs; prints PASS/FAIL
// lines, exits 1 on any failure.
import { MilvusClient, DataType, ErrorCode, RRFRanker, WeightedRanker } from '@zilliz/milvus2-sdk-node';

const client = new MilvusClient({ address: process.env.MILVUS_ADDRESS, timeout: 60000 });
const C = 'search_features';
const N = 300;
const DIM = 8;
let failures = 0;

function check(cond, what) {
  if (!cond) throw new Error(what);
}
async function step(name, fn) {
  try {
    await fn();
    console.log(`PASS ${name}`);
  } catch (e) {
    failures++;
    console.log(`FAIL ${name}: ${e && e.stack ? e.stack : JSON.stringify(e)}`);
  }
}
const ok = (st, what) => check(st && st.error_code === ErrorCode.SUCCESS, `${what}: ${JSON.stringify(st)}`);
function expectError(res, fragment, what) {
  const st = res && res.status ? res.status : res;
  check(st && st.error_code !== ErrorCode.SUCCESS, `${what}: expected an error, got ${JSON.stringify(st)}`);
  check(String(st.reason).toLowerCase().includes(fragment.toLowerCase()),
        `${what}: reason ${JSON.stringify(st.reason)} does not mention ${JSON.stringify(fragment)}`);
}
const near = (a, b, eps = 1e-4) => Math.abs(a - b) <= eps * Math.max(1, Math.abs(b));
const sameIds = (got, want, what) =>
  check(JSON.stringify(got.map(String)) === JSON.stringify(want.map(String)),
        `${what}: got ${JSON.stringify(got)} want ${JSON.stringify(want)}`);

let seed = 777;
function rand() {
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed / 4294967296;
}
const vec = () => Array.from({ length: DIM }, () => rand() * 2 - 1);
const l2 = (a, b) => a.reduce((s, x, i) => s + (x - b[i]) ** 2, 0);
const cos = (a, b) => {
  let d = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) { d += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i]; }
  return d / Math.sqrt(na * nb);
};
// Rows sorted closest first by the field's metric: [{i, s}].
const ranked = (field, q) => rows.map((r, i) => ({ i, s: field === 'dense' ? l2(r.dense, q) : cos(r.dense2, q) }))
  .sort((x, y) => (field === 'dense' ? x.s - y.s : y.s - x.s));

const rows = [];
for (let i = 0; i < N; i++) rows.push({ id: i, dense: vec(), dense2: vec(), cat: i % 7, tag: `t${i % 5}` });
const q1 = vec();
const q2 = vec();

await step('setup: two vector fields (FLAT L2, FLAT COSINE), 300 rows', async () => {
  if ((await client.hasCollection({ collection_name: C })).value) await client.dropCollection({ collection_name: C });
  ok(await client.createCollection({
    collection_name: C,
    fields: [
      { name: 'id', data_type: DataType.Int64, is_primary_key: true },
      { name: 'dense', data_type: DataType.FloatVector, dim: DIM },
      { name: 'dense2', data_type: DataType.FloatVector, dim: DIM },
      { name: 'cat', data_type: DataType.Int64 },
      { name: 'tag', data_type: DataType.VarChar, max_length: 16 },
    ],
    index_params: [
      { field_name: 'dense', index_type: 'FLAT', metric_type: 'L2' },
      { field_name: 'dense2', index_type: 'FLAT', metric_type: 'COSINE' },
    ],
  }), 'create');
  const res = await client.insert({ collection_name: C, data: rows });
  ok(res.status, 'insert');
  check(Number(res.insert_cnt) === N, `insert_cnt ${res.insert_cnt}`);
});

await step('search: limit and offset page through the ranking', async () => {
  const want = ranked('dense', q1).slice(3, 8).map(h => h.i);
  const res = await client.search({ collection_name: C, data: q1, anns_field: 'dense', limit: 5, offset: 3 });
  ok(res.status, 'search');
  sameIds(res.results.map(r => r.id), want, 'offset 3 limit 5');
  const bad = await client.search({ collection_name: C, data: q1, anns_field: 'dense', limit: 16000, offset: 1000 });
  expectError(bad, '16384', 'limit + offset over 16384');
});

await step('range search, L2: range_filter <= distance < radius', async () => {
  const all = ranked('dense', q1);
  const radius = (all[20].s + all[21].s) / 2;
  const rangeFilter = (all[4].s + all[5].s) / 2;
  const want = all.filter(h => h.s >= rangeFilter && h.s < radius).map(h => h.i);
  check(want.length === 16, `expected 16 rows in the annulus, got ${want.length}`);
  const res = await client.search({ collection_name: C, data: q1, anns_field: 'dense', limit: 100,
                                    params: { radius, range_filter: rangeFilter } });
  ok(res.status, 'range search');
  sameIds(res.results.map(r => r.id), want, 'L2 annulus');
  check(near(res.results[0].score, all[5].s), `score ${res.results[0].score} vs ${all[5].s}`);
  const bad = await client.search({ collection_name: C, data: q1, anns_field: 'dense', limit: 10,
                                    params: { radius: rangeFilter, range_filter: radius } });
  expectError(bad, 'range_filter must be less than radius', 'L2 with range_filter >= radius');
});

await step('range search, COSINE: radius < similarity <= range_filter', async () => {
  const all = ranked('dense2', q2);
  const rangeFilter = (all[2].s + all[3].s) / 2;
  const radius = (all[12].s + all[13].s) / 2;
  const want = all.filter(h => h.s > radius && h.s <= rangeFilter).map(h => h.i);
  const res = await client.search({ collection_name: C, data: q2, anns_field: 'dense2', limit: 100,
                                    params: { radius, range_filter: rangeFilter } });
  ok(res.status, 'range search');
  sameIds(res.results.map(r => r.id), want, 'COSINE annulus');
  const bad = await client.search({ collection_name: C, data: q2, anns_field: 'dense2', limit: 10,
                                    params: { radius: rangeFilter, range_filter: radius } });
  expectError(bad, 'range_filter must be greater than radius', 'COSINE with range_filter <= radius');
});

await step('group_by_field with group_size and strict_group_size', async () => {
  const all = ranked('dense', q1);
  const groups = new Map();
  for (const h of all) {
    const c = rows[h.i].cat;
    if (!groups.has(c)) { if (groups.size === 3) continue; groups.set(c, []); }
    if (groups.get(c).length < 2) groups.get(c).push(h.i);
  }
  const want = [...groups.values()].flat();
  const res = await client.search({ collection_name: C, data: q1, anns_field: 'dense', limit: 3,
                                    group_by_field: 'cat', group_size: 2, strict_group_size: true,
                                    output_fields: ['cat'] });
  ok(res.status, 'grouped search');
  sameIds(res.results.map(r => r.id), want, 'three groups of two');
  check(res.results.every(r => Number(r.cat) === rows[r.id].cat), JSON.stringify(res.results));
  const bad = await client.search({ collection_name: C, data: q1, anns_field: 'dense', limit: 3, group_by_field: 'dense2' });
  expectError(bad, 'group', 'grouping by a vector field');
});

await step('filter templates (exprValues) in search and query', async () => {
  const ids = [5, 17, 42, 99, 250];
  const res = await client.search({ collection_name: C, data: q1, anns_field: 'dense', limit: 10,
                                    filter: 'id in {ids}', exprValues: { ids } });
  ok(res.status, 'search with template');
  const got = res.results.map(r => Number(r.id)).sort((a, b) => a - b);
  sameIds(got, ids, 'only the templated ids');
  const q = await client.query({ collection_name: C, filter: 'cat == {c} and tag == {t}',
                                 exprValues: { c: 3, t: 't2' }, output_fields: ['id'] });
  ok(q.status, 'query with template');
  const want = rows.filter(r => r.cat === 3 && r.tag === 't2').map(r => r.id);
  sameIds(q.data.map(r => Number(r.id)).sort((a, b) => a - b), want, 'query rows');
  const bad = await client.query({ collection_name: C, filter: 'cat == {nope}', exprValues: { c: 1 }, output_fields: ['id'] });
  expectError(bad, '{nope}', 'a placeholder without a value');
});

const rrf = (lists, k, limit) => {
  const score = new Map();
  for (const l of lists) l.forEach((id, r) => score.set(id, (score.get(id) || 0) + 1 / (k + r + 1)));
  return [...score.entries()].sort((a, b) => b[1] - a[1]).slice(0, limit);
};

await step('hybrid search: RRFRanker(k) over two vector fields', async () => {
  const l1 = ranked('dense', q1).slice(0, 10).map(h => h.i);
  const l2list = ranked('dense2', q2).slice(0, 10).map(h => h.i);
  const want = rrf([l1, l2list], 20, 6);
  const res = await client.search({
    collection_name: C,
    data: [{ data: q1, anns_field: 'dense', limit: 10 }, { data: q2, anns_field: 'dense2', limit: 10 }],
    rerank: RRFRanker(20), limit: 6, output_fields: ['tag'],
  });
  ok(res.status, 'hybrid search');
  check(res.results.length === 6, `rows ${res.results.length}`);
  for (let i = 0; i < 6; i++) check(near(res.results[i].score, want[i][1]), `score ${i}: ${res.results[i].score} vs ${want[i][1]}`);
  // Ties (equal RRF scores) may come in any order: compare as sets per score.
  const key = l => l.map(x => `${x[0]}`).sort().join(',');
  check(key(res.results.map(r => [r.id])) === key(want), `ids ${JSON.stringify(res.results.map(r => r.id))} vs ${JSON.stringify(want)}`);
  check(res.results.every(r => r.tag === rows[r.id].tag), 'output field tag');
  const inPart = await client.search({
    collection_name: C, partition_names: ['_default'],
    data: [{ data: q1, anns_field: 'dense', limit: 10 }, { data: q2, anns_field: 'dense2', limit: 10 }],
    rerank: RRFRanker(20), limit: 6,
  });
  ok(inPart.status, 'hybrid search in a partition');
  check(key(inPart.results.map(r => [r.id])) === key(want), 'same rows in _default');
});

await step('hybrid search: WeightedRanker normalises each metric then weighs', async () => {
  const n1 = ranked('dense', q1).slice(0, 10);
  const n2 = ranked('dense2', q2).slice(0, 10);
  const score = new Map();
  for (const h of n1) score.set(h.i, (score.get(h.i) || 0) + 0.7 * (1 - 2 * Math.atan(h.s) / Math.PI));
  for (const h of n2) score.set(h.i, (score.get(h.i) || 0) + 0.3 * ((1 + h.s) / 2));
  const want = [...score.entries()].sort((a, b) => b[1] - a[1]).slice(2, 7);
  const res = await client.search({
    collection_name: C,
    data: [{ data: q1, anns_field: 'dense', limit: 10 }, { data: q2, anns_field: 'dense2', limit: 10 }],
    rerank: WeightedRanker([0.7, 0.3]), limit: 5, offset: 2,
  });
  ok(res.status, 'hybrid search');
  sameIds(res.results.map(r => r.id), want.map(w => w[0]), 'weighted order');
  for (let i = 0; i < 5; i++) check(near(res.results[i].score, want[i][1]), `score ${i}`);
  const bad = await client.search({
    collection_name: C,
    data: [{ data: q1, anns_field: 'dense', limit: 10 }, { data: q2, anns_field: 'dense2', limit: 10 }],
    rerank: WeightedRanker([0.7]), limit: 5,
  });
  expectError(bad, 'weights', 'one weight for two requests');
});

await step('searchIterator: batches in distance order, each row once', async () => {
  const want = ranked('dense', q1).slice(0, 50).map(h => h.i);
  const it = await client.searchIterator({ collection_name: C, data: q1, anns_field: 'dense', batchSize: 7, limit: 50 });
  const got = [];
  let batches = 0;
  for await (const batch of it) {
    if (!batch) break;
    batches++;
    check(batch.length <= 7, `batch of ${batch.length}`);
    for (const r of batch) got.push(r.id);
  }
  check(batches >= 8, `batches ${batches}`);
  sameIds(got, want, 'iterated ids');
});

await step('queryIterator: every matching row once, in primary-key order', async () => {
  const want = rows.filter(r => r.cat < 3).map(r => r.id);
  const it = await client.queryIterator({ collection_name: C, filter: 'cat < 3', batchSize: 40, output_fields: ['id', 'cat'] });
  const got = [];
  for await (const batch of it) {
    if (!batch) break;
    for (const r of batch) got.push(Number(r.id));
  }
  sameIds(got, want, 'iterated rows');
});

await step('FLOAT16 and BFLOAT16 vector fields: insert, search, read back', async () => {
  for (const [type, name] of [[DataType.Float16Vector, 'half16'], [DataType.BFloat16Vector, 'bhalf16']]) {
    if ((await client.hasCollection({ collection_name: name })).value) await client.dropCollection({ collection_name: name });
    ok(await client.createCollection({
      collection_name: name,
      fields: [{ name: 'id', data_type: DataType.Int64, is_primary_key: true },
               { name: 'v', data_type: type, dim: 4 }],
      index_params: [{ field_name: 'v', index_type: 'HNSW', metric_type: 'L2', params: { M: 8, efConstruction: 32 } }],
    }), `create ${name}`);
    const data = [0, 1, 2, 3].map(i => ({ id: i, v: [i, i / 2, 0.25, -i] }));
    ok((await client.insert({ collection_name: name, data })).status, `insert ${name}`);
    const d = await client.describeCollection({ collection_name: name });
    check(d.schema.fields.find(f => f.name === 'v').data_type === (type === DataType.Float16Vector ? 'Float16Vector' : 'BFloat16Vector'),
          `${name} type ${JSON.stringify(d.schema.fields)}`);
    const res = await client.search({ collection_name: name, data: [2, 1, 0.25, -2.1], limit: 2, output_fields: ['v'] });
    ok(res.status, `search ${name}`);
    sameIds(res.results.map(r => r.id), [2, 3], `${name} nearest`);
    check(near(res.results[0].score, 0.01, 0.05), `${name} score ${res.results[0].score}`);
    const q = await client.query({ collection_name: name, filter: 'id == 3', output_fields: ['v'] });
    ok(q.status, `query ${name}`);
    const v = Array.from(q.data[0].v);
    check(v.length === 4 && [3, 1.5, 0.25, -3].every((x, i) => Math.abs(v[i] - x) < 1e-6), `${name} read back ${JSON.stringify(v)}`);
    ok(await client.dropCollection({ collection_name: name }), `drop ${name}`);
  }
});

await step('default_value: rows that omit a field get its default', async () => {
  const D = 'defaults';
  if ((await client.hasCollection({ collection_name: D })).value) await client.dropCollection({ collection_name: D });
  ok(await client.createCollection({
    collection_name: D,
    fields: [{ name: 'id', data_type: DataType.Int64, is_primary_key: true },
             { name: 'v', data_type: DataType.FloatVector, dim: 2 },
             { name: 'source', data_type: DataType.VarChar, max_length: 16, default_value: 'unknown' },
             { name: 'n', data_type: DataType.Int64, default_value: 7 }],
    index_params: [{ field_name: 'v', index_type: 'FLAT', metric_type: 'L2' }],
  }), 'create with defaults');
  const d = await client.describeCollection({ collection_name: D });
  const src = d.schema.fields.find(f => f.name === 'source');
  check(src.default_value === 'unknown' || (src.default_value && src.default_value.string_data === 'unknown'),
        `described default ${JSON.stringify(src)}`);
  ok((await client.insert({ collection_name: D, data: [{ id: 1, v: [0, 0], source: 'web', n: 1 }, { id: 2, v: [1, 1] }] })).status, 'insert');
  const q = await client.query({ collection_name: D, filter: 'id in [1, 2]', output_fields: ['source', 'n'] });
  ok(q.status, 'query');
  const byId = Object.fromEntries(q.data.map(r => [String(r.id), r]));
  check(byId['1'].source === 'web' && Number(byId['1'].n) === 1, JSON.stringify(q.data));
  check(byId['2'].source === 'unknown' && Number(byId['2'].n) === 7, JSON.stringify(q.data));
  ok(await client.dropCollection({ collection_name: D }), 'drop');
  // The SDK's createCollection throws the failed status.
  const bad = await client.createCollection({
    collection_name: 'bad_default',
    fields: [{ name: 'id', data_type: DataType.Int64, is_primary_key: true },
             { name: 'v', data_type: DataType.FloatVector, dim: 2 },
             { name: 's', data_type: DataType.VarChar, max_length: 4, default_value: 'too long' }],
  }).catch(e => e);
  expectError(bad, 'default value', 'a default over max_length');
});

await step('ARRAY fields: insert, array_contains filters, read back, capacity checked', async () => {
  const A = 'arrays';
  if ((await client.hasCollection({ collection_name: A })).value) await client.dropCollection({ collection_name: A });
  ok(await client.createCollection({
    collection_name: A,
    fields: [{ name: 'id', data_type: DataType.Int64, is_primary_key: true },
             { name: 'v', data_type: DataType.FloatVector, dim: 2 },
             { name: 'tags', data_type: DataType.Array, element_type: DataType.VarChar, max_capacity: 3, max_length: 8 },
             { name: 'nums', data_type: DataType.Array, element_type: DataType.Int64, max_capacity: 4 }],
    index_params: [{ field_name: 'v', index_type: 'FLAT', metric_type: 'L2' }],
  }), 'create');
  const data = [{ id: 1, v: [0, 0], tags: ['a', 'b'], nums: [1, 2] },
                { id: 2, v: [1, 0], tags: ['b'], nums: [3] },
                { id: 3, v: [2, 0], tags: [], nums: [] }];
  ok((await client.insert({ collection_name: A, data })).status, 'insert');
  const q = await client.query({ collection_name: A, filter: 'array_contains(tags, "b")', output_fields: ['tags', 'nums'] });
  ok(q.status, 'query');
  sameIds(q.data.map(r => Number(r.id)).sort(), [1, 2], 'array_contains');
  const one = q.data.find(r => Number(r.id) === 1);
  check(JSON.stringify(one.tags) === '["a","b"]' && one.nums.map(Number).join(',') === '1,2', JSON.stringify(one));
  const any = await client.query({ collection_name: A, filter: 'array_contains_any(nums, [2, 3])', output_fields: ['id'] });
  sameIds(any.data.map(r => Number(r.id)).sort(), [1, 2], 'array_contains_any');
  const over = await client.insert({ collection_name: A, data: [{ id: 4, v: [0, 1], tags: ['a', 'b', 'c', 'd'], nums: [] }] });
  expectError(over.status, 'max_capacity', 'four tags in a capacity of three');
  ok(await client.dropCollection({ collection_name: A }), 'drop');
});

await step('drop', async () => ok(await client.dropCollection({ collection_name: C }), 'drop'));
await client.closeConnection();
process.exit(failures === 0 ? 0 : 1);
