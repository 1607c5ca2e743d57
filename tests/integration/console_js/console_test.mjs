// Drives the Strata console in Debian's chromium (headless, loopback only)
// with puppeteer-core. Env: CONSOLE_URL, ACCESS_KEY, SECRET_KEY, UPLOAD_FILE
// (a 20 MiB file), UPLOAD_SHA256, SHOTS (directory for screenshots), CKPT_BUCKET
// (checkpoints of run-42/ and run-43/), FS_URL (a volume), FS_PID (its mount's pid),
// WARM_JOB (the cache dir of a `strata warm` job held at its first request)
// and WARM_GATE (a URL that lets it go on).
// Prints "ok <case>" / "FAIL <case>: why"; exits 1 on any failure.
import puppeteer from 'puppeteer-core';
import fs from 'node:fs';
import path from 'node:path';

const { CONSOLE_URL, ACCESS_KEY, SECRET_KEY, UPLOAD_FILE, UPLOAD_SHA256, SHOTS, CKPT_BUCKET, FS_URL, FS_PID, WARM_JOB, WARM_GATE } = process.env;
let failures = 0;
async function step(name, fn) {
  try { await fn(); console.log('ok ' + name); } catch (e) { failures++; console.log('FAIL ' + name + ': ' + (e && e.message)); }
}
function assert(c, msg) { if (!c) throw new Error(msg); }
const shot = async (page, name) => { if (SHOTS) await page.screenshot({ path: path.join(SHOTS, name + '.png'), fullPage: true }); };

const browser = await puppeteer.launch({
  executablePath: '/usr/bin/chromium', headless: 'new',
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1'],
});
const page = await browser.newPage();
await page.setViewport({ width: 1280, height: 860 });
page.setDefaultTimeout(10000);
page.on('dialog', d => d.accept());
const messageText = () => page.$eval('#message', el => el.hidden ? '' : el.textContent);
const waitMessage = async (re, what) => {
  await page.waitForFunction(r => { const m = document.querySelector('#message'); return !m.hidden && new RegExp(r, 'i').test(m.textContent); }, { timeout: 15000 }, re.source)
    .catch(async () => { throw new Error(what + ': message was ' + JSON.stringify(await messageText())); });
};

try {
  await page.goto(CONSOLE_URL, { waitUntil: 'networkidle0' });
  await step('wrong key shows a clear message', async () => {
    await page.waitForSelector('#login-page:not([hidden])');
    await page.type('#access-key', ACCESS_KEY);
    await page.type('#secret-key', 'not-the-secret');
    await page.click('#sign-in');
    await page.waitForSelector('#login-error:not([hidden])');
    const t = await page.$eval('#login-error', el => el.textContent);
    assert(/wrong access key or secret key/i.test(t), 'login error: ' + t);
    await shot(page, 'signin');
  });
  await step('sign in', async () => {
    await page.$eval('#access-key', el => { el.value = ''; });
    await page.$eval('#secret-key', el => { el.value = ''; });
    await page.type('#access-key', ACCESS_KEY);
    await page.type('#secret-key', SECRET_KEY);
    await page.click('#sign-in');
    await page.waitForSelector('#top:not([hidden])');
    const cookies = await page.cookies();
    const c = cookies.find(x => x.name === 'strata_console');
    assert(c && c.httpOnly && c.sameSite === 'Strict', 'session cookie: ' + JSON.stringify(c));
    assert(await page.evaluate(() => !document.cookie.includes('strata_console')), 'cookie visible to script');
  });
  await step('create a bucket', async () => {
    await page.waitForSelector('#new-bucket');
    await page.type('#new-bucket', 'console-bucket');
    await page.click('#create-bucket');
    await page.waitForFunction(() => [...document.querySelectorAll('#buckets a.open-bucket')].some(a => a.textContent === 'console-bucket'), { timeout: 10000 });
  });
  await step('invalid policy JSON shows a clear message', async () => {
    const rows = await page.$$('#buckets tbody tr');
    for (const r of rows) {
      if ((await r.$eval('a', a => a.textContent)) === 'console-bucket') await (await r.$('.settings')).click();
    }
    await page.waitForSelector('#policy-json');
    await page.$eval('#policy-json', el => { el.value = '{"Version": "2012-10-17", "Statement": ['; });
    await page.click('#policy-save');
    await waitMessage(/policy is not valid JSON/, 'bad JSON');
    await page.$eval('#policy-json', el => { el.value = '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::other-bucket/*"}]}'; });
    await page.click('#policy-save');
    await waitMessage(/MalformedPolicy/, 'policy for another bucket');
    await page.click('#versioning-enable');
    await page.waitForFunction(() => document.querySelector('#versioning-status').textContent === 'Enabled', { timeout: 10000 });
    await shot(page, 'bucket-settings');
  });
  await step('upload 20 MiB with the progress bar', async () => {
    await page.goto(CONSOLE_URL + '#/objects/console-bucket/', { waitUntil: 'networkidle0' });
    await page.waitForSelector('#file-input');
    const seen = new Set();
    const poll = setInterval(async () => { try { seen.add(await page.$eval('#upload-progress', el => el.value)); } catch (_) { } }, 50);
    const input = await page.$('#file-input');
    await input.uploadFile(UPLOAD_FILE);
    await waitMessage(/Uploaded/, 'upload');
    clearInterval(poll);
    const vals = [...seen].filter(v => v > 0 && v < 100);
    assert(vals.length >= 1, 'progress bar never showed an intermediate value: ' + [...seen].join(','));
    assert(await page.$eval('#upload-progress', el => el.value) === 100, 'progress did not reach 100');
    await page.waitForFunction(n => [...document.querySelectorAll('#objects a.details')].some(a => a.textContent === n), { timeout: 10000 }, path.basename(UPLOAD_FILE));
    await shot(page, 'objects');
  });
  await step('browse, details and download byte-identical', async () => {
    const name = path.basename(UPLOAD_FILE);
    const links = await page.$$('#objects a.details');
    for (const l of links) if ((await l.evaluate(a => a.textContent)) === name) await l.click();
    await page.waitForSelector('#object-details');
    const details = await page.$eval('#object-details', el => el.textContent);
    assert(details.includes('20971520'), 'details lack the size: ' + details.slice(0, 300));
    const href = await page.$$eval('#objects a.download', as => as.map(a => a.getAttribute('href')).find(h => h.includes('upload-20m')));
    const hex = await page.evaluate(async h => {
      const r = await fetch(h);
      const d = await crypto.subtle.digest('SHA-256', await r.arrayBuffer());
      return [...new Uint8Array(d)].map(b => b.toString(16).padStart(2, '0')).join('');
    }, href);
    assert(hex === UPLOAD_SHA256, 'downloaded sha256 ' + hex + ' != ' + UPLOAD_SHA256);
  });
  await step('an interrupted multipart upload resumes from the stored parts', async () => {
    const key = 'resume/' + path.basename(UPLOAD_FILE);
    const lastModified = Math.floor(fs.statSync(UPLOAD_FILE).mtimeMs);
    // As if an earlier upload stopped after part 1: the upload id is in localStorage.
    await page.evaluate(async (key, size, lm) => {
      const csrf = (await (await fetch('/console/api/session')).json()).csrf;
      const base = '/console/api/s3/console-bucket/' + key.split('/').map(encodeURIComponent).join('/');
      const c = await fetch(base + '?uploads', { method: 'POST', headers: { 'X-CSRF-Token': csrf } });
      const id = new DOMParser().parseFromString(await c.text(), 'application/xml').querySelector('UploadId').textContent;
      const src = await fetch('/console/api/s3/console-bucket/upload-20m.bin', { headers: { Range: 'bytes=0-8388607' } });
      const part = await src.arrayBuffer();
      const r = await fetch(base + '?partNumber=1&uploadId=' + encodeURIComponent(id), { method: 'PUT', body: part, headers: { 'X-CSRF-Token': csrf } });
      if (!r.ok) throw new Error('part 1: ' + r.status);
      localStorage.setItem('upload:console-bucket/' + key + ':' + size + ':' + lm, id);
    }, key, fs.statSync(UPLOAD_FILE).size, lastModified);
    await page.goto(CONSOLE_URL + '#/objects/console-bucket/resume%2F', { waitUntil: 'networkidle0' });
    await page.waitForSelector('#file-input');
    const parts = [];
    const onReq = req => { const m = /[?&]partNumber=(\d+)/.exec(req.url()); if (m && req.method() === 'PUT') parts.push(Number(m[1])); };
    page.on('request', onReq);
    await (await page.$('#file-input')).uploadFile(UPLOAD_FILE);
    await waitMessage(/Uploaded/, 'resumed upload');
    page.off('request', onReq);
    assert(JSON.stringify(parts) === '[2,3]', 'parts sent on resume: ' + JSON.stringify(parts));
    const hex = await page.evaluate(async k => {
      const r = await fetch('/console/api/s3/console-bucket/' + k.split('/').map(encodeURIComponent).join('/'));
      const d = await crypto.subtle.digest('SHA-256', await r.arrayBuffer());
      return [...new Uint8Array(d)].map(b => b.toString(16).padStart(2, '0')).join('');
    }, key);
    assert(hex === UPLOAD_SHA256, 'resumed object sha256 ' + hex);
  });
  await step('create a vector collection and run a filtered search', async () => {
    await page.goto(CONSOLE_URL + '#/vectors', { waitUntil: 'networkidle0' });
    await page.waitForSelector('#vc-name');
    await page.type('#vc-name', 'console_vectors');
    await page.click('#vc-create');
    await page.waitForSelector('#collections a[href="#/vectors/console_vectors"]', { timeout: 10000 });
    await page.click('#collections a[href="#/vectors/console_vectors"]');
    await page.waitForSelector('#upsert-json');
    const points = { points: [
      { id: 1, vector: [1, 0, 0, 0], payload: { color: 'red' } },
      { id: 2, vector: [0.9, 0.1, 0, 0], payload: { color: 'blue' } },
      { id: 3, vector: [0.8, 0.2, 0, 0], payload: { color: 'red' } },
      { id: 4, vector: [0, 0, 1, 0], payload: { color: 'blue' } }] };
    await page.$eval('#upsert-json', (el, v) => { el.value = v; }, JSON.stringify(points));
    await page.click('#upsert');
    await waitMessage(/upserted/, 'upsert');
    await page.$eval('#search-vector', el => { el.value = '[1, 0, 0, 0]'; });
    await page.$eval('#search-filter', el => { el.value = '{"must":[{"key":"color","match":{"value":"red"}}]}'; });
    await page.click('#search');
    await waitMessage(/result/, 'search');
    const ids = await page.$$eval('#search-results tbody tr', trs => trs.map(t => t.children[0].textContent));
    assert(JSON.stringify(ids) === '["1","3"]', 'filtered search returned ' + JSON.stringify(ids));
    const score = await page.$eval('#search-results tbody tr td.num', el => Number(el.textContent));
    assert(Math.abs(score - 1) < 1e-3, 'score of the exact match: ' + score);
    await shot(page, 'vectors');
  });
  await step('malformed filter shows a clear message', async () => {
    await page.$eval('#search-filter', el => { el.value = '{"must": [ {"key": "color", '; });
    await page.click('#search');
    await waitMessage(/filter is not valid JSON/, 'bad filter JSON');
    await page.$eval('#search-filter', el => { el.value = '{"must":[{"key":"color","nonsense":{"value":"red"}}]}'; });
    await page.click('#search');
    await page.waitForFunction(() => { const m = document.querySelector('#message'); return !m.hidden && m.className === 'error' && !/not valid JSON/.test(m.textContent); }, { timeout: 10000 });
  });
  await step('a Milvus expression filter: checked, then searched', async () => {
    await page.click('input[name=filter-kind][value=milvus]');
    await page.$eval('#search-filter', el => { el.value = 'color != "red"'; });
    await page.click('#filter-check');
    await waitMessage(/filter is valid/, 'check');
    const parsed = await page.$eval('#filter-parsed', el => el.textContent);
    assert(/color/.test(parsed) && parsed !== '—', 'parsed form: ' + parsed);
    await page.click('#search');
    await waitMessage(/result/, 'milvus search');
    const ids = await page.$$eval('#search-results tbody tr', trs => trs.map(t => t.children[0].textContent));
    assert(JSON.stringify(ids) === '["2","4"]', 'expression search returned ' + JSON.stringify(ids));
    await shot(page, 'vectors');
  });
  await step('a malformed Milvus expression shows a clear message', async () => {
    await page.$eval('#search-filter', el => { el.value = 'color == "red" and'; });
    await page.click('#filter-check');
    await waitMessage(/Milvus expression: expected .+ at offset \d+/, 'malformed expression (check)');
    assert(await page.$eval('#message', el => el.className) === 'error', 'not shown as an error');
    await shot(page, 'vectors-filter-error');
    // Searching with it: the Qdrant API's own 400, shown as an error.
    await page.$eval('#message', el => { el.hidden = true; el.textContent = ''; });
    await page.click('#search');
    await page.waitForFunction(() => { const m = document.querySelector('#message'); return !m.hidden && m.className === 'error' && /filter|expect/i.test(m.textContent); }, { timeout: 10000 });
  });
  await step('open a feature view', async () => {
    await page.goto(CONSOLE_URL + '#/features/driver_hourly_stats', { waitUntil: 'networkidle0' });
    await page.waitForSelector('#feature-view', { timeout: 10000 });
    const t = await page.$eval('#feature-view', el => el.textContent);
    assert(t.includes('conv_rate') && t.includes('1d'), 'feature view: ' + t.slice(0, 200));
    await shot(page, 'features');
  });
  await step('a feature view\'s freshness and skew bar chart', async () => {
    await page.waitForFunction(() => { const e = document.querySelector('#source-rows'); return e && e.textContent === '24'; }, { timeout: 10000 });
    const fresh = await page.$eval('#view-freshness', el => el.textContent);
    assert(/Newest event in the source\s*2024-01-02T11:00:00Z/.test(fresh), 'freshness: ' + fresh.slice(0, 300));
    assert(/Newest value materialized\s*2024-01-02T06:00:00Z.*OUTSIDE_MAX_AGE/.test(fresh), 'newest online value: ' + fresh.slice(0, 300));
    assert(/Materialized up to\s*2024-01-02T06:30:00Z/.test(fresh), 'materialized up to: ' + fresh.slice(0, 300));
    // An online lookup: the value is there, but older than the 1d TTL.
    await page.click('#lookup');
    await page.waitForSelector('#lookup-result table', { timeout: 10000 });
    const looked = await page.$eval('#lookup-result', el => el.textContent);
    assert(/OUTSIDE_MAX_AGE/.test(looked), 'lookup: ' + looked.slice(0, 300));
    // Defaults split the source's time range in two: day 1 against day 2.
    const refStart = await page.$eval('#skew-ref-start', el => el.value);
    assert(refStart.startsWith('2024-01-01T00:00'), 'default reference start: ' + refStart);
    await page.$eval('#skew-ref-end', el => { el.value = '2024-01-02T00:00:00'; });
    await page.$eval('#skew-cur-start', el => { el.value = '2024-01-02T00:00:00'; });
    await page.click('#skew-run');
    await waitMessage(/Skew over 12 reference and 12 current rows/, 'skew');
    const bars = await page.$$eval('#skew-chart rect.bar', rs => rs.map(r => [r.dataset.feature, Number(r.dataset.psi), r.getAttribute('class')]));
    assert(bars.length === 2, 'bars: ' + JSON.stringify(bars));
    const conv = bars.find(b => b[0] === 'conv_rate'), trips = bars.find(b => b[0] === 'trips');
    assert(conv && conv[1] > 0.25 && /psi-significant/.test(conv[2]), 'conv_rate bar: ' + JSON.stringify(conv));
    assert(trips && trips[1] < 0.1 && /psi-stable/.test(trips[2]), 'trips bar: ' + JSON.stringify(trips));
    assert(await page.$eval('#skew-chart rect.bar[data-feature="conv_rate"]', r => Number(r.getAttribute('height'))) > 50, 'conv_rate bar is not drawn tall');
    await shot(page, 'features-skew');
    await page.$eval('#skew-ref-start', el => { el.value = '2023-01-01T00:00:00'; });
    await page.$eval('#skew-ref-end', el => { el.value = '2023-01-02T00:00:00'; });
    await page.click('#skew-run');
    await waitMessage(/reference window .* holds no rows/, 'empty window');
  });
  await step('skew against what the feature server served (its log)', async () => {
    await page.click('input[name=skew-current][value=serving_log]');
    const ref = await page.$eval('#skew-ref-end', el => el.value);
    assert(ref.startsWith('2024-01-02T11:00:01'), 'reference end for the log: ' + ref);
    await page.$eval('#skew-ref-end', el => { el.value = '2024-01-02T00:00:00'; });
    await page.click('#skew-run');
    // Served: the python test's lookup of 12 drivers, then this page's own lookup.
    await waitMessage(/Skew over 12 reference and \d+ served rows \(\d+ log file/, 'serving-log skew');
    const src = await page.$eval('#skew-source', el => el.textContent);
    const served = Number((/the serving log, (\d+) row\(s\) served/.exec(src) || [])[1]);
    assert(served > 12, 'source note: ' + src);
    const bars = await page.$$eval('#skew-chart rect.bar', rs => rs.map(r => [r.dataset.feature, Number(r.dataset.psi), r.getAttribute('class')]));
    const conv = bars.find(b => b[0] === 'conv_rate'), trips = bars.find(b => b[0] === 'trips');
    assert(conv && /psi-significant/.test(conv[2]), 'conv_rate bar: ' + JSON.stringify(conv));
    assert(trips && trips[1] < 0.1 && /psi-stable/.test(trips[2]), 'trips bar: ' + JSON.stringify(trips));
    await shot(page, 'features-skew-serving');
    await page.$eval('#skew-cur-start', el => { el.value = '2020-01-01T00:00:00'; });
    await page.$eval('#skew-cur-end', el => { el.value = '2020-01-02T00:00:00'; });
    await page.click('#skew-run');
    await waitMessage(/current window .* holds no rows of the served-vector log/, 'empty log window');
  });
  await step('data path: checkpoints per run and an FS volume\'s sessions', async () => {
    await page.goto(CONSOLE_URL + '#/datapath', { waitUntil: 'networkidle0' });
    await page.waitForSelector('#ckpt-bucket');
    await page.type('#ckpt-bucket', CKPT_BUCKET);
    await page.click('#ckpt-list');
    await page.waitForFunction(() => document.querySelectorAll('h3.ckpt-run').length === 2, { timeout: 15000 });
    const runs = await page.$$eval('h3.ckpt-run', hs => hs.map(h => h.dataset.prefix));
    assert(JSON.stringify(runs) === '["run-42/","run-43/"]', 'runs: ' + JSON.stringify(runs));
    const rows = await page.$$eval('.ckpt-table', ts => [...ts[0].querySelectorAll('tbody tr')].map(r => [r.dataset.step, r.dataset.state, r.children[2].textContent]));
    assert(JSON.stringify(rows) === '[["300","not published","1"],["200","uploaded","2"],["100","uploaded","2"]]', 'run-42: ' + JSON.stringify(rows));
    await page.type('#fs-url', FS_URL);
    await page.click('#fs-show');
    await page.waitForSelector('#fs-sessions', { timeout: 10000 });
    const vol = await page.$eval('#fs-format', el => el.textContent);
    assert(vol.includes('consolevol'), 'volume: ' + vol.slice(0, 200));
    const sess = await page.$$eval('#fs-sessions tbody tr', trs => trs.map(t => t.textContent));
    if (FS_PID) assert(sess.length === 1 && sess[0].includes(FS_PID) && sess[0].includes('alive'), 'sessions: ' + JSON.stringify(sess));
    // Local checkpoints on the server's disk: run-42 with a save in progress.
    await page.waitForSelector('.ckpt-local-table', { timeout: 10000 });
    const local = await page.$$eval('h3.ckpt-local-run', hs => hs.map(h => h.dataset.dir.split('/').pop()));
    assert(JSON.stringify(local) === '["local-run-42","local-run-43"]', 'local runs: ' + JSON.stringify(local));
    const lrows = await page.$$eval('.ckpt-local-table', ts => [...ts[0].querySelectorAll('tbody tr')].map(r => [r.dataset.step, r.dataset.state]));
    assert(JSON.stringify(lrows) === '[["300","partial"],["200","complete"],["100","complete"]]', 'local run-42: ' + JSON.stringify(lrows));
    // Warm jobs: one finished, one killed, one held at its first shard.
    const jobs = async () => page.$$eval('tr.warm-job', trs => trs.map(t => ({ dir: t.dataset.dir, status: t.dataset.status, done: Number(t.dataset.done), total: Number(t.dataset.total), bar: Number(t.querySelector('progress').value) })));
    await page.waitForFunction(() => document.querySelectorAll('tr.warm-job').length === 3, { timeout: 10000 });
    const byDir = async () => Object.fromEntries((await jobs()).map(j => [j.dir.split('/').pop(), j]));
    let j = await byDir();
    assert(j['job-1'].status === 'finished' && j['job-1'].done === 30 && j['job-1'].bar === 100, 'job-1: ' + JSON.stringify(j['job-1']));
    assert(j['job-2'].status === 'gone', 'job-2: ' + JSON.stringify(j['job-2']));
    assert(j['job-3'].status === 'running' && j['job-3'].done === 0 && j['job-3'].total === 20, 'job-3: ' + JSON.stringify(j['job-3']));
    const r = await fetch(WARM_GATE);
    assert(r.ok, 'gate: ' + r.status);
    // The page refreshes every 2 s: the bar moves, part-way, then to the end.
    await page.waitForFunction(d => { const t = [...document.querySelectorAll('tr.warm-job')].find(x => x.dataset.dir === d); return t && Number(t.dataset.done) > 0 && Number(t.dataset.done) < 20; }, { timeout: 30000 }, WARM_JOB);
    const mid = (await byDir())['job-3'];
    assert(mid.bar > 0 && mid.bar < 100, 'progress bar part-way: ' + JSON.stringify(mid));
    await shot(page, 'datapath');
    await page.waitForFunction((d, n) => { const t = [...document.querySelectorAll('tr.warm-job')].find(x => x.dataset.dir === d); return t && Number(t.dataset.done) > n; }, { timeout: 30000 }, WARM_JOB, mid.done);
    await page.waitForFunction(d => { const t = [...document.querySelectorAll('tr.warm-job')].find(x => x.dataset.dir === d); return t && t.dataset.status === 'finished'; }, { timeout: 60000 }, WARM_JOB);
    j = await byDir();
    assert(j['job-3'].done === 20 && j['job-3'].bar === 100, 'job-3 at the end: ' + JSON.stringify(j['job-3']));
    await page.$eval('#fs-url', el => { el.value = 'sqlite3:///nonexistent/meta.db'; });
    await page.click('#fs-show');
    await waitMessage(/no volume file/, 'missing volume');
  });
  await step('a metrics chart renders', async () => {
    await page.goto(CONSOLE_URL + '#/metrics', { waitUntil: 'networkidle0' });
    await page.waitForFunction(() => { const s = document.querySelector('svg.chart[data-id="s3_requests"]'); return s && Number(s.dataset.points) >= 1; }, { timeout: 20000 });
    const pts = await page.$eval('svg.chart[data-id="s3_requests"] polyline', el => el.getAttribute('points').trim().split(/\s+/).length);
    assert(pts >= 1, 'no points drawn');
    await shot(page, 'metrics');
  });
} finally {
  await browser.close();
}
process.exit(failures ? 1 : 0);
