// Drives Strata's Milvus-compatible gRPC API with the official Node SDK
// (@zilliz/milvus2-sdk-node): schema, HNSW index, 10,000 rows inserted in
// batches of 256 with 4 requests in flight, filtered search checked against a
// brute-force scan in JS, query with count(*), upsert, delete by expression,
// partitions, rename, drop, and the error cases (nothing stored by a rejected request).
// MILVUS_ADDRESS=127.0.0.1:PORT [PHASE=main|persist-write|persist-verify]
// node milvus_test.mjs; prints PASS/FAIL lines, exits 1 on any failure. The
// persist phases write a small collection, and (after a kill -9 and restart of
// the server) check that its schema, index, load state and rows survived.
import { MilvusClient, DataType, ErrorCode } from '@zilliz/milvus2-sdk-node';

const address = process.env.MILVUS_ADDRESS;
const DIM = 1024;
const N = 10000;
const BATCH = 256;
const CONCURRENCY = 4;
const SOURCES = ['arxiv', 'wiki', 'web', 'news'];
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
const ok = (res, what) =>
  check(res && (res.error_code === ErrorCode.SUCCESS || res.error_code === 'Success') &&
        (res.code === undefined || res.code === 0),
        `${what}: ${JSON.stringify(res)}`);
const statusOf = res => (res && res.status ? res.status : res);
function expectError(res, fragment, what) {
  const st = statusOf(res);
  check(st && st.error_code !== 'Success' && st.code !== 0, `${what}: expected an error, got ${JSON.stringify(st)}`);
  check(String(st.reason).toLowerCase().includes(fragment.toLowerCase()),
        `${what}: reason ${JSON.stringify(st.reason)} does not mention ${JSON.stringify(fragment)}`);
}

// Deterministic vectors: xorshift32.
let seed = 12345;
function rand() {
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed / 4294967296;
}
function randomVector() {
  const v = new Array(DIM);
  for (let i = 0; i < DIM; i++) v[i] = rand() * 2 - 1;
  return v;
}
function cosine(a, b) {
  let d = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) { d += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i]; }
  return d / Math.sqrt(na * nb);
}

const client = new MilvusClient({ address, timeout: 60000 });
const PHASE = process.env.PHASE || 'main';
if (PHASE !== 'main') {
  const K = 'keep';
  if (PHASE === 'persist-write') {
    await step('persist: write', async () => {
      await client.createCollection({
        collection_name: K,
        fields: [{ name: 'pk', data_type: DataType.VarChar, is_primary_key: true, max_length: 64 },
                 { name: 'v', data_type: DataType.FloatVector, dim: 8 },
                 { name: 'n', data_type: DataType.Int32 }],
        enable_dynamic_field: true,
        index_params: [{ field_name: 'v', index_type: 'IVF_FLAT', metric_type: 'L2', params: { nlist: 4 } }],
      });
      const data = [];
      for (let i = 0; i < 100; i++) data.push({ pk: `key-${i}`, v: Array.from({ length: 8 }, (_, k) => i + k), n: i, color: i % 2 ? 'red' : 'blue' });
      ok((await client.insert({ collection_name: K, data })).status, 'insert');
      // A partition created in a loaded collection is loaded with it.
      ok(await client.createPartition({ collection_name: K, partition_name: 'late' }), 'createPartition');
      const late = Array.from({ length: 10 }, (_, i) => ({ pk: `late-${i}`, v: Array.from({ length: 8 }, (_, k) => 500 + i + k), n: 1000 + i }));
      ok((await client.insert({ collection_name: K, partition_name: 'late', data: late })).status, 'insert into late');
    });
  } else {
    await step('persist: verify after kill -9 and restart', async () => {
      const d = await client.describeCollection({ collection_name: K });
      ok(d.status, 'describe');
      check(d.schema.fields.find(f => f.name === 'pk').data_type === 'VarChar', 'VarChar primary key');
      const ls = await client.getLoadState({ collection_name: K });
      check(ls.state === 'LoadStateLoaded', `load state ${JSON.stringify(ls)}`);
      const res = await client.query({ collection_name: K, filter: 'color == "red" and n < 10', output_fields: ['n', 'color'] });
      ok(res.status, 'query');
      // The SDK's query rows carry dynamic keys under "$meta" (its search rows flatten them).
      const color = r => (r.color !== undefined ? r.color : (r.$meta || {}).color);
      check(res.data.length === 5 && res.data.every(r => color(r) === 'red' && r.pk.startsWith('key-') && r.n < 10),
            JSON.stringify(res.data));
      const s = await client.search({ collection_name: K, data: Array.from({ length: 8 }, (_, k) => 42 + k + 0.1), limit: 2,
                                      output_fields: ['n', 'color'], params: { nprobe: 4 } });
      ok(s.status, 'search');
      // L2 is reported as the squared distance: 8 * 0.1^2.
      check(s.results[0].pk === 'key-42' && Math.abs(s.results[0].score - 0.08) < 1e-4 &&
            s.results[0].color === 'blue', JSON.stringify(s.results));
      check((await client.hasPartition({ collection_name: K, partition_name: 'late' })).value, 'partition survives');
      const inLate = await client.query({ collection_name: K, filter: '', output_fields: ['count(*)'], partition_names: ['late'] });
      ok(inLate.status, 'count in late');
      check(Number(inLate.data[0]['count(*)']) === 10, `rows in late ${JSON.stringify(inLate.data)}`);
      const inDefault = await client.query({ collection_name: K, filter: '', output_fields: ['count(*)'], partition_names: ['_default'] });
      check(Number(inDefault.data[0]['count(*)']) === 100, `rows in _default ${JSON.stringify(inDefault.data)}`);
      ok(await client.dropCollection({ collection_name: K }), 'drop');
    });
  }
  await client.closeConnection();
  process.exit(failures === 0 ? 0 : 1);
}
const C = 'docs';
const rows = [];  // rows[i] = {embedding, text, source, timestamp}
const ids = [];   // ids[i] = the primary key Strata assigned to rows[i] (string)
const countOf = async (expr) => countOfIn(C, expr);
const countOfIn = async (name, expr) => {
  const res = await client.query({ collection_name: name, filter: expr || '', output_fields: ['count(*)'] });
  ok(res.status, 'count query');
  return Number(res.data[0]['count(*)']);
};

await step('connect, version, health', async () => {
  await client.connectPromise;
  const v = await client.getVersion();
  ok(v.status, 'getVersion');
  check(/^v?2\./.test(v.version), `version ${v.version}`);
  const h = await client.checkHealth();
  check(h.isHealthy === true, `health ${JSON.stringify(h)}`);
});

await step('create collection with schema and HNSW index (loaded)', async () => {
  if ((await client.hasCollection({ collection_name: C })).value) await client.dropCollection({ collection_name: C });
  const res = await client.createCollection({
    collection_name: C,
    fields: [
      { name: 'id', data_type: DataType.Int64, is_primary_key: true, autoID: true },
      { name: 'embedding', data_type: DataType.FloatVector, dim: DIM },
      { name: 'text', data_type: DataType.VarChar, max_length: 8192 },
      { name: 'source', data_type: DataType.VarChar, max_length: 256 },
      { name: 'timestamp', data_type: DataType.Int64 },
    ],
    index_params: [{ field_name: 'embedding', index_type: 'HNSW', metric_type: 'COSINE',
                     params: { M: 16, efConstruction: 256 } }],
  });
  ok(res, 'createCollection');
  const has = await client.hasCollection({ collection_name: C });
  check(has.value === true, `hasCollection ${JSON.stringify(has)}`);
  const d = await client.describeCollection({ collection_name: C });
  ok(d.status, 'describeCollection');
  const byName = Object.fromEntries(d.schema.fields.map(f => [f.name, f]));
  check(byName.id.is_primary_key && byName.id.autoID, `id field ${JSON.stringify(byName.id)}`);
  check(byName.id.data_type === 'Int64', `id type ${byName.id.data_type}`);
  check(byName.embedding.data_type === 'FloatVector' && Number(byName.embedding.dim) === DIM,
        `embedding ${JSON.stringify(byName.embedding)}`);
  check(Number(byName.text.max_length) === 8192, `text ${JSON.stringify(byName.text)}`);
  const show = await client.showCollections();
  check(show.data.some(c => c.name === C), `showCollections ${JSON.stringify(show.data)}`);
  const idx = await client.describeIndex({ collection_name: C, field_name: 'embedding' });
  ok(idx.status, 'describeIndex');
  const params = Object.fromEntries(idx.index_descriptions[0].params.map(p => [p.key, p.value]));
  check(params.index_type === 'HNSW' && params.metric_type === 'COSINE', JSON.stringify(params));
  check(JSON.parse(params.params).M === '16', `index params ${params.params}`);
  const ls = await client.getLoadState({ collection_name: C });
  check(ls.state === 'LoadStateLoaded', `load state ${JSON.stringify(ls)}`);
});

await step(`insert ${N} rows in batches of ${BATCH}, ${CONCURRENCY} in flight`, async () => {
  for (let i = 0; i < N; i++) {
    rows.push({ embedding: randomVector(), text: `document ${i} ` + 'x'.repeat(i % 200),
                source: SOURCES[i % SOURCES.length], timestamp: i });
  }
  const batches = [];
  for (let s = 0; s < N; s += BATCH) batches.push(s);
  let next = 0;
  let inserted = 0;
  async function worker() {
    while (next < batches.length) {
      const s = batches[next++];
      const data = rows.slice(s, s + BATCH);
      const res = await client.insert({ collection_name: C, data });
      ok(res.status, `insert at ${s}`);
      const got = res.IDs.int_id.data.map(String);
      check(got.length === data.length, `insert at ${s}: ${got.length} ids`);
      got.forEach((id, k) => { ids[s + k] = id; });
      inserted += Number(res.insert_cnt);
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  check(inserted === N, `insert_cnt total ${inserted}`);
  check(new Set(ids).size === N, 'auto ids are unique');
  const fl = await client.flushSync({ collection_names: [C] });
  ok(fl.status, 'flush');
  const stats = await client.getCollectionStatistics({ collection_name: C });
  check(Number(stats.data.row_count) === N, `statistics ${JSON.stringify(stats)}`);
});

await step('query count(*)', async () => {
  check(await countOf('') === N, 'count(*) of all rows');
  check(await countOf('source == "arxiv"') === N / 4, 'count(*) of arxiv rows');
});

await step('filtered search (source == "arxiv", ef 128) matches brute force', async () => {
  const target = 4 * 37;  // an arxiv row
  const q = rows[target].embedding.map(x => x + (rand() - 0.5) * 0.05);
  const res = await client.search({
    collection_name: C, data: q, limit: 10, filter: 'source == "arxiv"',
    output_fields: ['text', 'source', 'timestamp'], params: { ef: 128 },
  });
  ok(res.status, 'search');
  check(res.results.length === 10, `${res.results.length} results`);
  for (const r of res.results) {
    check(r.source === 'arxiv', `result ${JSON.stringify(r).slice(0, 200)} is not arxiv`);
    const i = Number(r.timestamp);
    check(ids[i] === String(r.id), `result id ${r.id} vs inserted ${ids[i]}`);
    check(r.text === rows[i].text, 'text output field');
  }
  const brute = [];
  rows.forEach((r, i) => { if (r.source === 'arxiv') brute.push([cosine(q, r.embedding), i]); });
  brute.sort((a, b) => b[0] - a[0]);
  check(String(res.results[0].id) === ids[brute[0][1]],
        `nearest ${res.results[0].id}, brute force ${ids[brute[0][1]]}`);
  check(Math.abs(res.results[0].score - brute[0][0]) < 1e-3,
        `score ${res.results[0].score} vs cosine ${brute[0][0]}`);
  const top = new Set(brute.slice(0, 10).map(b => ids[b[1]]));
  const hit = res.results.filter(r => top.has(String(r.id))).length;
  check(hit >= 9, `recall@10 ${hit}/10`);
  for (let k = 1; k < res.results.length; k++) {
    check(res.results[k - 1].score >= res.results[k].score, 'scores descending');
  }
});

await step('search with two query vectors, offset', async () => {
  const res = await client.search({
    collection_name: C, data: [rows[1].embedding, rows[2].embedding], limit: 3, offset: 1,
    output_fields: ['source'],
  });
  ok(res.status, 'search nq=2');
  check(res.results.length === 2 && res.results[0].length === 3, JSON.stringify(res.results).slice(0, 300));
  // offset 1 skips each query's own row (similarity 1).
  check(String(res.results[0][0].id) !== ids[1] && String(res.results[1][0].id) !== ids[2], 'offset');
});

await step('query with expression, output fields, limit and offset', async () => {
  const res = await client.query({
    collection_name: C, filter: 'timestamp >= 100 and timestamp < 200 and source in ["wiki", "web"]',
    output_fields: ['timestamp', 'source'], limit: 10, offset: 5,
  });
  ok(res.status, 'query');
  check(res.data.length === 10, `${res.data.length} rows`);
  for (const r of res.data) {
    const t = Number(r.timestamp);
    check(t >= 100 && t < 200 && (r.source === 'wiki' || r.source === 'web'), JSON.stringify(r));
    check(ids[t] === String(r.id), 'primary key returned');
  }
  const byId = await client.query({ collection_name: C, filter: `id in [${ids[7]}, ${ids[8]}]`,
                                    output_fields: ['text', 'embedding'] });
  ok(byId.status, 'query by ids');
  check(byId.data.length === 2, `by ids: ${byId.data.length}`);
  const r7 = byId.data.find(r => String(r.id) === ids[7]);
  // A COSINE collection keeps its vectors normalised (docs/vector.md): the
  // vector comes back with the inserted direction.
  check(r7 && r7.text === rows[7].text && r7.embedding.length === DIM &&
        cosine(r7.embedding, rows[7].embedding) > 0.99999, 'row 7 with its vector');
});

await step('upsert replaces a row', async () => {
  const row = Object.assign({}, rows[9], { id: ids[9], text: 'replaced' });
  const res = await client.upsert({ collection_name: C, data: [row] });
  ok(res.status, 'upsert');
  const q = await client.query({ collection_name: C, filter: `id == ${ids[9]}`, output_fields: ['text'] });
  check(q.data.length === 1 && q.data[0].text === 'replaced', JSON.stringify(q.data));
  check(await countOf('') === N, 'upsert did not add a row');
});

await step('errors: unknown collection', async () => {
  // The SDK reads the schema of DescribeCollection before the status, so a
  // search on an unknown collection rejects inside the SDK (as against Milvus).
  const s = await client.search({ collection_name: 'nope', data: rows[0].embedding, limit: 3 })
    .then(r => r, e => ({ status: { error_code: 'thrown', code: -1, reason: 'thrown: ' + String(e.message || e) } }));
  expectError(s, '', 'search on an unknown collection');
  const ins = await client.insert({ collection_name: 'nope', data: [rows[0]] })
    .then(r => r, e => ({ status: { error_code: 'thrown', code: -1, reason: String(e.message || e) } }));
  expectError(ins, '', 'insert into an unknown collection');
  const del = await client.deleteEntities({ collection_name: 'nope', expr: 'timestamp > 1' })
    .then(r => r, e => ({ status: { error_code: 'thrown', code: -1, reason: String(e.message || e) } }));
  expectError(del, '', 'delete in an unknown collection');
  const st = await client.getCollectionStatistics({ collection_name: 'nope' });
  expectError(st, 'collection not found[collection=nope]', 'statistics of an unknown collection');
  const ld = await client.loadCollection({ collection_name: 'nope' })
    .then(r => r, e => ({ status: { error_code: 'thrown', code: -1, reason: String(e.message || e) } }));
  expectError(ld, 'collection not found[collection=nope]', 'load an unknown collection');
  const q = await client.query({ collection_name: 'nope', filter: 'timestamp > 1', output_fields: ['count(*)'] })
    .catch(e => ({ status: { error_code: 'thrown', code: -1, reason: String(e.message || e) } }));
  expectError(q, 'not found', 'query on an unknown collection');
  const d = await client.describeCollection({ collection_name: 'nope' });
  expectError(d, 'collection not found', 'describe an unknown collection');
});

await step('errors: wrong dimension, VARCHAR over max_length, malformed expression; nothing stored', async () => {
  const short = Object.assign({}, rows[0], { embedding: rows[0].embedding.slice(0, 1000) });
  const r1 = await client.insert({ collection_name: C, data: [rows[0], short] })
    .catch(e => ({ status: { error_code: 'thrown', code: -1, reason: String(e.message || e) } }));
  expectError(r1, 'dim', 'wrong dimension');
  const long = Object.assign({}, rows[1], { text: 'y'.repeat(9000) });
  const r2 = await client.insert({ collection_name: C, data: [rows[1], long, rows[2]] });
  expectError(r2, 'max length', 'VARCHAR over max_length');
  check(await countOf('') === N, 'rejected inserts stored nothing');
  const r3 = await client.query({ collection_name: C, filter: 'source ==== "arxiv"', output_fields: ['source'], limit: 3 });
  expectError(r3, 'cannot parse expression', 'malformed expression in query');
  const r4 = await client.delete({ collection_name: C, filter: 'timestamp >> 3' });
  expectError(r4, 'cannot parse expression', 'malformed expression in delete');
  const r5 = await client.search({ collection_name: C, data: rows[0].embedding, limit: 3, filter: 'source == ' })
    .catch(e => ({ status: { error_code: 'thrown', code: -1, reason: String(e.message || e) } }));
  expectError(r5, 'cannot parse expression', 'malformed expression in search');
  check(await countOf('') === N, 'rejected deletes removed nothing');
});

await step('delete by expression', async () => {
  const res = await client.delete({ collection_name: C, filter: 'source == "web"' });
  ok(res.status, 'delete');
  check(Number(res.delete_cnt) === N / 4, `delete_cnt ${res.delete_cnt}`);
  check(await countOf('source == "web"') === 0, 'no web rows left');
  check(await countOf('') === N - N / 4, 'count after delete');
  const s = await client.search({ collection_name: C, data: rows[2].embedding, limit: 5, output_fields: ['source'] });
  ok(s.status, 'search after delete');
  check(s.results.every(r => r.source !== 'web'), 'deleted rows are not found');
  const byIds = await client.deleteEntities({ collection_name: C, filter: `id in [${ids[0]}, ${ids[1]}]` });
  ok(byIds.status, 'delete by ids');
  check(await countOf('') === N - N / 4 - 2, 'count after delete by ids');
});

await step('unsupported requests answer an error', async () => {
  const pk = await client.createCollection({
    collection_name: 'pkey', fields: [
      { name: 'id', data_type: DataType.Int64, is_primary_key: true },
      { name: 'k', data_type: DataType.Int64, is_partition_key: true },
      { name: 'v', data_type: DataType.FloatVector, dim: 4 }],
  }).catch(e => e);
  expectError(pk, 'partition key', 'a partition-key field');
  check(!(await client.hasCollection({ collection_name: 'pkey' })).value, 'no partition-key collection created');
  const bad = await client.createCollection({
    collection_name: 'int8vec', fields: [
      { name: 'id', data_type: DataType.Int64, is_primary_key: true },
      { name: 'v', data_type: DataType.Int8Vector, dim: 8 }],
  }).catch(e => e);
  expectError(bad, 'not supported', 'an Int8Vector field');
  check(!(await client.hasCollection({ collection_name: 'int8vec' })).value, 'nothing created');
});

await step('index created after insert (IVF_FLAT, IP) serves the rows as inserted', async () => {
  const L = 'late_index';
  ok(await client.createCollection({
    collection_name: L,
    fields: [{ name: 'id', data_type: DataType.Int64, is_primary_key: true },
             { name: 'v', data_type: DataType.FloatVector, dim: 16 }],
  }), 'create without index');
  const data = Array.from({ length: 300 }, (_, i) => ({ id: i, v: Array.from({ length: 16 }, () => rand() * 2 - 1) }));
  ok((await client.insert({ collection_name: L, data })).status, 'insert before index');
  const notLoaded = await client.loadCollection({ collection_name: L })
    .then(r => r, e => ({ error_code: 'thrown', code: -1, reason: String(e.message || e) }));
  expectError(notLoaded, 'index', 'load without an index');
  ok(await client.createIndex({ collection_name: L, field_name: 'v', index_type: 'IVF_FLAT', metric_type: 'IP',
                                params: { nlist: 8 } }), 'createIndex after insert');
  ok(await client.loadCollectionSync({ collection_name: L }), 'load');
  const q = Array.from({ length: 16 }, () => rand() * 2 - 1);
  const res = await client.search({ collection_name: L, data: q, limit: 1, params: { nprobe: 8 } });
  ok(res.status, 'search');
  const dot = (a, b) => a.reduce((s, x, k) => s + x * b[k], 0);
  let best = 0;
  data.forEach((r, i) => { if (dot(q, r.v) > dot(q, data[best].v)) best = i; });
  check(Number(res.results[0].id) === best, `nearest ${res.results[0].id}, brute force ${best}`);
  check(Math.abs(res.results[0].score - dot(q, data[best].v)) < 1e-3, 'IP score is the inner product of the vectors as inserted');
  ok(await client.dropCollection({ collection_name: L }), 'drop');
});

await step('partitions: create, insert into, search/query by partition, stats, release, drop', async () => {
  const P = 'parts';
  ok(await client.createCollection({
    collection_name: P,
    fields: [{ name: 'id', data_type: DataType.Int64, is_primary_key: true },
             { name: 'v', data_type: DataType.FloatVector, dim: 4 }],
    index_params: [{ field_name: 'v', index_type: 'HNSW', metric_type: 'L2', params: { M: 8, efConstruction: 64 } }],
  }), 'create');
  ok(await client.createPartition({ collection_name: P, partition_name: 'p1' }), 'createPartition');
  check((await client.hasPartition({ collection_name: P, partition_name: 'p1' })).value, 'hasPartition p1');
  check(!(await client.hasPartition({ collection_name: P, partition_name: 'p2' })).value, 'no p2');
  const shown = await client.showPartitions({ collection_name: P });
  ok(shown.status, 'showPartitions');
  check(JSON.stringify([...shown.partition_names].sort()) === '["_default","p1"]', `showPartitions ${JSON.stringify(shown.partition_names)}`);
  const vec = i => [i, i % 7, 1, 0];
  const base = Array.from({ length: 40 }, (_, i) => ({ id: i, v: vec(i) }));
  const inP1 = Array.from({ length: 25 }, (_, i) => ({ id: 100 + i, v: vec(i) }));
  ok((await client.insert({ collection_name: P, data: base })).status, 'insert into _default');
  ok((await client.insert({ collection_name: P, partition_name: 'p1', data: inP1 })).status, 'insert into p1');
  const bad = await client.insert({ collection_name: P, partition_name: 'p2', data: [{ id: 999, v: vec(1) }] });
  expectError(bad.status, 'partition not found', 'insert into an unknown partition');
  const st = await client.getPartitionStatistics({ collection_name: P, partition_name: 'p1' });
  ok(st.status, 'getPartitionStatistics');
  check(Number(st.data.row_count) === 25, `p1 row_count ${JSON.stringify(st)}`);
  ok(await client.loadCollectionSync({ collection_name: P }), 'load');
  const res = await client.search({ collection_name: P, data: vec(3), limit: 10, partition_names: ['p1'] });
  ok(res.status, 'search in p1');
  check(res.results.length === 10 && res.results.every(r => Number(r.id) >= 100), `search p1 ids ${res.results.map(r => r.id)}`);
  check(Number(res.results[0].id) === 103, `nearest in p1 is 103, got ${res.results[0].id}`);
  const all = await client.search({ collection_name: P, data: vec(3), limit: 2 });
  check(all.results.some(r => Number(r.id) === 3), 'without partition_names both partitions are searched');
  const count = async parts => Number((await client.query({ collection_name: P, filter: '', output_fields: ['count(*)'], partition_names: parts })).data[0]['count(*)']);
  check(await count(['p1']) === 25, 'count in p1');
  check(await count(['_default']) === 40, 'count in _default');
  check(await count(['_default', 'p1']) === 65, 'count in both');
  const q = await client.query({ collection_name: P, filter: 'id < 110', output_fields: ['id'], partition_names: ['p1'] });
  check(q.data.length === 10 && q.data.every(r => Number(r.id) >= 100), `query p1 ${JSON.stringify(q.data).slice(0, 200)}`);
  const loaded = await client.dropPartition({ collection_name: P, partition_name: 'p1' });
  expectError(loaded, 'loaded', 'dropping a loaded partition');
  expectError(await client.dropPartition({ collection_name: P, partition_name: '_default' }), 'default', 'dropping _default');
  ok(await client.releasePartitions({ collection_name: P, partition_names: ['p1'] }), 'releasePartitions');
  ok(await client.dropPartition({ collection_name: P, partition_name: 'p1' }), 'dropPartition');
  check(!(await client.hasPartition({ collection_name: P, partition_name: 'p1' })).value, 'p1 gone');
  check(await count([]) === 40, 'the dropped partition took its rows');
  const cs = await client.getCollectionStatistics({ collection_name: P });
  check(Number(cs.data.row_count) === 40, `collection row_count after the drop ${JSON.stringify(cs.data)}`);
  ok(await client.dropCollection({ collection_name: P }), 'drop');
});

await step('aliases: create, use, describe, list, alter, drop', async () => {
  ok(await client.createAlias({ collection_name: C, alias: 'current' }), 'createAlias');
  const dup = await client.createAlias({ collection_name: C, alias: C });
  expectError(dup, 'conflict', 'an alias named like a collection');
  check(await countOfIn('current', '') === N - N / 4 - 2, 'count through the alias');
  const s = await client.search({ collection_name: 'current', data: rows[3].embedding, limit: 1, output_fields: ['timestamp'] });
  ok(s.status, 'search through the alias');
  check(String(s.results[0].id) === ids[3], `search via alias: ${JSON.stringify(s.results[0]).slice(0, 200)}`);
  const d = await client.describeAlias({ collection_name: C, alias: 'current' });
  ok(d.status, 'describeAlias');
  check(d.collection === C, `describeAlias ${JSON.stringify(d)}`);
  const l = await client.listAliases({ collection_name: C });
  check(l.aliases.length === 1 && l.aliases[0] === 'current', `listAliases ${JSON.stringify(l)}`);
  const dc = await client.describeCollection({ collection_name: C });
  check(dc.aliases.includes('current'), `describeCollection aliases ${JSON.stringify(dc.aliases)}`);
  const drop = await client.dropCollection({ collection_name: C });
  expectError(drop, 'alias', 'dropping a collection that has an alias');
  const bad = await client.alterAlias({ collection_name: 'nope', alias: 'current' });
  expectError(bad, 'collection not found', 'alter an alias to an unknown collection');
  ok(await client.dropAlias({ collection_name: C, alias: 'current' }), 'dropAlias');
  const gone = await client.describeAlias({ collection_name: C, alias: 'current' });
  expectError(gone, 'alias not found', 'a dropped alias');
});

await step('release, rename, drop', async () => {
  ok(await client.releaseCollection({ collection_name: C }), 'release');
  const s = await client.search({ collection_name: C, data: rows[0].embedding, limit: 1 })
    .catch(e => ({ status: { error_code: 'thrown', code: -1, reason: String(e.message || e) } }));
  expectError(s, 'not loaded', 'search on a released collection');
  ok(await client.renameCollection({ collection_name: C, new_collection_name: 'docs2' }), 'rename');
  check(!(await client.hasCollection({ collection_name: C })).value, 'old name gone');
  ok(await client.loadCollectionSync({ collection_name: 'docs2' }), 'load renamed');
  const res = await client.query({ collection_name: 'docs2', filter: '', output_fields: ['count(*)'] });
  check(Number(res.data[0]['count(*)']) === N - N / 4 - 2, 'renamed collection keeps its rows');
  ok(await client.dropCollection({ collection_name: 'docs2' }), 'drop');
  check(!(await client.hasCollection({ collection_name: 'docs2' })).value, 'dropped');
});

await client.closeConnection();
console.log(failures === 0 ? 'ALL PASSED' : `${failures} FAILED`);
process.exit(failures === 0 ? 0 : 1);
