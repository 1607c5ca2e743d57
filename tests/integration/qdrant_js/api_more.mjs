// The rest of the Qdrant API through @qdrant/js-client-rest: update_vectors,
// PATCH of a collection, aliases, order_by, facets, groups, the universal
// query API, recommend and discover. Called by qdrant_test.mjs with its
// check/expectError reporters and its plain-fetch `rest` for the routes the
// 1.19 client no longer wraps, on a collection of its own.

const C = 'more';

function vec(i) {
  // 4-d points on a line with a small twist, so nearest neighbours are known.
  return [i, (i % 3) + 1, 1, 0.5];
}

export async function runMore(client, rest, check, expectError) {
  await client.createCollection(C, {
    vectors: { a: { size: 4, distance: 'Euclid' }, b: { size: 2, distance: 'Dot' } },
  });
  const points = [];
  for (let i = 0; i < 30; i++) {
    points.push({ id: i, vector: { a: vec(i), b: [1, i] }, payload: { color: ['red', 'green', 'blue'][i % 3], n: i } });
  }
  await client.upsert(C, { wait: true, points });

  // --- update_vectors: only the named vector changes
  const uv = await client.updateVectors(C, { wait: true, points: [{ id: 5, vector: { b: [7, 7] } }] });
  check('updateVectors completes', uv.status === 'completed', JSON.stringify(uv));
  const [p5] = await client.retrieve(C, { ids: [5], with_vector: true, with_payload: true });
  check('updateVectors replaced b only',
    JSON.stringify(p5.vector.b) === '[7,7]' && JSON.stringify(p5.vector.a) === JSON.stringify(vec(5)) &&
    p5.payload.color === 'blue', JSON.stringify(p5));
  await expectError('updateVectors of a missing point is 404', () =>
    client.updateVectors(C, { wait: true, points: [{ id: 1, vector: { b: [0, 0] } }, { id: 999, vector: { b: [0, 0] } }] }),
  404, '999');
  const [p1] = await client.retrieve(C, { ids: [1], with_vector: true });
  check('a failed updateVectors changed nothing', JSON.stringify(p1.vector.b) === '[1,1]', JSON.stringify(p1));
  await expectError('updateVectors with a wrong dimension is 400', () =>
    client.updateVectors(C, { points: [{ id: 1, vector: { b: [0, 0, 0] } }] }), 400);
  const bu = await client.batchUpdate(C, { wait: true, operations: [
    { update_vectors: { points: [{ id: 6, vector: { b: [6, 6] } }] } }] });
  check('batchUpdate with update_vectors', bu.length === 1 && bu[0].status === 'completed', JSON.stringify(bu));

  // --- PATCH /collections/{name}
  const up = await client.updateCollection(C, {
    hnsw_config: { m: 24, ef_construct: 120 }, optimizers_config: { deleted_threshold: 0.3 } });
  check('updateCollection returns true', up === true, JSON.stringify(up));
  const info = await client.getCollection(C);
  check('updateCollection applied hnsw_config', info.config.hnsw_config.m === 24 &&
    info.config.hnsw_config.ef_construct === 120 && info.config.optimizer_config.deleted_threshold === 0.3,
  JSON.stringify(info.config));
  await expectError('updateCollection with product quantization is 400', () =>
    client.updateCollection(C, { quantization_config: { product: { compression: 'x16' } } }), 400, 'product');
  await expectError('updateCollection with an unsupported optimizer key is 400', () =>
    client.updateCollection(C, { optimizers_config: { flush_interval_sec: 3 } }), 400, 'flush_interval_sec');

  // --- aliases
  const ua = await client.updateCollectionAliases({ actions: [
    { create_alias: { collection_name: C, alias_name: 'more_alias' } }] });
  check('updateCollectionAliases returns true', ua === true, JSON.stringify(ua));
  const al = await client.getAliases();
  check('getAliases lists it', al.aliases.some((a) => a.alias_name === 'more_alias' && a.collection_name === C),
    JSON.stringify(al));
  const cal = await client.getCollectionAliases(C);
  check('getCollectionAliases lists it', cal.aliases.length === 1 && cal.aliases[0].alias_name === 'more_alias',
    JSON.stringify(cal));
  const viaAlias = await client.count('more_alias', {});
  check('count through an alias', viaAlias.count === 30, JSON.stringify(viaAlias));
  await client.updateCollectionAliases({ actions: [
    { rename_alias: { old_alias_name: 'more_alias', new_alias_name: 'more_alias2' } }] });
  const al2 = await client.getCollectionAliases(C);
  check('rename_alias', al2.aliases.length === 1 && al2.aliases[0].alias_name === 'more_alias2', JSON.stringify(al2));
  await expectError('delete_alias of a missing alias is 404', () =>
    client.updateCollectionAliases({ actions: [{ delete_alias: { alias_name: 'ghost' } }] }), 404, 'ghost');
  await client.updateCollectionAliases({ actions: [{ delete_alias: { alias_name: 'more_alias2' } }] });
  check('delete_alias', (await client.getCollectionAliases(C)).aliases.length === 0);

  // --- scroll order_by, facet, groups
  await expectError('scroll order_by without an index is 400', () =>
    client.scroll(C, { order_by: 'n' }), 400, 'index');
  await client.createPayloadIndex(C, { field_name: 'n', field_schema: 'integer', wait: true });
  await client.createPayloadIndex(C, { field_name: 'color', field_schema: 'keyword', wait: true });
  const ord = await client.scroll(C, { order_by: { key: 'n', direction: 'desc', start_from: 20 }, limit: 3 });
  check('scroll order_by desc from 20', JSON.stringify(ord.points.map((p) => p.id)) === '[20,19,18]',
    JSON.stringify(ord));
  const fc = await client.facet(C, { key: 'color', filter: { must: [{ key: 'n', range: { lt: 10 } }] } });
  // n < 10: red 0,3,6,9 (4), green 1,4,7 (3), blue 2,5,8 (3)
  check('facet counts', fc.hits.length === 3 && fc.hits[0].value === 'red' && fc.hits[0].count === 4 &&
    fc.hits[1].count === 3, JSON.stringify(fc));
  const sg = await rest.searchPointGroups(C, { vector: { name: 'a', vector: vec(10) }, group_by: 'color',
    group_size: 2, limit: 3 });
  check('searchPointGroups', sg.groups.length === 3 && sg.groups[0].id === 'green' &&
    sg.groups[0].hits[0].id === 10 && sg.groups.every((g) => g.hits.length === 2), JSON.stringify(sg));
  const qg = await client.queryGroups(C, { query: vec(10), using: 'a', group_by: 'color', group_size: 1, limit: 2 });
  check('queryGroups', qg.groups.length === 2 && qg.groups[0].hits[0].id === 10, JSON.stringify(qg));

  // --- universal query API
  const near = await client.query(C, { query: vec(7), using: 'a', limit: 3 });
  check('query nearest', near.points[0].id === 7 && near.points.length === 3, JSON.stringify(near));
  // Prefetch on a (points 0..4 nearest 2), re-scored on b: b = [1, i] (5, 6 were changed above).
  const resc = await client.query(C, {
    prefetch: { query: vec(2), using: 'a', limit: 5, filter: { must: [{ key: 'n', range: { lte: 4 } }] } },
    query: [0, 1], using: 'b', limit: 5 });
  check('query re-scores a prefetch', JSON.stringify(resc.points.map((p) => p.id)) === '[4,3,2,1,0]',
    JSON.stringify(resc));
  const rrf = await client.query(C, {
    prefetch: [{ query: vec(3), using: 'a', limit: 5 }, { query: vec(3), using: 'a', limit: 5 }],
    query: { fusion: 'rrf' }, limit: 2, with_payload: ['color'] });
  check('query fusion rrf', rrf.points[0].id === 3 && rrf.points[0].payload.color === 'red' &&
    Object.keys(rrf.points[0].payload).length === 1, JSON.stringify(rrf));
  const dbsf = await client.query(C, {
    prefetch: [{ query: vec(3), using: 'a', limit: 5 }, { query: [0, 1], using: 'b', limit: 5 }],
    query: { fusion: 'dbsf' }, limit: 3 });
  check('query fusion dbsf', dbsf.points.length === 3, JSON.stringify(dbsf));
  const ob = await client.query(C, { query: { order_by: { key: 'n', direction: 'desc' } }, limit: 2 });
  check('query order_by', JSON.stringify(ob.points.map((p) => p.id)) === '[29,28]', JSON.stringify(ob));
  const rq = await client.query(C, { query: { recommend: { positive: [10], negative: [0] } }, using: 'a', limit: 2 });
  check('query recommend excludes the examples', rq.points.length === 2 && !rq.points.some((p) => p.id === 10 || p.id === 0),
    JSON.stringify(rq));
  const qb = await client.queryBatch(C, { searches: [{ query: vec(1), using: 'a', limit: 1 },
    { query: 12, using: 'a', limit: 1 }] });
  check('queryBatch', qb.length === 2 && qb[0].points[0].id === 1 && qb[1].points[0].id !== 12, JSON.stringify(qb));
  await expectError('query fusion without prefetch is 400', () =>
    client.query(C, { query: { fusion: 'rrf' } }), 400, 'prefetch');

  // --- recommend and discover
  const rec = await rest.recommend(C, { positive: [10], negative: [0], using: 'a', limit: 3, strategy: 'best_score' });
  check('recommend best_score', rec.length === 3 && (rec[0].id === 11 || rec[0].id === 9), JSON.stringify(rec));
  const recb = await rest.recommendBatch(C, { searches: [{ positive: [20], using: 'a', limit: 1 }] });
  check('recommendBatch', recb.length === 1 && recb[0].length === 1 && recb[0][0].id !== 20, JSON.stringify(recb));
  const disc = await rest.discoverPoints(C, { target: vec(15), context: [{ positive: 16, negative: 0 }], using: 'a', limit: 2 });
  check('discoverPoints', disc.length === 2 && disc[0].id === 15, JSON.stringify(disc));
  const discb = await rest.discoverBatchPoints(C, { searches: [
    { target: vec(15), context: [{ positive: 16, negative: 0 }], using: 'a', limit: 1 }] });
  check('discoverBatchPoints', discb.length === 1 && discb[0][0].id === 15, JSON.stringify(discb));
}
