// Drives Strata's vector API with the official @qdrant/js-client-rest:
// collections, 10,000 points with payloads, search with and without filters
// (Qdrant JSON and Milvus-style strings), query, retrieve, scroll, count,
// delete, payload indexes, and error cases. Every check prints "ok  ..." or
// "FAIL ..."; the exit status is the number of failures (capped at 100).
//
// Environment: QDRANT_URL (http://127.0.0.1:PORT), QDRANT_API_KEY (optional),
// PHASE ("main" or "verify": after a restart, check what survived).
import { QdrantClient } from '@qdrant/js-client-rest';
import { runMore } from './api_more.mjs';
import { runSparse } from './api_sparse.mjs';
import { legacyApi } from './legacy_rest.mjs';

const url = process.env.QDRANT_URL;
const apiKey = process.env.QDRANT_API_KEY || undefined;
const phase = process.env.PHASE || 'main';
const client = new QdrantClient({ url, apiKey, checkCompatibility: true });
// search and searchBatch: routes the 1.19 client no longer wraps.
const rest = legacyApi(url, apiKey);

const DIM = 32;
const N = 10000;
const SOURCES = ['arxiv', 'web', 'news', 'wiki'];
let failures = 0;

function check(name, cond, detail = '') {
  if (cond) {
    console.log(`ok   ${name}`);
  } else {
    failures++;
    console.log(`FAIL ${name} ${detail}`);
  }
}

async function expectError(name, fn, status, fragment) {
  try {
    await fn();
    failures++;
    console.log(`FAIL ${name}: succeeded, expected HTTP ${status}`);
  } catch (e) {
    const msg = String(e && e.message);
    const got = (e && e.status) || Number((msg.match(/Unexpected Response: (\d+)/) || [])[1]);
    const okStatus = got === status;
    const okText = !fragment || msg.toLowerCase().includes(fragment.toLowerCase()) ||
      JSON.stringify(e.data || {}).toLowerCase().includes(fragment.toLowerCase());
    check(name, okStatus && okText, `status ${got}, message ${msg.slice(0, 300)} ${JSON.stringify(e.data || {}).slice(0, 300)}`);
  }
}

// Deterministic data: a seeded generator, clustered vectors.
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = rng(12345);
const centers = Array.from({ length: 16 }, () => Array.from({ length: DIM }, () => rand() * 2 - 1));
function makeVector(i) {
  const r = rng(i * 7919 + 17);
  const c = centers[i % 16];
  return c.map((x) => x + (r() - 0.5) * 0.6);
}
function normalize(v) {
  const n = Math.sqrt(v.reduce((a, x) => a + x * x, 0)) || 1;
  return v.map((x) => x / n);
}
function payloadOf(i) {
  // arxiv ~1%, news ~9%, wiki ~30%, web the rest
  const m = i % 100;
  const source = m === 0 ? 'arxiv' : m < 10 ? 'news' : m < 40 ? 'wiki' : 'web';
  return { source, year: 2000 + (i % 25), tags: [`t${i % 7}`, `t${i % 11}`], title: `doc ${i}`, n: i };
}
const vectors = new Map();
for (let i = 1; i <= N; i++) vectors.set(i, makeVector(i));

function cosine(a, b) {
  let d = 0;
  const na = normalize(a), nb = normalize(b);
  for (let k = 0; k < a.length; k++) d += na[k] * nb[k];
  return d;
}
function exactTop(q, k, keep) {
  const all = [];
  for (const [id, v] of vectors) if (keep(id)) all.push([cosine(q, v), id]);
  all.sort((x, y) => y[0] - x[0]);
  return all.slice(0, k).map((x) => x[1]);
}
function recall(got, want) {
  const s = new Set(got);
  return want.filter((x) => s.has(x)).length / Math.max(1, want.length);
}

async function main() {
  const name = 'docs';
  // --- collections
  const exists0 = await client.collectionExists(name);
  check('collectionExists before create is false', exists0.exists === false, JSON.stringify(exists0));
  const created = await client.createCollection(name, {
    vectors: {
      size: DIM,
      distance: 'Cosine',
      // Strata's extension travels inside `vectors` (the client forwards it).
      strata: { index: 'HNSW', params: { m: 16, ef_construction: 100 }, segment_rows: 2500,
        payload_schema: { source: 'keyword', year: 'integer', tags: 'keyword[]' } },
    },
  });
  check('createCollection returns true', created === true, JSON.stringify(created));
  await expectError('createCollection twice is 409', () =>
    client.createCollection(name, { vectors: { size: DIM, distance: 'Cosine' } }), 409, 'already exists');
  await expectError('createCollection with size 0 is 400', () =>
    client.createCollection('bad', { vectors: { size: 0, distance: 'Cosine' } }), 400, 'size');
  await expectError('createCollection with Manhattan is 400', () =>
    client.createCollection('bad2', { vectors: { size: 4, distance: 'Manhattan' } }), 400, 'Manhattan');
  const list = await client.getCollections();
  check('getCollections lists it', list.collections.some((c) => c.name === name), JSON.stringify(list));

  // --- upsert 10,000 points in batches (wait=true is the client's default)
  const t0 = Date.now();
  for (let start = 1; start <= N; start += 1000) {
    const points = [];
    for (let i = start; i < start + 1000; i++) points.push({ id: i, vector: vectors.get(i), payload: payloadOf(i) });
    const r = await client.upsert(name, { points });
    if (r.status !== 'completed') check(`upsert batch ${start}`, false, JSON.stringify(r));
  }
  console.log(`upserted ${N} points in ${Date.now() - t0} ms`);
  // Batch form and UUID ids.
  const uuid = '5c56c793-69f3-4fbf-87e6-c4bf54c28c26';
  const rb = await client.upsert(name, {
    batch: { ids: [uuid], vectors: [makeVector(424242)], payloads: [{ source: 'uuid', year: 1999, tags: [] }] },
  });
  check('batch upsert with a UUID id', rb.status === 'completed', JSON.stringify(rb));
  vectors.set(uuid, makeVector(424242));

  const cnt = await client.count(name, { exact: true });
  check('count is 10,001', cnt.count === N + 1, JSON.stringify(cnt));

  const idx = await client.createPayloadIndex(name, { field_name: 'title', field_schema: 'keyword', wait: true });
  check('createPayloadIndex', idx && (idx.status === 'completed' || idx.status === 'acknowledged'), JSON.stringify(idx));

  // --- search without a filter
  const q = vectors.get(42);
  const hits = await rest.search(name, { vector: q, limit: 10, with_payload: true });
  check('search returns 10 hits', hits.length === 10, JSON.stringify(hits).slice(0, 300));
  check('the query point is its own nearest neighbour', hits[0].id === 42 && Math.abs(hits[0].score - 1) < 1e-3,
    JSON.stringify(hits[0]));
  check('search hits carry payloads', hits[0].payload && hits[0].payload.source === payloadOf(42).source,
    JSON.stringify(hits[0]));
  let sumRecall = 0;
  for (let t = 0; t < 20; t++) {
    const qv = makeVector(100000 + t);
    const got = await rest.search(name, { vector: qv, limit: 10, with_payload: false, params: { hnsw_ef: 128 } });
    sumRecall += recall(got.map((h) => h.id), exactTop(qv, 10, () => true));
  }
  check('unfiltered recall@10 >= 0.9', sumRecall / 20 >= 0.9, `recall ${sumRecall / 20}`);

  // --- search with filters: Qdrant JSON at ~1%, ~9%, ~30%, and a Milvus-style string
  for (const [src, label] of [['arxiv', '1%'], ['news', '9%'], ['wiki', '30%']]) {
    let r = 0, bad = 0;
    for (let t = 0; t < 10; t++) {
      const qv = makeVector(200000 + t);
      const got = await rest.search(name, {
        vector: qv, limit: 10, with_payload: true,
        filter: { must: [{ key: 'source', match: { value: src } }] },
      });
      bad += got.filter((h) => h.payload.source !== src).length;
      r += recall(got.map((h) => h.id), exactTop(qv, 10, (id) => typeof id === 'number' && payloadOf(id).source === src));
    }
    check(`filtered search (${label}) returns only matches`, bad === 0, `${bad} bad`);
    check(`filtered search (${label}) recall@10 >= 0.9`, r / 10 >= 0.9, `recall ${r / 10}`);
  }
  const milvus = await rest.search(name, {
    vector: q, limit: 20, with_payload: true, filter: 'source == "wiki" and year >= 2010 and n < 5000',
  });
  check('Milvus-style string filter', milvus.length === 20 &&
    milvus.every((h) => h.payload.source === 'wiki' && h.payload.year >= 2010 && h.payload.n < 5000),
  JSON.stringify(milvus.slice(0, 2)));
  const complex = await rest.search(name, {
    vector: q, limit: 50, with_payload: true,
    filter: {
      must: [{ key: 'year', range: { gte: 2005, lt: 2010 } }],
      should: [{ key: 'tags', match: { any: ['t3', 't5'] } }],
      must_not: [{ key: 'source', match: { value: 'web' } }],
    },
  });
  check('must/should/must_not', complex.length > 0 && complex.every((h) =>
    h.payload.year >= 2005 && h.payload.year < 2010 && h.payload.source !== 'web' &&
    (h.payload.tags.includes('t3') || h.payload.tags.includes('t5'))), JSON.stringify(complex.slice(0, 2)));
  const hasId = await rest.search(name, { vector: q, limit: 10, filter: { must: [{ has_id: [7, 8, 9] }] } });
  check('has_id filter', hasId.length === 3 && hasId.every((h) => [7, 8, 9].includes(h.id)), JSON.stringify(hasId));
  const thr = await rest.search(name, { vector: q, limit: 100, score_threshold: 0.99 });
  check('score_threshold', thr.length >= 1 && thr.every((h) => h.score >= 0.99), JSON.stringify(thr.slice(0, 3)));
  const off = await rest.search(name, { vector: q, limit: 5, offset: 5 });
  check('offset', off.length === 5 && off[0].id === hits[5].id, JSON.stringify(off.map((h) => h.id)));

  // --- batch search
  const batch = await rest.searchBatch(name, {
    searches: [
      { vector: q, limit: 3 },
      { vector: q, limit: 3, filter: { must: [{ key: 'source', match: { value: 'arxiv' } }] }, with_payload: true },
    ],
  });
  check('searchBatch', batch.length === 2 && batch[0].length === 3 && batch[1].every((h) => h.payload.source === 'arxiv'),
    JSON.stringify(batch).slice(0, 300));

  // --- query
  const qr = await client.query(name, { query: q, limit: 5, with_payload: true });
  check('query with a vector', qr.points.length === 5 && qr.points[0].id === 42, JSON.stringify(qr).slice(0, 300));
  const qn = await client.query(name, { query: { nearest: q }, limit: 5, filter: 'source == "wiki"', with_payload: true });
  check('query nearest + string filter', qn.points.length === 5 && qn.points.every((p) => p.payload.source === 'wiki'),
    JSON.stringify(qn).slice(0, 300));
  const qid = await client.query(name, { query: 42, limit: 5 });
  check('query by point id excludes that point', qid.points.length === 5 && qid.points.every((p) => p.id !== 42) &&
    qid.points[0].id === hits[1].id, JSON.stringify(qid).slice(0, 300));
  const qb = await client.queryBatch(name, { searches: [{ query: q, limit: 2 }, { query: q, limit: 4 }] });
  check('queryBatch', qb.length === 2 && qb[0].points.length === 2 && qb[1].points.length === 4, JSON.stringify(qb).slice(0, 200));

  // --- retrieve
  const got = await client.retrieve(name, { ids: [1, 2, 99999, uuid], with_payload: true, with_vector: true });
  check('retrieve skips unknown ids', got.length === 3, JSON.stringify(got.map((p) => p.id)));
  const p1 = got.find((p) => p.id === 1);
  const v1 = normalize(vectors.get(1));
  check('retrieve returns the (normalised) vector', p1 && p1.vector.length === DIM &&
    p1.vector.every((x, k) => Math.abs(x - v1[k]) < 1e-5), JSON.stringify(p1 && p1.vector.slice(0, 3)));
  check('retrieve returns a UUID id as a string', got.some((p) => p.id === uuid), JSON.stringify(got.map((p) => p.id)));

  // --- scroll: every point once, in id order
  let offset = undefined;
  const seen = [];
  for (let pages = 0; pages < 100; pages++) {
    const page = await client.scroll(name, { limit: 999, offset, with_payload: false });
    for (const p of page.points) seen.push(p.id);
    offset = page.next_page_offset;
    if (offset === null || offset === undefined) break;
  }
  check('scroll visits every point once', seen.length === N + 1 && new Set(seen).size === N + 1, `${seen.length}`);
  const numeric = seen.filter((x) => typeof x === 'number');
  check('scroll is in id order (numbers, then UUIDs)', numeric.every((x, k) => k === 0 || numeric[k - 1] < x) &&
    seen[seen.length - 1] === uuid, JSON.stringify(seen.slice(-3)));
  const fs = await client.scroll(name, { limit: 1000, filter: { must: [{ key: 'source', match: { value: 'arxiv' } }] } });
  check('scroll with a filter', fs.points.length === 100 && fs.points.every((p) => p.payload.source === 'arxiv'),
    `${fs.points.length}`);

  // --- count with filters
  const c1 = await client.count(name, { filter: { must: [{ key: 'source', match: { value: 'news' } }] } });
  check('count with a filter', c1.count === 900, JSON.stringify(c1));
  const c2 = await client.count(name, { filter: 'year > 2020 or source == "arxiv"' });
  const want2 = Array.from({ length: N }, (_, k) => k + 1)
    .filter((i) => payloadOf(i).year > 2020 || payloadOf(i).source === 'arxiv').length;
  check('count with a string filter', c2.count === want2, `${c2.count} vs ${want2}`);

  // --- delete by ids and by filter
  const d1 = await client.delete(name, { points: [1, 2, 3], wait: true });
  check('delete by ids', d1.status === 'completed' || d1.status === 'acknowledged', JSON.stringify(d1));
  const d2 = await client.delete(name, { filter: { must: [{ key: 'source', match: { value: 'arxiv' } }] }, wait: true });
  check('delete by filter', !!d2, JSON.stringify(d2));
  const c3 = await client.count(name);
  check('count after deletes', c3.count === N + 1 - 3 - 100, JSON.stringify(c3));
  const gone = await client.retrieve(name, { ids: [1, 2, 3, 100] });
  check('deleted points are gone', gone.length === 0, JSON.stringify(gone));
  const noArxiv = await rest.search(name, { vector: vectors.get(100), limit: 10, with_payload: true });
  check('deleted points are not found by search', noArxiv.every((h) => h.payload.source !== 'arxiv'),
    JSON.stringify(noArxiv.slice(0, 2)));

  // --- errors: each a clear 400/404, and nothing lost
  await expectError('wrong dimension on upsert is 400', () =>
    client.upsert(name, { points: [{ id: 50001, vector: [1, 2, 3] }] }), 400, 'dimension');
  await expectError('NaN (null in JSON) on upsert is 400', () =>
    client.upsert(name, { points: [{ id: 50002, vector: Array(DIM).fill(NaN) }] }), 400, 'number');
  await expectError('wrong dimension on search is 400', () => rest.search(name, { vector: [1, 2] }), 400, 'dimension');
  await expectError('unknown collection is 404', () => rest.search('nope', { vector: q }), 404, 'nope');
  await expectError('malformed JSON filter is 400', () =>
    rest.search(name, { vector: q, filter: { must: [{ key: 'source' }] } }), 400, 'filter');
  await expectError('malformed string filter is 400', () =>
    rest.search(name, { vector: q, filter: 'source == ' }), 400, 'filter expression');
  await expectError('bad point id is 400', () =>
    client.upsert(name, { points: [{ id: 'not-a-uuid', vector: q }] }), 400, 'UUID');
  await expectError('payload that is not an object is 400', () =>
    client.upsert(name, { points: [{ id: 50003, vector: q, payload: [1, 2] }] }), 400, 'object');
  await expectError('typed payload field of the wrong type is 400', () =>
    client.upsert(name, { points: [{ id: 50004, vector: q, payload: { year: 'last year' } }] }), 400, 'year');
  await expectError('a bad point rejects its whole batch', () =>
    client.upsert(name, { points: [{ id: 50005, vector: q }, { id: 50006, vector: [1] }] }), 400, '50006');
  const c4 = await client.count(name);
  check('nothing written by rejected requests', c4.count === c3.count, JSON.stringify(c4));
  const info = await client.getCollection(name);
  check('getCollection reports the points', info.points_count === c3.count && info.config.params.vectors.size === DIM &&
    info.config.params.vectors.distance === 'Cosine', JSON.stringify(info).slice(0, 400));
  check('getCollection reports payload indexes', info.payload_schema.source && info.payload_schema.source.data_type === 'keyword' &&
    info.payload_schema.title, JSON.stringify(info.payload_schema));

  // --- a second collection with a different index, then dropped
  await client.createCollection('scratch', {
    vectors: { size: 4, distance: 'Euclid', strata: { index: 'IVF_FLAT', params: { nlist: 4 }, segment_rows: 50 } },
  });
  const pts = [];
  for (let i = 0; i < 200; i++) pts.push({ id: i, vector: [i, i % 7, i % 3, 1] });
  await client.upsert('scratch', { points: pts });
  const e = await rest.search('scratch', { vector: [10, 3, 1, 1], limit: 1 });
  check('Euclid score is the distance', e[0].id === 10 && Math.abs(e[0].score) < 1e-4, JSON.stringify(e));
  check('deleteCollection', (await client.deleteCollection('scratch')) === true);
  const ex2 = await client.collectionExists('scratch');
  check('collectionExists after delete is false', ex2.exists === false, JSON.stringify(ex2));

  await runMore(client, rest, check, expectError);
  await runSparse(client, rest, check, expectError);
}

async function verify() {
  // After a restart (and a kill -9): everything acknowledged is there.
  const name = 'docs';
  const c = await client.count(name);
  check('after restart: count', c.count === N + 1 - 3 - 100 + 1, JSON.stringify(c));
  const hits = await rest.search(name, { vector: vectors.get(42), limit: 1, with_payload: true });
  check('after restart: search', hits.length === 1 && hits[0].id === 42 && hits[0].payload.source === payloadOf(42).source,
    JSON.stringify(hits));
  const f = await client.count(name, { filter: 'source == "news"' });
  check('after restart: filtered count', f.count === 900 - 3, JSON.stringify(f));  // ids 1-3 were news
  const extra = await client.retrieve(name, { ids: [777777] });
  check('after restart: the point written just before kill -9', extra.length === 1, JSON.stringify(extra));
}

try {
  if (phase === 'main') {
    await main();
  } else if (phase === 'late-write') {
    const r = await client.upsert('docs', { points: [{ id: 777777, vector: makeVector(777777), payload: { source: 'late' } }] });
    check('acknowledged write before kill -9', r.status === 'completed', JSON.stringify(r));
  } else {
    await verify();
  }
} catch (e) {
  failures++;
  console.log(`FAIL unexpected exception: ${e && e.stack ? e.stack : e}`);
  if (e && e.data) console.log(JSON.stringify(e.data).slice(0, 1000));
}
console.log(`${failures} failure(s)`);
process.exit(Math.min(failures, 100));
