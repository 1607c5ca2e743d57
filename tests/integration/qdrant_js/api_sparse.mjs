// Sparse vectors, hybrid queries, Strata's BM25 helper, snapshots (create,
// list, download, delete, recover from a file location and from an upload),
// collectionExists, telemetry, and the timeout / consistency parameters,
// through @qdrant/js-client-rest (plain fetch for the routes it does not
// wrap). Called by qdrant_test.mjs with its reporters.

const C = 'hybrid';

export async function runSparse(client, rest, check, expectError) {
  await client.createCollection(C, {
    vectors: { dense: { size: 2, distance: 'Dot' } },
    sparse_vectors: { text: { modifier: 'idf' }, plain: { index: { on_disk: false } } },
  });
  const info = await client.getCollection(C);
  check('sparse_vectors in the collection config',
    info.config.params.sparse_vectors && info.config.params.sparse_vectors.text.modifier === 'idf',
    JSON.stringify(info.config.params));
  const docs = ['red apple pie', 'green apple', 'red car engine', 'fast red car', 'blue sky'];
  await client.upsert(C, {
    wait: true,
    points: docs.map((t, i) => ({
      id: i + 1,
      vector: { dense: [1, i], plain: { indices: [i, 100], values: [1, 0.5] } },
      payload: { body: t },
    })),
  });
  const bm = await rest.call('POST', `/collections/${C}/strata/bm25?wait=true`, { text_field: 'body', using: 'text' });
  check('strata/bm25 fills the sparse field', bm.points === 5, JSON.stringify(bm));
  const q = await rest.call('POST', '/strata/bm25/encode', { text: 'red car' });
  const sparse = await client.query(C, { query: q, using: 'text', limit: 3, with_payload: true });
  check('query with a sparse vector ranks by BM25',
    sparse.points.length === 3 && [3, 4].includes(sparse.points[0].id) && sparse.points[2].id === 1,
    JSON.stringify(sparse.points));
  const plain = await client.query(C, { query: { indices: [2, 100], values: [2, 1] }, using: 'plain', limit: 2 });
  check('sparse dot product without a modifier',
    plain.points[0].id === 3 && Math.abs(plain.points[0].score - 2.5) < 1e-5, JSON.stringify(plain.points));
  const fused = await client.query(C, {
    prefetch: [{ query: [0, 1], using: 'dense', limit: 5 }, { query: q, using: 'text', limit: 5 }],
    query: { fusion: 'rrf' }, limit: 2,
  });
  // dense ranks 5, 4, 3, 2, 1; BM25 ranks 3, 4 (a tie, by id), 1. RRF (k = 2):
  // id 3 = 1/5 + 1/3, id 4 = 1/4 + 1/4, id 5 = 1/3.
  check('prefetch dense + sparse fused with rrf',
    fused.points.length === 2 && fused.points[0].id === 3 && fused.points[1].id === 4 &&
    Math.abs(fused.points[0].score - (1 / 5 + 1 / 3)) < 1e-5, JSON.stringify(fused.points));
  const dbsf = await client.query(C, {
    prefetch: [{ query: [0, 1], using: 'dense', limit: 5 }, { query: q, using: 'text', limit: 5 }],
    query: { fusion: 'dbsf' }, limit: 2,
  });
  check('prefetch dense + sparse fused with dbsf', dbsf.points.length === 2, JSON.stringify(dbsf.points));
  const [p2] = await client.retrieve(C, { ids: [2], with_vector: true });
  check('retrieve returns the sparse vectors',
    JSON.stringify(p2.vector.plain) === JSON.stringify({ indices: [1, 100], values: [1, 0.5] }) && p2.vector.text,
    JSON.stringify(p2.vector));
  await client.updateVectors(C, { wait: true, points: [{ id: 5, vector: { plain: { indices: [2], values: [9] } } }] });
  const up = await client.query(C, { query: { indices: [2], values: [1] }, using: 'plain', limit: 1 });
  check('updateVectors replaces a sparse vector', up.points[0].id === 5 && up.points[0].score === 9,
    JSON.stringify(up.points));
  await expectError('a sparse vector with repeated indices is 400', () =>
    client.upsert(C, { wait: true, points: [{ id: 9, vector: { plain: { indices: [1, 1], values: [1, 1] } } }] }),
  400, 'unique');
  await expectError('sparse on_disk is refused', () =>
    client.createCollection('sparse_bad', { sparse_vectors: { s: { index: { on_disk: true } } } }), 400, 'on_disk');

  // --- exists, telemetry, timeout and consistency
  const ex = await client.collectionExists(C);
  const nx = await client.collectionExists('no_such_collection');
  check('collectionExists', ex.exists === true && nx.exists === false, JSON.stringify([ex, nx]));
  const tel = await rest.call('GET', '/telemetry');
  check('telemetry counts collections', tel.collections.number_of_collections >= 1, JSON.stringify(tel).slice(0, 300));
  const withParams = await client.query(C, { query: [1, 1], using: 'dense', limit: 1, timeout: 30, consistency: 'majority' });
  check('query accepts timeout and consistency', withParams.points.length === 1, JSON.stringify(withParams));
  await expectError('consistency for 3 replicas is 400', () =>
    client.query(C, { query: [1, 1], using: 'dense', consistency: 3 }), 400, 'replica');

  // --- snapshots
  const snap = await client.createSnapshot(C);
  const list = await client.listSnapshots(C);
  check('listSnapshots has the new one', list.some((s) => s.name === snap.name), JSON.stringify(list));
  const resp = await rest.call('GET', `/collections/${C}/snapshots/${snap.name}`, undefined, true);
  const bytes = new Uint8Array(await resp.arrayBuffer());
  check('snapshot download is a tar archive', bytes.length > 1024 &&
    new TextDecoder().decode(bytes.slice(257, 262)) === 'ustar', `${bytes.length} bytes`);
  await client.delete(C, { wait: true, points: [1, 2, 3, 4, 5] });
  const form = new FormData();
  form.append('snapshot', new Blob([bytes]), `${snap.name}.tar`);
  const upl = await rest.call('POST', `/collections/${C}/snapshots/upload?priority=snapshot`, form);
  check('snapshot upload recovers the collection', upl === true, JSON.stringify(upl));
  const after = await client.count(C, {});
  check('the recovered collection has its points back', after.count === 5, JSON.stringify(after));
  const back = await client.query(C, { query: q, using: 'text', limit: 1 });
  check('sparse search works after recovery', [3, 4].includes(back.points[0].id), JSON.stringify(back.points));
  await expectError('an upload with a wrong checksum is 400', async () => {
    const f = new FormData();
    f.append('snapshot', new Blob([bytes]), 'x.tar');
    await rest.call('POST', `/collections/${C}_copy/snapshots/upload?checksum=${'0'.repeat(64)}`, f);
  }, 400, 'checksum');
  await expectError('recover from an http location is 400', () =>
    client.recoverSnapshot(`${C}_copy`, { location: 'http://example.com/x.snapshot' }), 400, 'upload');
  if (process.env.SNAPSHOT_DIR) {
    const loc = `file://${process.env.SNAPSHOT_DIR}/${C}/${snap.name}.tar`;
    const rec = await client.recoverSnapshot(`${C}_copy`, { location: loc });
    const copy = await client.count(`${C}_copy`, {});
    check('recoverSnapshot from a file location', rec === true && copy.count === 5, JSON.stringify([rec, copy]));
  }
  const del = await client.deleteSnapshot(C, snap.name);
  const list2 = await client.listSnapshots(C);
  check('deleteSnapshot removes it', del === true && !list2.some((s) => s.name === snap.name), JSON.stringify(list2));
  await expectError('downloading a deleted snapshot is 404', () =>
    rest.call('GET', `/collections/${C}/snapshots/${snap.name}`, undefined, true), 404);
}
