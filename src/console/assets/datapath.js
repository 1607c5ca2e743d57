// Strata console, Data path page: training checkpoints in the object store
// (read through the S3 API with the user's own rights) and in the local
// checkpoint directories the server was given (console API
// datapath/checkpoints, admin only), `strata warm` jobs from their progress
// files (datapath/warm, admin only, refreshed every 2 s), an FS volume's
// sessions (fs/volume, admin only) and this process's cache charts. Uses
// app.js's helpers.
'use strict';

const STEP_RE = /(^|\/)step-(\d{12})\/$/;

// One level of a bucket under `prefix` (delimiter "/"): sub-prefixes and keys.
async function listLevel(bucket, prefix, delimiter = true) {
  const out = {prefixes: [], keys: []};
  let token = null;
  for (let page = 0; page < 50; page++) {
    let q = 'list-type=2&prefix=' + enc(prefix) + (delimiter ? '&delimiter=%2F' : '');
    if (token) q += '&continuation-token=' + enc(token);
    const {doc} = await s3('GET', '/' + enc(bucket), q);
    for (const cp of all(doc, 'CommonPrefixes')) out.prefixes.push(tx(cp, 'Prefix'));
    for (const c of all(doc, 'Contents'))
      out.keys.push({key: tx(c, 'Key'), size: Number(tx(c, 'Size'))});
    token = tx(doc, 'IsTruncated') === 'true' ? tx(doc, 'NextContinuationToken') : null;
    if (!token) break;
  }
  return out;
}

// Runs: `prefix` itself when it holds step-NNNNNNNNNNNN/ directories, else
// each of its sub-prefixes that does (one level down).
async function findRuns(bucket, prefix) {
  const top = await listLevel(bucket, prefix);
  const steps = top.prefixes.filter(x => STEP_RE.test(x));
  if (steps.length) return [{prefix, steps}];
  const runs = [];
  for (const child of top.prefixes.slice(0, 100)) {
    const l = await listLevel(bucket, child);
    const s = l.prefixes.filter(x => STEP_RE.test(x));
    if (s.length) runs.push({prefix: child, steps: s});
  }
  return runs;
}

// A step as the store shows it: published (its MANIFEST.json, written last,
// exists) or not (files without a manifest: an upload in flight or cut off).
async function stepInfo(bucket, stepPrefix) {
  const step = Number(STEP_RE.exec(stepPrefix)[2]);
  try {
    const {text} = await s3('GET', '/' + enc(bucket) + '/' + encKey(stepPrefix + 'MANIFEST.json'));
    const m = JSON.parse(text);
    if (m.format !== 'strata-checkpoint-v1' || m.step !== step || !Array.isArray(m.files))
      return {
        step,
        state: 'damaged',
        note: 'MANIFEST.json is not a Strata checkpoint manifest of this step'
      };
    return {step, state: 'uploaded', files: m.files.length, bytes: m.bytes, created: m.created};
  } catch (e) {
    if (e.code !== 'NoSuchKey') throw e;
  }
  const l = await listLevel(bucket, stepPrefix, false);
  return {
    step,
    state: 'not published',
    files: l.keys.length,
    bytes: l.keys.reduce((a, k) => a + k.size, 0),
    note:
        'no manifest yet: the upload is in flight or was interrupted (the trainer\'s next `strata ckpt` resumes it)'
  };
}

async function listCheckpoints() {
  const bucket = $('#ckpt-bucket').value.trim(), prefix = $('#ckpt-prefix').value.trim();
  const el = $('#ckpt-runs');
  if (!bucket) throw new Error('Name the bucket the checkpoints were uploaded to');
  el.innerHTML = '<p class="muted">Listing…</p>';
  localStorage.setItem('ckpt:last', JSON.stringify({bucket, prefix}));
  const runs = await findRuns(bucket, prefix);
  if (!runs.length) {
    el.innerHTML = `<p class="muted">No checkpoints (step-NNNNNNNNNNNN/ directories) under s3://${
        esc(bucket)}/${esc(prefix)}.</p>`;
    return;
  }
  let html = '';
  for (const run of runs) {
    const steps = await Promise.all(run.steps.map(sp => stepInfo(bucket, sp)));
    steps.sort((a, b) => b.step - a.step);
    html += `<h3 class="ckpt-run" data-prefix="${esc(run.prefix)}">Run <code>${
                esc(run.prefix || '(bucket root)')}</code> <span class="muted">— ${
                steps.length} checkpoint(s), latest step ${steps[0].step}</span></h3>
      <table class="ckpt-table"><thead><tr><th class="num">Step</th><th>In the store</th><th class="num">Files</th><th class="num">Bytes</th><th>Created</th></tr></thead><tbody>` +
        steps
            .map(
                s => `<tr data-step="${s.step}" data-state="${esc(s.state)}"><td class="num">${
                    s.step}</td><td><span class="pill ${s.state === 'uploaded' ? '' : 'warn'}">${
                    esc(s.state)}</span>${
                    s.note ? ' <span class="muted">' + esc(s.note) + '</span>' :
                             ''}</td><td class="num">${
                    s.files === undefined ? '' : s.files}</td><td class="num">${
                    s.bytes === undefined ?
                        '' :
                        esc(fmtBytes(s.bytes))}</td><td>${esc(s.created || '')}</td></tr>`)
            .join('') +
        '</tbody></table>';
  }
  el.innerHTML = html;
}

async function showVolume() {
  const url = $('#fs-url').value.trim();
  const el = $('#fs-volume');
  el.innerHTML = '';
  const v = await api('POST', 'fs/volume', {url});
  // Remembered for the next visit, unless it carries a password (user:pass@host).
  if (!url.includes('@')) localStorage.setItem('fs:last', url);
  const f = v.volume;
  const now = v.now_ns / 1e9;
  let html = `<table id="fs-format"><tbody>
    <tr><th>Volume</th><td>${esc(f.name)} <span class="muted">${esc(f.uuid)}</span></td></tr>
    <tr><th>Storage</th><td><code>${esc(f.storage)}</code></td></tr>
    <tr><th>Blocks</th><td>${esc(fmtBytes(f.block_size))}, compression ${
                 esc(f.compress)}, encryption ${esc(f.encrypt || 'none')}, trash ${
                 f.trash_days} day(s)</td></tr>` +
      (v.usage ? `<tr><th>Used</th><td>${esc(fmtBytes(v.usage.used_bytes))} in ${
                     v.usage.used_inodes} inodes</td></tr>` :
                 '') +
      `</tbody></table><h3>Sessions <span class="muted">— mounts heartbeat every 10 s; silent for over ${
                 v.stale_after_s} s is stale (the next mount cleans it)</span></h3>
    <table id="fs-sessions"><thead><tr><th class="num">Session</th><th>Host</th><th class="num">PID</th><th>Mount point</th><th>Version</th><th>Last heartbeat</th><th></th></tr></thead><tbody>`;
  html += v.sessions
              .map(
                  s => `<tr data-sid="${s.sid}"><td class="num">${s.sid}</td><td>${
                      esc(s.host)}</td><td class="num">${s.pid}</td><td><code>${
                      esc(s.mount_point)}</code></td><td>${esc(s.version)}</td><td>${
                      esc(isoUs(s.heartbeat_ns / 1000))} <span class="muted">(${
                      fmtAge(now - s.heartbeat_ns / 1e9)} ago)</span></td><td>${
                      s.stale ? '<span class="pill warn">stale</span>' :
                                '<span class="pill">alive</span>'}</td></tr>`)
              .join('');
  if (!v.sessions.length)
    html += '<tr><td colspan="7" class="muted">No sessions: the volume is not mounted.</td></tr>';
  el.innerHTML = html + '</tbody></table>';
}

// ---- warm jobs: progress files of `strata warm` in the --warm-dir directories
const WARM_STATUS = {
  running: ['', 'running'],
  finished: ['', 'finished'],
  stopped: ['warn', 'stopped early'],
  gone: ['warn', 'process gone (killed?)'],
  silent: ['warn', 'no update'],
};
function fmtRate(bps) {
  return bps > 0 ? fmtBytes(Math.round(bps)) + '/s' : '—';
}
function warmJobHtml(j) {
  const [cls, label] = WARM_STATUS[j.status] || ['warn', j.status];
  const pct = Math.round(j.fraction * 1000) / 10;
  const approx = j.bytes_exact ? '' : '~';
  const eta = j.status !== 'running' ? '' : j.eta_s < 0 ? 'ETA unknown' : 'ETA ' + fmtAge(j.eta_s);
  return `<tr class="warm-job" data-dir="${esc(j.cache_dir)}" data-status="${
      esc(j.status)}" data-done="${j.objects_done}" data-total="${j.objects_total}">
    <td><code>${esc(j.cache_dir)}</code><div class="muted">${esc(j.label)}</div>
      <div class="muted">${esc(j.host)} pid ${j.pid}${
      j.resumed_from ? ' · resumed at shard ' + j.resumed_from : ''}</div></td>
    <td><progress class="warm-progress" max="100" value="${pct}"></progress>
      <div><b>${j.objects_done}</b> of ${j.objects_total} shards (${pct}%) · ${approx}${
      esc(fmtBytes(j.bytes_done))} of ${approx}${esc(fmtBytes(j.bytes_total))}${
      j.objects_ready ? ' · ' + j.objects_ready + ' warm ahead' : ''}</div></td>
    <td class="num">${esc(fmtRate(j.bytes_per_s))}<div class="muted">${
      j.objects_per_s.toFixed(1)} shards/s</div></td>
    <td><span class="pill ${cls}">${esc(label)}</span><div class="muted">${esc(eta)}</div>
      <div class="muted">updated ${fmtAge(j.age_s)} ago</div></td>
    <td class="num">${j.hits} cached · ${j.fetched} fetched${
      j.uncached ? ' · ' + j.uncached + ' did not fit' : ''}${
      j.failures ? ' · <span class="error">' + j.failures + ' failed</span>' : ''}</td></tr>`;
}
async function refreshWarm() {
  const el = $('#warm-jobs');
  if (!el) return;
  const r = await api('GET', 'datapath/warm');
  let html = '';
  if (r.jobs.length) {
    html +=
        `<table id="warm-table"><thead><tr><th>Cache directory</th><th>Progress</th><th class="num">Rate (30 s)</th><th>State</th><th class="num">Shards</th></tr></thead><tbody>` +
        r.jobs.map(warmJobHtml).join('') + '</tbody></table>';
  } else {
    html += `<p class="muted">No warm job has written a progress file in ${
        r.dirs.map(d => '<code>' + esc(d.dir) + '</code>' + (d.exists ? '' : ' (missing)'))
            .join(', ')} yet.</p>`;
  }
  for (const e of r.errors) html += `<p class="error">${esc(e.file)}: ${esc(e.message)}</p>`;
  el.innerHTML = html;
}

// ---- local checkpoints: the --checkpoint-dir directories on the server's host
function localStepRow(s) {
  const cls = s.state === 'complete' ? '' : 'warn';
  const upload = s.state !== 'complete' ? '' :
      s.upload_pending                  ? '<span class="pill warn">upload pending</span>' :
                                          '<span class="muted">no upload pending</span>';
  return `<tr data-step="${s.step}" data-state="${esc(s.state)}" data-upload-pending="${
      s.upload_pending}"><td class="num">${s.step}</td><td><span class="pill ${cls}">${
      esc(s.state)}</span> ${upload}${
      s.note ? ' <div class="muted">' + esc(s.note) + '</div>' :
               ''}</td><td class="num">${s.files}</td><td class="num">${
      esc(fmtBytes(s.bytes))}</td><td>${esc(s.created || isoUs(s.mtime_us))}</td></tr>`;
}
async function listLocalCheckpoints() {
  const el = $('#ckpt-local');
  const r = await api('GET', 'datapath/checkpoints');
  let html = '';
  for (const run of r.runs) {
    const done = run.steps.filter(s => s.state === 'complete');
    html += `<h3 class="ckpt-local-run" data-dir="${esc(run.dir)}">Run <code>${
                esc(run.dir)}</code> <span class="muted">— ${run.steps.length} step(s) on ${
                esc(r.host)}, ${done.length} complete (${esc(fmtBytes(run.complete_bytes))})${
                done.length ? ', latest complete step ' + done[0].step : ''}</span></h3>
      <table class="ckpt-local-table"><thead><tr><th class="num">Step</th><th>On local disk</th><th class="num">Files</th><th class="num">Bytes</th><th>Created</th></tr></thead><tbody>` +
        run.steps.map(localStepRow).join('') + '</tbody></table>';
  }
  for (const d of r.dirs) {
    if (!d.exists)
      html += `<p class="error"><code>${esc(d.dir)}</code> does not exist.</p>`;
    else if (d.error)
      html += `<p class="error"><code>${esc(d.dir)}</code>: ${esc(d.error)}</p>`;
  }
  if (!r.runs.length && !html)
    html =
        '<p class="muted">No step-NNNNNNNNNNNN/ directories in the local checkpoint directories.</p>';
  el.innerHTML = html;
}

async function dataPathPage(p) {
  p.innerHTML = `<div class="card" id="checkpoints"><h2>Checkpoints</h2>
      <h3>On this server's disk</h3><div id="ckpt-local"></div>
      <h3>Uploaded</h3>
      <p class="muted">Training checkpoints uploaded by <code>strata ckpt</code> / CheckpointManager, read from the store with your rights: a checkpoint is published once its <code>MANIFEST.json</code> (written last) exists.</p>
      <div class="row">Bucket <input id="ckpt-bucket" list="ckpt-buckets" placeholder="bucket"><datalist id="ckpt-buckets"></datalist> Prefix <input id="ckpt-prefix" placeholder="run-42/ (empty: every run in the bucket)">
        <button id="ckpt-list">List checkpoints</button></div><div id="ckpt-runs"></div></div>
    <div class="card" id="fs"><h2>FS volumes</h2>
      <p class="muted">A volume's format and its sessions (one per mount: host, pid, heartbeat), read from its metadata engine as the server's host reaches it. The server is configured with no FS volume of its own: enter the metadata URL given to <code>strata fs format</code>. Needs an admin user; nothing is written.</p>
      <div class="row"><input id="fs-url" size="60" placeholder="sqlite3:///var/lib/strata/vol.db or redis://127.0.0.1:6379/1">
        <button id="fs-show">Show volume</button></div><div id="fs-volume"></div></div>
    <div class="card" id="warmer"><h2>Warm jobs</h2>
      <p class="muted"><code>strata warm</code> rewrites <code>CACHE_DIR/warm.progress.json</code> atomically every second while it runs, and once more when it ends; the server reads those of the directories it was started with (<code>strata server --warm-dir DIR</code>). Bytes count the shards the job finished; a shard's size is known once the job has asked for it, so until then totals are estimates (~). Refreshed every 2 s.</p>
      <div id="warm-jobs"></div></div>
    <div class="card"><h2>Cache tiers</h2><p class="muted">The tiered cache of this process: hit ratio and bytes held over the last hour.</p></div>
    <div class="charts" id="charts"></div>`;
  $('#ckpt-list').onclick = () => listCheckpoints().catch(e => {
    $('#ckpt-runs').innerHTML = '';
    fail(e);
  });
  $('#fs-show').onclick = () => showVolume().catch(fail);
  $('#fs-url').value = localStorage.getItem('fs:last') || '';
  const last = JSON.parse(localStorage.getItem('ckpt:last') || '{}');
  $('#ckpt-prefix').value = last.prefix || '';
  if (state.session.services.s3) {
    // The user's own buckets as suggestions; any bucket the user may list works.
    const {doc} = await s3('GET', '/');
    for (const b of all(doc, 'Bucket')) {
      const o = document.createElement('option');
      o.value = tx(b, 'Name');
      $('#ckpt-buckets').appendChild(o);
    }
    $('#ckpt-bucket').value = last.bucket || '';
  } else {
    $('#ckpt-list').disabled = true;
  }
  const dp = state.session.datapath || {};
  const adminNote = what => `<p class="muted">${
      what} are read from the server's own disk and name its paths: an admin user sees them.</p>`;
  const none = (flag, what) => `<p class="muted">The server was started without <code>${
      flag}</code>, so it knows of no ${what} on its host.</p>`;
  let warm = false;
  if (!state.session.admin) {
    $('#warm-jobs').innerHTML = adminNote('Warm jobs');
    $('#ckpt-local').innerHTML = adminNote('Local checkpoints');
  } else {
    if (dp.warm_dirs) {
      warm = true;
      await refreshWarm().catch(fail);
    } else {
      $('#warm-jobs').innerHTML = none('--warm-dir DIR', 'warm jobs');
    }
    if (dp.checkpoint_dirs)
      await listLocalCheckpoints().catch(fail);
    else
      $('#ckpt-local').innerHTML = none('--checkpoint-dir DIR', 'local checkpoints');
  }
  const el = $('#charts');
  await renderCharts(el, c => c.id.startsWith('cache_'));
  let tick = 0;
  state.timer = setInterval(() => {
    if (warm) refreshWarm().catch(fail);
    if (++tick % 3 === 0) renderCharts(el, c => c.id.startsWith('cache_')).catch(fail);
  }, 2000);
}
