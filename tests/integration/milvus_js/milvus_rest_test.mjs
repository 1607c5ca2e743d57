// Strata's Milvus RESTful API v2 through the official Node SDK's HttpClient
// (@zilliz/milvus2-sdk-node), on the same port as gRPC, with answers checked
// against Milvus's documented REST semantics ({code: 0, data}, int64 as
// strings unless acceptInt64, hits with "id" and "distance", error codes),
// and, with PHASE=auth, Milvus's authentication over both protocols.
// MILVUS_ADDRESS=127.0.0.1:PORT PHASE=rest|auth [TOKEN=user:pass API_KEY=k]
// node milvus_rest_test.mjs; prints PASS/FAIL lines, exits 1 on any failure.
import { HttpClient, MilvusClient, ErrorCode } from '@zilliz/milvus2-sdk-node';

const ADDRESS = process.env.MILVUS_ADDRESS;
const ENDPOINT = `http://${ADDRESS}`;
const PHASE = process.env.PHASE || 'rest';
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
const ok = (res, what) => check(res && res.code === 0, `${what}: ${JSON.stringify(res)}`);
function fails(res, code, fragment, what) {
  check(res && res.code === code, `${what}: expected code ${code}, got ${JSON.stringify(res)}`);
  if (fragment) {
    check(String(res.message).toLowerCase().includes(fragment.toLowerCase()),
          `${what}: message ${JSON.stringify(res.message)} does not mention ${JSON.stringify(fragment)}`);
  }
}

const DIM = 8;
let seed = 4242;
function rand() {
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed / 4294967296;
}
const vec = () => Array.from({ length: DIM }, () => rand() * 2 - 1);
const cos = (a, b) => {
  let d = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) { d += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i]; }
  return d / Math.sqrt(na * nb);
};
const SOURCES = ['arxiv', 'web', 'wiki'];

async function restPhase() {
  const http = new HttpClient({ endpoint: ENDPOINT, timeout: 60000 });
  const http64 = new HttpClient({ endpoint: ENDPOINT, timeout: 60000, acceptInt64: true });
  const C = 'rest_docs';
  const N = 500;
  const rows = [];
  for (let i = 0; i < N; i++) {
    rows.push({ embedding: vec(), text: `doc ${i}`, source: SOURCES[i % 3], timestamp: 1700000000 + i });
  }
  let ids = [];

  await step('REST and gRPC share the port: gRPC still answers', async () => {
    const grpc = new MilvusClient({ address: ADDRESS, timeout: 60000 });
    const v = await grpc.checkHealth();
    check(v.isHealthy === true, JSON.stringify(v));
    await grpc.closeConnection();
  });

  await step('collections/create (custom schema, auto_id, HNSW COSINE)', async () => {
    await http.dropCollection({ collectionName: C });
    const res = await http.createCollection({
      collectionName: C,
      schema: {
        autoId: true,
        enableDynamicField: false,
        fields: [
          { fieldName: 'id', dataType: 'Int64', isPrimary: true },
          { fieldName: 'embedding', dataType: 'FloatVector', elementTypeParams: { dim: DIM } },
          { fieldName: 'text', dataType: 'VarChar', elementTypeParams: { max_length: 8192 } },
          { fieldName: 'source', dataType: 'VarChar', elementTypeParams: { max_length: 256 } },
          { fieldName: 'timestamp', dataType: 'Int64' },
        ],
      },
      indexParams: [{ fieldName: 'embedding', indexName: 'emb', metricType: 'COSINE', indexType: 'HNSW',
                      params: { M: 16, efConstruction: 256 } }],
    });
    ok(res, 'create');
    const d = await http.describeCollection({ collectionName: C });
    ok(d, 'describe');
    check(d.data.collectionName === C, JSON.stringify(d.data));
    check(d.data.autoId === true, 'autoId');
    check(d.data.fields.map((f) => f.name).join() === 'id,embedding,text,source,timestamp', JSON.stringify(d.data.fields));
    check(d.data.indexes.length === 1 && d.data.indexes[0].metricType === 'COSINE', JSON.stringify(d.data.indexes));
    check(d.data.load === 'LoadStateLoaded', `load ${d.data.load}`);
    const has = await http.hasCollection({ collectionName: C });
    check(has.data.has === true, JSON.stringify(has));
    const list = await http.listCollections();
    check(list.data.includes(C), JSON.stringify(list));
  });

  await step('entities/insert in batches: auto ids as strings', async () => {
    for (let b = 0; b < N; b += 100) {
      const res = await http.insert({ collectionName: C, data: rows.slice(b, b + 100) });
      ok(res, 'insert');
      check(res.data.insertCount === 100, JSON.stringify(res.data).slice(0, 200));
      check(typeof res.data.insertIds[0] === 'string', 'int64 ids are strings without acceptInt64');
      ids.push(...res.data.insertIds);
    }
    check(new Set(ids).size === N, 'distinct ids');
  });

  await step('entities/query count(*), filter, limit', async () => {
    const all = await http.query({ collectionName: C, filter: '', outputFields: ['count(*)'] });
    ok(all, 'count');
    check(String(all.data[0]['count(*)']) === String(N), JSON.stringify(all.data));
    const ax = await http64.query({ collectionName: C, filter: 'source == "arxiv"', outputFields: ['count(*)'] });
    check(ax.data[0]['count(*)'] === Math.ceil(N / 3), JSON.stringify(ax.data));
    const page = await http.query({ collectionName: C, filter: 'timestamp >= 1700000490', outputFields: ['text', 'timestamp'], limit: 5 });
    ok(page, 'query');
    check(page.data.length === 5, JSON.stringify(page.data));
    for (const r of page.data) check(Number(r.timestamp) >= 1700000490 && r.text.startsWith('doc '), JSON.stringify(r));
  });

  await step('entities/search with filter and output fields against brute force', async () => {
    const q = vec();
    const res = await http.search({
      collectionName: C, data: [q], annsField: 'embedding', limit: 10, filter: 'source == "arxiv"',
      outputFields: ['text', 'source'], searchParams: { metricType: 'COSINE', params: { ef: 128 } },
    });
    ok(res, 'search');
    check(res.data.length === 10, `got ${res.data.length} hits`);
    const want = rows.map((r, i) => ({ i, s: cos(r.embedding, q) })).filter((x) => rows[x.i].source === 'arxiv')
      .sort((a, b) => b.s - a.s).slice(0, 10);
    const got = res.data.map((h) => h.text);
    const hits = want.filter((w) => got.includes(rows[w.i].text)).length;
    check(hits >= 9, `recall ${hits}/10`);
    for (const h of res.data) {
      check(h.source === 'arxiv', JSON.stringify(h));
      check(typeof h.id === 'string' && ids.includes(h.id), `id ${h.id}`);
      const r = rows[Number(h.text.slice(4))];
      check(Math.abs(h.distance - cos(r.embedding, q)) < 1e-4, `distance ${h.distance}`);
    }
    for (let i = 1; i < res.data.length; i++) check(res.data[i - 1].distance >= res.data[i].distance, 'order');
  });

  await step('entities/get and delete by filter, then by id', async () => {
    const g = await http64.get({ collectionName: C, id: [ids[0], ids[1]], outputFields: ['text'] });
    ok(g, 'get');
    check(g.data.length === 2 && typeof g.data[0].id === 'number', JSON.stringify(g.data));
    const del = await http.delete({ collectionName: C, filter: 'source == "web"' });
    ok(del, 'delete');
    const left = await http64.query({ collectionName: C, filter: '', outputFields: ['count(*)'] });
    check(left.data[0]['count(*)'] === N - Math.floor((N + 1) / 3), JSON.stringify(left.data));
    const web = await http.query({ collectionName: C, filter: 'source == "web"', outputFields: ['text'] });
    check(web.data.length === 0, 'no web rows after delete');
  });

  await step('partitions, aliases, indexes, stats', async () => {
    ok(await http.createPartition({ collectionName: C, partitionName: 'p2024' }), 'create partition');
    const hp = await http.hasPartition({ collectionName: C, partitionName: 'p2024' });
    check(hp.data.has === true, JSON.stringify(hp));
    const lp = await http.listPartitions({ collectionName: C });
    check(lp.data.includes('_default') && lp.data.includes('p2024'), JSON.stringify(lp));
    ok(await http.createAlias({ collectionName: C, aliasName: 'rest_latest' }), 'alias');
    const da = await http.describeAlias({ aliasName: 'rest_latest' });
    check(da.data.collectionName === C, JSON.stringify(da));
    const viaAlias = await http.query({ collectionName: 'rest_latest', filter: '', outputFields: ['count(*)'] });
    ok(viaAlias, 'query through alias');
    ok(await http.dropAlias({ aliasName: 'rest_latest' }), 'drop alias');
    const li = await http.listIndexes({ collectionName: C });
    check(JSON.stringify(li.data) === '["emb"]', JSON.stringify(li));
    const di = await http.describeIndex({ collectionName: C, indexName: 'emb' });
    check(di.data[0].indexType === 'HNSW' && di.data[0].metricType === 'COSINE', JSON.stringify(di));
    const st = await http.getCollectionStatistics({ collectionName: C });
    ok(st, 'stats');
    const ls = await http.getCollectionLoadState({ collectionName: C });
    check(ls.data.loadState === 'LoadStateLoaded', JSON.stringify(ls));
  });

  await step('errors: unknown collection, wrong dimension, bad expression, VARCHAR too long', async () => {
    fails(await http.query({ collectionName: 'no_such_rest', filter: '' }), 100, 'collection', 'unknown collection');
    const before = await http64.query({ collectionName: C, filter: '', outputFields: ['count(*)'] });
    fails(await http.insert({ collectionName: C, data: [{ embedding: [1, 2, 3], text: 'x', source: 's', timestamp: 1 }] }),
          1804, 'dim', 'wrong dimension');
    const bad = await http.query({ collectionName: C, filter: 'timestamp >>> 3' });
    check(bad.code !== 0 && /expr|pars/i.test(bad.message), JSON.stringify(bad));
    const long = await http.insert({ collectionName: C, data: [{ embedding: vec(), text: 'x', source: 'y'.repeat(300), timestamp: 1 }] });
    check(long.code !== 0 && /length/i.test(long.message), JSON.stringify(long));
    const after = await http64.query({ collectionName: C, filter: '', outputFields: ['count(*)'] });
    check(after.data[0]['count(*)'] === before.data[0]['count(*)'], 'nothing stored by refused inserts');
    const nosearch = await http.search({ collectionName: C, data: [[1, 2]], limit: 3 });
    check(nosearch.code !== 0, `wrong query dimension: ${JSON.stringify(nosearch)}`);
  });

  await step('quick setup: dimension only, then drop', async () => {
    ok(await http.createCollection({ collectionName: 'rest_quick', dimension: 4 }), 'quick create');
    const ins = await http.insert({ collectionName: 'rest_quick', data: [{ id: 1, vector: [1, 0, 0, 0], color: 'red' }, { id: 2, vector: [0, 1, 0, 0], color: 'blue' }] });
    ok(ins, 'insert with a dynamic key');
    const s = await http.search({ collectionName: 'rest_quick', data: [[1, 0, 0, 0]], limit: 1, outputFields: ['color'] });
    check(s.data.length === 1 && s.data[0].id === '1' && s.data[0].color === 'red', JSON.stringify(s));
    ok(await http.dropCollection({ collectionName: 'rest_quick' }), 'drop quick');
  });

  await step('collections/drop', async () => {
    ok(await http.dropCollection({ collectionName: C }), 'drop');
    const has = await http.hasCollection({ collectionName: C });
    check(has.data.has === false, JSON.stringify(has));
  });
}

async function authPhase() {
  const TOKEN = process.env.TOKEN;
  const API_KEY = process.env.API_KEY;
  await step('auth: REST without or with a bad token is 401, code 1800, nothing created', async () => {
    for (const cfg of [{}, { token: 'strataroot:wrong-password' }, { token: 'not-a-key' }]) {
      const http = new HttpClient({ endpoint: ENDPOINT, timeout: 30000, ...cfg });
      let err = null;
      try {
        await http.createCollection({ collectionName: 'auth_x', dimension: 4 });
      } catch (e) {
        err = e;
      }
      check(err && err.status === 401 && /1800/.test(err.message), `expected 401 for ${JSON.stringify(cfg)}: ${err}`);
    }
    const good = new HttpClient({ endpoint: ENDPOINT, timeout: 30000, token: TOKEN });
    const has = await good.hasCollection({ collectionName: 'auth_x' });
    check(has.code === 0 && has.data.has === false, JSON.stringify(has));
  });

  await step('auth: REST with user:password and with an API key works', async () => {
    const byUser = new HttpClient({ endpoint: ENDPOINT, timeout: 30000, username: TOKEN.split(':')[0], password: TOKEN.split(':').slice(1).join(':') });
    ok(await byUser.createCollection({ collectionName: 'auth_ok', dimension: 4 }), 'create');
    const byKey = new HttpClient({ endpoint: ENDPOINT, timeout: 30000, token: API_KEY });
    const list = await byKey.listCollections();
    check(list.code === 0 && list.data.includes('auth_ok'), JSON.stringify(list));
  });

  await step('auth: gRPC with a bad token is refused, with a good one works', async () => {
    const bad = new MilvusClient({ address: ADDRESS, timeout: 30000, username: 'strataroot', password: 'wrong-password' });
    // The SDK connects (Connect RPC) in the background: that is refused too.
    let connectError = null;
    await bad.connectPromise.catch((e) => { connectError = e; });
    check(connectError && connectError.code === 16 && /auth check failure/.test(connectError.details),
          `Connect with bad credentials: ${connectError}`);
    let refused = false;
    try {
      const r = await bad.hasCollection({ collection_name: 'auth_ok' });
      refused = !(r && r.status && r.status.error_code === ErrorCode.SUCCESS);
    } catch (e) {
      refused = /auth|unauthenticated|16/i.test(String(e && e.message));
    }
    check(refused, 'bad gRPC credentials were accepted');
    const good = new MilvusClient({ address: ADDRESS, timeout: 30000, token: TOKEN });
    const r = await good.hasCollection({ collection_name: 'auth_ok' });
    check(r.status.error_code === ErrorCode.SUCCESS && r.value === true, JSON.stringify(r));
    const key = new MilvusClient({ address: ADDRESS, timeout: 30000, token: API_KEY });
    const d = await key.dropCollection({ collection_name: 'auth_ok' });
    check(d.error_code === ErrorCode.SUCCESS, JSON.stringify(d));
    await bad.closeConnection().catch(() => {});
    await good.closeConnection();
    await key.closeConnection();
  });
}

if (PHASE === 'auth') await authPhase();
else await restPhase();
console.log(failures === 0 ? 'ALL PASS' : `${failures} FAILED`);
process.exit(failures === 0 ? 0 : 1);
