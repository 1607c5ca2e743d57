// SPARSE_FLOAT_VECTOR and BINARY_VECTOR fields through the official Node SDK
// (@zilliz/milvus2-sdk-node), checked against brute force computed here from
// Milvus's documented semantics: sparse search scores by inner product over
// shared indices (rows sharing none are no hits), drop_ratio_search leaves
// out the smallest query values, binary rows are dim/8 bytes scored by
// HAMMING (differing bits); hybrid search fuses dense and sparse lists.
// MILVUS_ADDRESS=127.0.0.1:PORT node milvus_types_test.mjs; prints PASS/FAIL
// lines, exits 1 on any failure.
import { MilvusClient, DataType, ErrorCode, RRFRanker } from '@zilliz/milvus2-sdk-node';

const client = new MilvusClient({ address: process.env.MILVUS_ADDRESS, timeout: 60000 });
const C = 'vector_types';
const N = 200;
let failures = 0;
const check = (cond, what) => { if (!cond) throw new Error(what); };
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
const near = (a, b, eps = 1e-4) => Math.abs(a - b) <= eps * Math.max(1, Math.abs(b));

let seed = 4242;
function rand() {
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed / 4294967296;
}
// Row i: 3 to 6 indices out of 0..39 with weights in (0, 1]; 4 bytes of bits.
const rows = [];
for (let i = 0; i < N; i++) {
  const sv = {};
  const k = 3 + Math.floor(rand() * 4);
  for (let j = 0; j < k; j++) sv[Math.floor(rand() * 40)] = Math.fround(0.01 + rand());
  const bv = [0, 1, 2, 3].map(() => Math.floor(rand() * 256));
  rows.push({ id: i, v: [rand(), rand(), rand(), rand()], sv, bv });
}
const dot = (a, b) => Object.keys(a).reduce((s, k) => s + (b[k] !== undefined ? a[k] * b[k] : 0), 0);
const shares = (a, b) => Object.keys(a).some((k) => b[k] !== undefined);
const popcount = (x) => { let c = 0; while (x) { c += x & 1; x >>= 1; } return c; };
const hamming = (a, b) => a.reduce((s, x, j) => s + popcount(x ^ b[j]), 0);

await step('create, index (FLAT, SPARSE_INVERTED_INDEX, BIN_FLAT), insert, load', async () => {
  await client.dropCollection({ collection_name: C });
  ok(await client.createCollection({
    collection_name: C,
    fields: [
      { name: 'id', data_type: DataType.Int64, is_primary_key: true },
      { name: 'v', data_type: DataType.FloatVector, dim: 4 },
      { name: 'sv', data_type: DataType.SparseFloatVector },
      { name: 'bv', data_type: DataType.BinaryVector, dim: 32 },
    ],
  }), 'create');
  ok(await client.createIndex({ collection_name: C, field_name: 'v', index_type: 'FLAT', metric_type: 'L2' }), 'index v');
  let r = await client.createIndex({ collection_name: C, field_name: 'sv', index_type: 'SPARSE_INVERTED_INDEX', metric_type: 'IP', params: { drop_ratio_build: 0.3 } });
  check(r.error_code !== ErrorCode.SUCCESS && String(r.reason).includes('drop_ratio_build'), `drop_ratio_build: ${JSON.stringify(r)}`);
  ok(await client.createIndex({ collection_name: C, field_name: 'sv', index_type: 'SPARSE_INVERTED_INDEX', metric_type: 'IP', params: { drop_ratio_build: 0 } }), 'index sv');
  // What Strata cannot keep is refused, naming what to use instead.
  r = await client.createIndex({ collection_name: C, field_name: 'bv', index_type: 'BIN_IVF_FLAT', metric_type: 'JACCARD', params: { nlist: 8 } });
  check(r.error_code !== ErrorCode.SUCCESS && String(r.reason).includes('BIN_FLAT'), `BIN_IVF_FLAT JACCARD: ${JSON.stringify(r)}`);
  r = await client.createIndex({ collection_name: C, field_name: 'bv', index_type: 'HNSW', metric_type: 'HAMMING' });
  check(r.error_code !== ErrorCode.SUCCESS, `HNSW on binary: ${JSON.stringify(r)}`);
  ok(await client.createIndex({ collection_name: C, field_name: 'bv', index_type: 'BIN_FLAT', metric_type: 'HAMMING' }), 'index bv');
  const ins = await client.insert({ collection_name: C, data: rows });
  ok(ins.status, 'insert');
  check(Number(ins.insert_cnt) === N, `insert_cnt ${ins.insert_cnt}`);
  ok(await client.loadCollectionSync({ collection_name: C }), 'load');
});

await step('sparse search = brute-force inner product', async () => {
  const q = { 3: 0.7, 11: 0.2, 25: 1.0, 38: 0.4 };
  const want = rows.filter((r) => shares(q, r.sv)).map((r) => ({ id: r.id, s: dot(q, r.sv) }))
    .sort((a, b) => b.s - a.s).slice(0, 10);
  const res = await client.search({ collection_name: C, anns_field: 'sv', data: [q], limit: 10, output_fields: ['sv'] });
  ok(res.status, 'search');
  check(res.results.length === want.length, `hits ${res.results.length} want ${want.length}`);
  res.results.forEach((h, i) => {
    check(near(h.score, want[i].s), `score ${i}: ${h.score} want ${want[i].s}`);
    check(near(dot(q, h.sv), want[i].s), `returned sv of hit ${i} scores ${dot(q, h.sv)}`);
  });
});

await step('drop_ratio_search leaves out the smallest query values', async () => {
  const q = { 3: 0.01, 11: 0.02, 25: 1.0, 38: 0.9 };
  const kept = { 25: 1.0, 38: 0.9 };  // ratio 0.5 of 4 entries: the two smallest dropped
  const want = rows.filter((r) => shares(kept, r.sv)).map((r) => dot(kept, r.sv)).sort((a, b) => b - a).slice(0, 5);
  const res = await client.search({ collection_name: C, anns_field: 'sv', data: [q], limit: 5, params: { drop_ratio_search: 0.5 } });
  ok(res.status, 'search');
  check(res.results.length === want.length, `hits ${res.results.length}`);
  res.results.forEach((h, i) => check(near(h.score, want[i]), `score ${i}: ${h.score} want ${want[i]}`));
});

await step('binary HAMMING search = brute force; rows come back packed', async () => {
  const q = [0b10110010, 0xff, 0x00, 0x5a];
  const want = rows.map((r) => hamming(q, r.bv)).sort((a, b) => a - b).slice(0, 8);
  const res = await client.search({ collection_name: C, anns_field: 'bv', data: [q], limit: 8, output_fields: ['bv'] });
  ok(res.status, 'search');
  check(res.results.length === 8, `hits ${res.results.length}`);
  res.results.forEach((h, i) => {
    check(h.score === want[i], `distance ${i}: ${h.score} want ${want[i]}`);
    check(hamming(q, Array.from(h.bv)) === h.score, `returned bv of ${h.id}: ${JSON.stringify(h.bv)}`);
  });
});

await step('hybrid search dense + sparse (RRF)', async () => {
  const qs = { 5: 1.0, 17: 0.5 };
  const res = await client.hybridSearch({
    collection_name: C,
    data: [
      { anns_field: 'v', data: [0.5, 0.5, 0.5, 0.5], params: {} },
      { anns_field: 'sv', data: qs, params: {} },
    ],
    rerank: RRFRanker(60),
    limit: 5,
  });
  ok(res.status, 'hybrid');
  check(res.results.length === 5, `hits ${res.results.length}`);
  // The top fused hit is first in one list or in both: its RRF score is at least 1/61.
  check(res.results[0].score >= 1 / 61 - 1e-6, `top score ${res.results[0].score}`);
});

await step('drop', async () => ok(await client.dropCollection({ collection_name: C }), 'drop'));

console.log(failures ? `${failures} FAILED` : 'ALL PASSED');
process.exit(failures ? 1 : 0);
