// The Qdrant REST routes that @qdrant/js-client-rest 1.19 no longer wraps
// (search, its batch and groups forms, recommend, discover), called over
// plain fetch with the same body, api-key header and error shape (an Error
// with .status and .data) as the client's own calls.
export function legacyApi(url, apiKey) {
  async function post(path, body) {
    const headers = { 'content-type': 'application/json' };
    if (apiKey) headers['api-key'] = apiKey;
    const r = await fetch(url + path, { method: 'POST', headers, body: JSON.stringify(body) });
    const data = await r.json().catch(() => ({}));
    if (!r.ok) {
      const e = new Error(`Unexpected Response: ${r.status} ${JSON.stringify(data)}`);
      e.status = r.status;
      e.data = data;
      throw e;
    }
    return data.result;
  }
  // Any route (Strata's /strata/... helpers, /telemetry, snapshot files):
  // the parsed "result", or the raw Response when `asResponse`.
  async function call(method, path, body, asResponse = false) {
    const headers = {};
    if (apiKey) headers['api-key'] = apiKey;
    if (body !== undefined && !(body instanceof FormData)) headers['content-type'] = 'application/json';
    const init = { method, headers };
    if (body !== undefined) init.body = body instanceof FormData ? body : JSON.stringify(body);
    const r = await fetch(url + path, init);
    if (asResponse && r.ok) return r;
    const data = await r.json().catch(() => ({}));
    if (!r.ok) {
      const e = new Error(`Unexpected Response: ${r.status} ${JSON.stringify(data)}`);
      e.status = r.status;
      e.data = data;
      throw e;
    }
    return data.result;
  }
  const points = (name) => `/collections/${encodeURIComponent(name)}/points`;
  return {
    search: (n, b) => post(`${points(n)}/search`, b),
    searchBatch: (n, b) => post(`${points(n)}/search/batch`, b),
    searchPointGroups: (n, b) => post(`${points(n)}/search/groups`, b),
    recommend: (n, b) => post(`${points(n)}/recommend`, b),
    recommendBatch: (n, b) => post(`${points(n)}/recommend/batch`, b),
    discoverPoints: (n, b) => post(`${points(n)}/discover`, b),
    discoverBatchPoints: (n, b) => post(`${points(n)}/discover/batch`, b),
    call,
  };
}
