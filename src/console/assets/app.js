// Strata console: a single page over /console/api (same origin, session cookie,
// X-CSRF-Token on every write). No framework: each page renders into #page.
'use strict';

const state = {
  session: null,
  timer: null
};
const PART = 8 * 1024 * 1024;  // multipart part size (S3's minimum is 5 MiB)

const $ = (sel, root = document) => root.querySelector(sel);
function esc(s) {
  return String(s).replace(
      /[&<>"']/g, c => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', '\'': '&#39;'}[c]));
}
// S3's URI encoding (RFC 3986 unreserved kept), per path segment.
function enc(s) {
  return encodeURIComponent(s).replace(
      /[!'()*]/g, c => '%' + c.charCodeAt(0).toString(16).toUpperCase());
}
function encKey(k) {
  return k.split('/').map(enc).join('/');
}
function fmtBytes(n) {
  n = Number(n);
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1000 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : Math.round(n)) + ' ' + u[i];
}
function show(text, kind = 'ok') {
  const m = $('#message');
  m.textContent = text;
  m.className = kind;
  m.hidden = false;
  if (kind === 'ok')
    setTimeout(() => {
      if (m.textContent === text) m.hidden = true;
    }, 4000);
}
function fail(e) {
  show(e.message || String(e), 'error');
}

async function api(method, path, body) {
  const headers = {};
  if (method !== 'GET' && method !== 'HEAD')
    headers['X-CSRF-Token'] = state.session ? state.session.csrf : '';
  let data;
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    data = JSON.stringify(body);
  }
  const r = await fetch(
      '/console/api/' + path, {method, headers, body: data, credentials: 'same-origin'});
  const text = await r.text();
  let j = null;
  try {
    j = text ? JSON.parse(text) : {};
  } catch (_) {
    j = {message: text};
  }
  if (r.status === 401 && path !== 'login') {
    signedOut();
    throw new Error('Session ended: sign in again');
  }
  if (!r.ok) {
    const msg = (j && j.status && j.status.error) || (j && j.message) || r.statusText;
    throw new Error(msg);
  }
  return j;
}

// One S3 request through the console (the server signs it with the user's keys).
async function s3(method, path, query = '', body = undefined, headers = {}) {
  if (method !== 'GET' && method !== 'HEAD') headers['X-CSRF-Token'] = state.session.csrf;
  const r = await fetch(
      '/console/api/s3' + path + (query ? '?' + query : ''),
      {method, headers, body, credentials: 'same-origin'});
  const text = method === 'HEAD' ? '' : await r.text();
  if (r.status === 401 && !text.includes('<Error>')) {
    signedOut();
    throw new Error('Session ended: sign in again');
  }
  const doc = text && text.trimStart().startsWith('<') ?
      new DOMParser().parseFromString(text, 'application/xml') :
      null;
  if (!r.ok) {
    if (r.status === 404 && method === 'HEAD') throw new Error('not found');
    const code =
        doc && doc.querySelector('Code') ? doc.querySelector('Code').textContent : r.status;
    const msg = doc && doc.querySelector('Message') ? doc.querySelector('Message').textContent :
                                                      (text || r.statusText);
    const e = new Error(code + ': ' + msg);
    e.code = code;
    throw e;
  }
  return {r, text, doc};
}
const tx = (el, name) => {
  const n = el.getElementsByTagName(name)[0];
  return n ? n.textContent : '';
};
const all = (el, name) => Array.from(el.getElementsByTagName(name));

// ---- XML <-> JSON for lifecycle and CORS (the AWS CLI's JSON shapes).
const PLURAL = {
  Rule: 'Rules',
  CORSRule: 'CORSRules',
  AllowedMethod: 'AllowedMethods',
  AllowedOrigin: 'AllowedOrigins',
  AllowedHeader: 'AllowedHeaders',
  ExposeHeader: 'ExposeHeaders',
  Transition: 'Transitions',
  NoncurrentVersionTransition: 'NoncurrentVersionTransitions',
  Tag: 'Tags'
};
const SINGULAR = Object.fromEntries(Object.entries(PLURAL).map(([a, b]) => [b, a]));
function xmlToJson(el) {
  const kids = Array.from(el.children);
  if (!kids.length) {
    const t = el.textContent;
    return /^\d+$/.test(t) ? Number(t) : t;
  }
  const o = {};
  for (const k of kids) {
    const v = xmlToJson(k);
    if (PLURAL[k.tagName])
      (o[PLURAL[k.tagName]] = o[PLURAL[k.tagName]] || []).push(v);
    else
      o[k.tagName] = v;
  }
  return o;
}
function jsonToXml(name, v) {
  if (Array.isArray(v)) return v.map(x => jsonToXml(SINGULAR[name] || name, x)).join('');
  if (v !== null && typeof v === 'object') {
    return '<' + name + '>' + Object.entries(v).map(([k, x]) => jsonToXml(k, x)).join('') + '</' +
        name + '>';
  }
  return '<' + name + '>' + esc(v) + '</' + name + '>';
}
function parseJson(text, what) {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(what + ' is not valid JSON: ' + e.message);
  }
}

// ---- Session.
function signedOut() {
  state.session = null;
  $('#top').hidden = true;
  $('#page').hidden = true;
  $('#login-page').hidden = false;
}
function signedIn(s) {
  state.session = s;
  $('#login-page').hidden = true;
  $('#top').hidden = false;
  $('#page').hidden = false;
  $('#whoami').textContent = s.user + (s.admin ? ' (admin)' : '');
  route();
}
document.addEventListener('DOMContentLoaded', async () => {
  $('#login-form').addEventListener('submit', async ev => {
    ev.preventDefault();
    $('#login-error').hidden = true;
    try {
      const s = await api(
          'POST', 'login',
          {access_key: $('#access-key').value.trim(), secret_key: $('#secret-key').value});
      $('#secret-key').value = '';
      signedIn(s);
    } catch (e) {
      $('#login-error').textContent = 'Sign-in failed: ' + e.message;
      $('#login-error').hidden = false;
    }
  });
  $('#sign-out').addEventListener('click', async () => {
    try {
      await api('POST', 'logout', {});
    } catch (_) {
    }
    signedOut();
  });
  window.addEventListener('hashchange', route);
  try {
    signedIn(await api('GET', 'session'));
  } catch (_) {
    signedOut();
  }
});

function route() {
  if (!state.session) return;
  if (state.timer) {
    clearInterval(state.timer);
    state.timer = null;
  }
  $('#message').hidden = true;
  const h = decodeURIComponent(location.hash.slice(2));
  const [page, ...rest] = h.split('/');
  for (const a of document.querySelectorAll('header nav a'))
    a.classList.toggle('active', a.id === 'nav-' + (page || 'objects'));
  const p = $('#page');
  const pages = {
    objects: objectsPage,
    vectors: vectorsPage,
    metrics: metricsPage,
    features: featuresPage,
    datapath: dataPathPage
  };
  (pages[page] || objectsPage)(p, rest).catch(fail);
}

// ---- Objects.
async function objectsPage(p, rest) {
  if (rest.length && rest[0]) return bucketPage(p, rest[0], rest.slice(1).join('/'));
  p.innerHTML = `<div class="card"><h2>Buckets</h2>
    <div class="row"><input id="new-bucket" placeholder="new-bucket-name"><button id="create-bucket">Create bucket</button></div>
    <table id="buckets"><thead><tr><th>Name</th><th>Created</th><th></th></tr></thead><tbody></tbody></table></div>
    <div id="bucket-settings"></div>`;
  $('#create-bucket').onclick = async () => {
    const name = $('#new-bucket').value.trim();
    try {
      await s3('PUT', '/' + enc(name));
      show('Bucket ' + name + ' created');
      objectsPage(p, []);
    } catch (e) {
      fail(e);
    }
  };
  const {doc} = await s3('GET', '/');
  const tb = $('#buckets tbody');
  for (const b of all(doc, 'Bucket')) {
    const name = tx(b, 'Name');
    const tr = document.createElement('tr');
    tr.innerHTML = `<td><a class="open-bucket" href="#/objects/${enc(name)}/">${
        esc(name)}</a></td><td>${esc(tx(b, 'CreationDate'))}</td>
      <td><button class="secondary settings">Settings</button> <button class="danger delete">Delete</button></td>`;
    tr.querySelector('.settings').onclick = () =>
        bucketSettings($('#bucket-settings'), name).catch(fail);
    tr.querySelector('.delete').onclick = async () => {
      if (!confirm('Delete bucket ' + name + '?')) return;
      try {
        await s3('DELETE', '/' + enc(name));
        show('Bucket ' + name + ' deleted');
        objectsPage(p, []);
      } catch (e) {
        fail(e);
      }
    };
    tb.appendChild(tr);
  }
  if (!tb.children.length)
    tb.innerHTML = '<tr><td colspan="3" class="muted">No buckets yet.</td></tr>';
}

async function bucketSettings(el, bucket) {
  el.innerHTML = `<div class="card"><h2>Settings of ${esc(bucket)}</h2>
    <div class="row">Versioning: <b id="versioning-status">…</b>
      <button id="versioning-enable" class="secondary">Enable</button><button id="versioning-suspend" class="secondary">Suspend</button></div>
    <div class="grid2">
      <div><h3>Policy (JSON)</h3><textarea id="policy-json"></textarea>
        <div class="row"><button id="policy-save">Save policy</button><button id="policy-delete" class="danger">Remove</button></div></div>
      <div><h3>Lifecycle (JSON, as aws s3api)</h3><textarea id="lifecycle-json"></textarea>
        <div class="row"><button id="lifecycle-save">Save lifecycle</button><button id="lifecycle-delete" class="danger">Remove</button></div></div>
      <div><h3>CORS (JSON, as aws s3api)</h3><textarea id="cors-json"></textarea>
        <div class="row"><button id="cors-save">Save CORS</button><button id="cors-delete" class="danger">Remove</button></div></div>
    </div></div>`;
  const b = '/' + enc(bucket);
  const load = async (q, fn) => {
    try {
      return fn(await s3('GET', b, q));
    } catch (e) {
      return '';
    }
  };
  $('#versioning-status').textContent = await load('versioning', r => tx(r.doc, 'Status') || 'Off');
  $('#policy-json').value = await load('policy', r => JSON.stringify(JSON.parse(r.text), null, 2));
  $('#lifecycle-json').value =
      await load('lifecycle', r => JSON.stringify(xmlToJson(r.doc.documentElement), null, 2));
  $('#cors-json').value =
      await load('cors', r => JSON.stringify(xmlToJson(r.doc.documentElement), null, 2));
  const act = (id, fn, done) => {
    $(id).onclick = async () => {
      try {
        await fn();
        show(done);
        bucketSettings(el, bucket).catch(fail);
      } catch (e) {
        fail(e);
      }
    };
  };
  const versioning = s =>
      s3('PUT', b, 'versioning',
         `<VersioningConfiguration><Status>${s}</Status></VersioningConfiguration>`);
  act('#versioning-enable', () => versioning('Enabled'), 'Versioning enabled');
  act('#versioning-suspend', () => versioning('Suspended'), 'Versioning suspended');
  act('#policy-save', async () => {
    const text = $('#policy-json').value;
    parseJson(text, 'The policy');
    await s3('PUT', b, 'policy', text, {'Content-Type': 'application/json'});
  }, 'Policy saved');
  act('#policy-delete', () => s3('DELETE', b, 'policy'), 'Policy removed');
  const xmlSave = (what, q, root) => async () => {
    const j = parseJson($('#' + q + '-json').value, 'The ' + what);
    if (j === null || typeof j !== 'object' || Array.isArray(j))
      throw new Error('The ' + what + ' must be a JSON object');
    const xml = jsonToXml(root, j);
    const md5 = await md5Base64(new TextEncoder().encode(xml));
    await s3('PUT', b, q, xml, {'Content-Type': 'application/xml', 'Content-MD5': md5});
  };
  act('#lifecycle-save', xmlSave('lifecycle configuration', 'lifecycle', 'LifecycleConfiguration'),
      'Lifecycle saved');
  act('#lifecycle-delete', () => s3('DELETE', b, 'lifecycle'), 'Lifecycle removed');
  act('#cors-save', xmlSave('CORS configuration', 'cors', 'CORSConfiguration'), 'CORS saved');
  act('#cors-delete', () => s3('DELETE', b, 'cors'), 'CORS removed');
}

async function bucketPage(p, bucket, prefix) {
  const tokens = [''];  // continuation tokens of the pages seen, for Previous
  p.innerHTML = `<div class="card"><div class="crumbs" id="crumbs"></div>
    <div class="drop" id="drop">Drop files here or <input type="file" id="file-input" multiple>
      <div class="row"><progress id="upload-progress" max="100" value="0" hidden></progress><span id="upload-status"></span></div></div>
    <div class="row"><button class="secondary" id="prev-page" disabled>Previous</button><button class="secondary" id="next-page" disabled>Next page</button>
      <span class="muted">Page size <select id="page-size"><option>50</option><option selected>100</option><option>500</option><option>1000</option></select></span></div>
    <table id="objects"><thead><tr><th>Name</th><th class="num">Size</th><th>Modified</th><th></th></tr></thead><tbody></tbody></table></div>
    <div id="details"></div>`;
  const parts = prefix.split('/').filter(Boolean);
  let crumbs =
      `<a href="#/objects">Buckets</a> / <a href="#/objects/${enc(bucket)}/">${esc(bucket)}</a> / `;
  parts.forEach((seg, i) => {
    crumbs += `<a href="#/objects/${enc(bucket)}/${enc(parts.slice(0, i + 1).join('/') + '/')}">${
        esc(seg)}</a> / `;
  });
  $('#crumbs').innerHTML = crumbs;
  let page = 0;
  const list = async () => {
    const q = 'list-type=2&delimiter=%2F&max-keys=' + $('#page-size').value +
        '&prefix=' + enc(prefix) + (tokens[page] ? '&continuation-token=' + enc(tokens[page]) : '');
    const {doc} = await s3('GET', '/' + enc(bucket), q);
    const tb = $('#objects tbody');
    tb.innerHTML = '';
    for (const cp of all(doc, 'CommonPrefixes')) {
      const pf = tx(cp, 'Prefix');
      const tr = document.createElement('tr');
      tr.innerHTML = `<td><a href="#/objects/${enc(bucket)}/${enc(pf)}">${
          esc(pf.slice(prefix.length))}</a></td><td></td><td></td><td></td>`;
      tb.appendChild(tr);
    }
    for (const o of all(doc, 'Contents'))
      objectRow(tb, bucket, tx(o, 'Key'), prefix, tx(o, 'Size'), tx(o, 'LastModified'), list);
    if (!tb.children.length)
      tb.innerHTML = '<tr><td colspan="4" class="muted">Nothing here yet.</td></tr>';
    const next = tx(doc, 'NextContinuationToken');
    tokens.length = page + 1;
    if (next) tokens.push(next);
    $('#next-page').disabled = !next;
    $('#prev-page').disabled = page === 0;
  };
  $('#next-page').onclick = () => {
    page++;
    list().catch(fail);
  };
  $('#prev-page').onclick = () => {
    page--;
    list().catch(fail);
  };
  $('#page-size').onchange = () => {
    page = 0;
    tokens.length = 1;
    list().catch(fail);
  };
  const upload = async files => {
    for (const f of files) {
      try {
        await uploadFile(bucket, prefix + f.name, f);
        show('Uploaded ' + f.name);
      } catch (e) {
        fail(e);
      }
    }
    list().catch(fail);
  };
  $('#file-input').onchange = ev => upload(Array.from(ev.target.files));
  const drop = $('#drop');
  drop.ondragover = ev => {
    ev.preventDefault();
    drop.classList.add('over');
  };
  drop.ondragleave = () => drop.classList.remove('over');
  drop.ondrop = ev => {
    ev.preventDefault();
    drop.classList.remove('over');
    upload(Array.from(ev.dataTransfer.files));
  };
  await list();
}

function objectRow(tb, bucket, key, prefix, size, modified, relist) {
  const tr = document.createElement('tr');
  const href = '/console/api/s3/' + enc(bucket) + '/' + encKey(key) +
      '?response-content-disposition=' +
      enc('attachment; filename="' + key.split('/').pop().replace(/["\\]/g, '_') + '"');
  tr.innerHTML = `<td><a class="details">${esc(key.slice(prefix.length))}</a></td><td class="num">${
      fmtBytes(size)}</td>
    <td>${esc(modified)}</td><td><a class="download" href="${
      esc(href)}">Download</a> · <a class="presign">Link</a> · <a class="delete error">Delete</a></td>`;
  tr.querySelector('.details').onclick = () => objectDetails(bucket, key).catch(fail);
  tr.querySelector('.presign').onclick = async () => {
    try {
      const r = await api('POST', 'presign', {bucket, key, expires_s: 3600});
      $('#details').innerHTML =
          `<div class="card"><h2>Presigned link (1 hour)</h2><input id="presigned-url" readonly value="${
              esc(r.url)}"></div>`;
    } catch (e) {
      fail(e);
    }
  };
  tr.querySelector('.delete').onclick = async () => {
    if (!confirm('Delete ' + key + '?')) return;
    try {
      await s3('DELETE', '/' + enc(bucket) + '/' + encKey(key));
      show('Deleted ' + key);
      relist().catch(fail);
    } catch (e) {
      fail(e);
    }
  };
  tb.appendChild(tr);
}

async function objectDetails(bucket, key) {
  const path = '/' + enc(bucket) + '/' + encKey(key);
  const {r} = await s3('HEAD', path, 'x-amz-checksum-mode=ENABLED');
  let rows = '';
  for (const [k, v] of r.headers) {
    if (/^(content-|etag|last-modified|x-amz-(meta-|version-id|checksum|storage-class|server-side|tagging-count|object-lock))/
            .test(k) &&
        k !== 'content-security-policy')
      rows += `<tr><th>${esc(k)}</th><td>${esc(v)}</td></tr>`;
  }
  let tags = '', versions = '';
  try {
    const t = await s3('GET', path, 'tagging');
    tags = all(t.doc, 'Tag').map(x => `${esc(tx(x, 'Key'))}=${esc(tx(x, 'Value'))}`).join(', ');
  } catch (_) {
  }
  try {
    const v = await s3('GET', '/' + enc(bucket), 'versions&prefix=' + enc(key));
    for (const x of [...all(v.doc, 'Version'), ...all(v.doc, 'DeleteMarker')]) {
      if (tx(x, 'Key') !== key) continue;
      versions += `<tr><td>${esc(tx(x, 'VersionId'))}</td><td>${
          x.tagName === 'DeleteMarker' ? 'delete marker' : fmtBytes(tx(x, 'Size'))}</td>
        <td>${esc(tx(x, 'LastModified'))}</td><td>${
          tx(x, 'IsLatest') === 'true' ? 'latest' : ''}</td></tr>`;
    }
  } catch (_) {
  }
  $('#details').innerHTML =
      `<div class="card" id="object-details"><h2>${esc(key)}</h2><table>${rows}</table>
    <h3>Tags</h3><p>${tags || '<span class="muted">none</span>'}</p>
    <h3>Versions</h3><table><thead><tr><th>Version</th><th>Size</th><th>Modified</th><th></th></tr></thead><tbody>${
          versions}</tbody></table></div>`;
}

// ---- Uploads: one PUT up to PART bytes, multipart above (resumable: the
// upload id is kept in localStorage until it completes).
function xhrPut(url, body, onProgress, headers = {}) {
  return new Promise((resolve, reject) => {
    const x = new XMLHttpRequest();
    x.open('PUT', url);
    x.setRequestHeader('X-CSRF-Token', state.session.csrf);
    for (const [k, v] of Object.entries(headers)) x.setRequestHeader(k, v);
    x.upload.onprogress = ev => onProgress(ev.loaded);
    x.onload = () => {
      if (x.status >= 200 && x.status < 300) return resolve(x);
      const d = new DOMParser().parseFromString(x.responseText || '<x/>', 'application/xml');
      reject(new Error((tx(d, 'Code') || x.status) + ': ' + (tx(d, 'Message') || x.statusText)));
    };
    x.onerror = () => reject(new Error('upload failed: connection lost'));
    x.send(body);
  });
}

async function uploadFile(bucket, key, file) {
  const bar = $('#upload-progress'), status = $('#upload-status');
  bar.hidden = false;
  bar.value = 0;
  const progress = done => {
    bar.value = file.size ? Math.floor(done * 100 / file.size) : 100;
    status.textContent = `${key}: ${fmtBytes(done)} of ${fmtBytes(file.size)}`;
  };
  const path = '/' + enc(bucket) + '/' + encKey(key);
  const url = '/console/api/s3' + path;
  const type = {'Content-Type': file.type || 'application/octet-stream'};
  if (file.size <= PART) {
    await xhrPut(url, file, progress, type);
    progress(file.size);
    return;
  }
  const memo = 'upload:' + bucket + '/' + key + ':' + file.size + ':' + file.lastModified;
  let uploadId = localStorage.getItem(memo);
  const have = new Map();
  if (uploadId) {  // resume: the parts already there are not sent again
    try {
      const lp = await s3('GET', path, 'uploadId=' + enc(uploadId) + '&max-parts=10000');
      for (const pt of all(lp.doc, 'Part'))
        have.set(
            Number(tx(pt, 'PartNumber')), {etag: tx(pt, 'ETag'), size: Number(tx(pt, 'Size'))});
    } catch (_) {
      uploadId = null;
      have.clear();
    }
  }
  if (!uploadId) {
    const c = await s3('POST', path, 'uploads', undefined, type);
    uploadId = tx(c.doc, 'UploadId');
    localStorage.setItem(memo, uploadId);
  }
  const n = Math.ceil(file.size / PART);
  const etags = [];
  let done = 0;
  for (let i = 1; i <= n; i++) {
    const blob = file.slice((i - 1) * PART, Math.min(file.size, i * PART));
    const old = have.get(i);
    if (old && old.size === blob.size) {
      etags.push(old.etag);
      done += blob.size;
      progress(done);
      continue;
    }
    const x = await xhrPut(
        url + '?partNumber=' + i + '&uploadId=' + enc(uploadId), blob, l => progress(done + l));
    etags.push(x.getResponseHeader('ETag'));
    done += blob.size;
    progress(done);
  }
  const xml = '<CompleteMultipartUpload>' +
      etags.map((e, i) => `<Part><PartNumber>${i + 1}</PartNumber><ETag>${esc(e)}</ETag></Part>`)
          .join('') +
      '</CompleteMultipartUpload>';
  await s3('POST', path, 'uploadId=' + enc(uploadId), xml, {'Content-Type': 'application/xml'});
  localStorage.removeItem(memo);
}

// MD5 (RFC 1321) of a small body, base64, for Content-MD5 (S3 wants one on
// lifecycle writes; WebCrypto has no MD5).
async function md5Base64(bytes) {
  const K = new Uint32Array(64), S = [7, 12, 17, 22, 5, 9, 14, 20, 4, 11, 16, 23, 6, 10, 15, 21];
  for (let i = 0; i < 64; i++) K[i] = Math.floor(Math.abs(Math.sin(i + 1)) * 4294967296);
  const len = bytes.length, padded = new Uint8Array(((len + 8) >> 6) * 64 + 64);
  padded.set(bytes);
  padded[len] = 0x80;
  const dv = new DataView(padded.buffer);
  dv.setUint32(padded.length - 8, (len * 8) >>> 0, true);
  dv.setUint32(padded.length - 4, Math.floor(len / 536870912), true);
  let a0 = 0x67452301, b0 = 0xefcdab89, c0 = 0x98badcfe, d0 = 0x10325476;
  for (let off = 0; off < padded.length; off += 64) {
    let a = a0, b = b0, c = c0, d = d0;
    for (let i = 0; i < 64; i++) {
      let f, g;
      if (i < 16) {
        f = (b & c) | (~b & d);
        g = i;
      } else if (i < 32) {
        f = (d & b) | (~d & c);
        g = (5 * i + 1) % 16;
      } else if (i < 48) {
        f = b ^ c ^ d;
        g = (3 * i + 5) % 16;
      } else {
        f = c ^ (b | ~d);
        g = (7 * i) % 16;
      }
      const s = S[(i >> 4) * 4 + (i % 4)];
      const t = (a + f + K[i] + dv.getUint32(off + g * 4, true)) >>> 0;
      a = d;
      d = c;
      c = b;
      b = (b + ((t << s) | (t >>> (32 - s)))) >>> 0;
    }
    a0 = (a0 + a) >>> 0;
    b0 = (b0 + b) >>> 0;
    c0 = (c0 + c) >>> 0;
    d0 = (d0 + d) >>> 0;
  }
  const out = new DataView(new ArrayBuffer(16));
  [a0, b0, c0, d0].forEach((v, i) => out.setUint32(i * 4, v, true));
  return btoa(String.fromCharCode(...new Uint8Array(out.buffer)));
}

// ---- Vectors.
async function vectorsPage(p, rest) {
  if (!state.session.services.vector) {
    p.innerHTML = '<div class="card">The vector API is switched off on this server.</div>';
    return;
  }
  if (rest.length && rest[0]) return collectionPage(p, rest[0]);
  p.innerHTML = `<div class="card"><h2>Collections</h2>
    <div class="row"><input id="vc-name" placeholder="collection name"><input id="vc-size" type="number" min="1" value="4">
      <select id="vc-distance"><option>Cosine</option><option>Euclid</option><option>Dot</option><option>Manhattan</option></select>
      <button id="vc-create">Create collection</button></div>
    <table id="collections"><thead><tr><th>Name</th><th>Status</th><th class="num">Points</th><th class="num">Indexed</th><th class="num">Segments</th><th>Vectors</th><th></th></tr></thead><tbody></tbody></table></div>`;
  $('#vc-create').onclick = async () => {
    const name = $('#vc-name').value.trim();
    try {
      await api(
          'PUT', 'vector/collections/' + enc(name),
          {vectors: {size: Number($('#vc-size').value), distance: $('#vc-distance').value}});
      show('Collection ' + name + ' created');
      vectorsPage(p, []);
    } catch (e) {
      fail(e);
    }
  };
  const list = await api('GET', 'vector/collections');
  const tb = $('#collections tbody');
  for (const c of list.result.collections) {
    const info = (await api('GET', 'vector/collections/' + enc(c.name))).result;
    const v = info.config && info.config.params ? info.config.params.vectors : {};
    const tr = document.createElement('tr');
    tr.innerHTML = `<td><a href="#/vectors/${enc(c.name)}">${
        esc(c.name)}</a></td><td><span class="pill">${esc(info.status)}</span></td>
      <td class="num">${info.points_count}</td><td class="num">${
        info.indexed_vectors_count}</td><td class="num">${info.segments_count}</td>
      <td>${
        esc(v && v.size ? v.size + ' × ' + v.distance :
                          JSON.stringify(v))}</td><td><button class="danger">Delete</button></td>`;
    tr.querySelector('button').onclick = async () => {
      if (!confirm('Delete collection ' + c.name + '?')) return;
      try {
        await api('DELETE', 'vector/collections/' + enc(c.name));
        vectorsPage(p, []);
      } catch (e) {
        fail(e);
      }
    };
    tb.appendChild(tr);
  }
  if (!tb.children.length)
    tb.innerHTML = '<tr><td colspan="7" class="muted">No collections yet.</td></tr>';
}

async function collectionPage(p, name) {
  const base = 'vector/collections/' + enc(name);
  const info = (await api('GET', base)).result;
  p.innerHTML = `<div class="card"><div class="crumbs"><a href="#/vectors">Collections</a> / ${
      esc(name)}</div>
    <div class="grid2"><div><h3>Configuration</h3><pre id="collection-config">${
      esc(JSON.stringify(info, null, 2))}</pre></div>
    <div><h3>Upsert points (JSON)</h3><textarea id="upsert-json" placeholder='{"points":[{"id":1,"vector":[0.1,0.2,0.3,0.4],"payload":{"color":"red"}}]}'></textarea>
      <div class="row"><button id="upsert">Upsert</button></div></div></div></div>
    <div class="card"><h2>Search</h2>
      <div class="row"><label><input type="radio" name="by" value="vector" checked> by vector</label><label><input type="radio" name="by" value="id"> by point id</label>
        <input id="search-id" placeholder="point id"> limit <input id="search-limit" type="number" value="10" min="1"></div>
      <div class="grid2"><div><h3>Vector</h3><textarea id="search-vector" placeholder="[0.1, 0.2, 0.3, 0.4]"></textarea></div>
        <div><h3>Filter (optional)</h3><div class="row"><label><input type="radio" name="filter-kind" value="qdrant" checked> Qdrant JSON</label><label><input type="radio" name="filter-kind" value="milvus"> Milvus expression</label>
          <button class="secondary" id="filter-check" type="button">Check</button></div>
          <textarea id="search-filter" placeholder='{"must":[{"key":"color","match":{"value":"red"}}]}'></textarea>
          <div class="muted">Parsed: <code id="filter-parsed">—</code></div></div></div>
      <div class="row"><button id="search">Search</button></div>
      <table id="search-results"><thead><tr><th>Id</th><th class="num">Score</th><th>Payload</th></tr></thead><tbody></tbody></table></div>
    <div class="card"><h2>Points</h2><table id="points"><thead><tr><th>Id</th><th>Payload</th></tr></thead><tbody></tbody></table>
      <div class="row"><button class="secondary" id="points-more" disabled>More</button></div></div>`;
  let offset = null;
  const scroll = async reset => {
    const body = {limit: 20, with_payload: true, with_vector: false};
    if (offset !== null && !reset) body.offset = offset;
    const r = (await api('POST', base + '/points/scroll', body)).result;
    const tb = $('#points tbody');
    if (reset) tb.innerHTML = '';
    for (const pt of r.points)
      tb.insertAdjacentHTML(
          'beforeend',
          `<tr><td>${esc(pt.id)}</td><td><code>${
              esc(JSON.stringify(pt.payload || {}))}</code></td></tr>`);
    offset = r.next_page_offset === undefined ? null : r.next_page_offset;
    $('#points-more').disabled = offset === null;
  };
  $('#points-more').onclick = () => scroll(false).catch(fail);
  const filterKind = () => document.querySelector('input[name=filter-kind]:checked').value;
  for (const r of document.querySelectorAll('input[name=filter-kind]'))
    r.onchange = () => {
      $('#search-filter').placeholder = filterKind() === 'milvus' ?
          'color == "red" and price < 10' :
          '{"must":[{"key":"color","match":{"value":"red"}}]}';
      $('#filter-parsed').textContent = '—';
    };
  $('#filter-check').onclick = async () => {
    $('#filter-parsed').textContent = '—';
    try {
      const r = await api(
          'POST', 'vector-filter', {type: filterKind(), filter: $('#search-filter').value.trim()});
      $('#filter-parsed').textContent = r.parsed;
      show('The filter is valid');
    } catch (e) {
      fail(e);
    }
  };
  $('#upsert').onclick = async () => {
    try {
      const body = parseJson($('#upsert-json').value, 'The points');
      await api('PUT', base + '/points?wait=true', body);
      show('Points upserted');
      $('#collection-config').textContent =
          JSON.stringify((await api('GET', base)).result, null, 2);
      await scroll(true);
    } catch (e) {
      fail(e);
    }
  };
  $('#search').onclick = async () => {
    try {
      const byId = document.querySelector('input[name=by]:checked').value === 'id';
      const body = {limit: Number($('#search-limit').value) || 10, with_payload: true};
      if (byId) {
        const id = $('#search-id').value.trim();
        body.query = /^\d+$/.test(id) ? Number(id) : id;
      } else {
        body.query = parseJson($('#search-vector').value, 'The vector');
        if (!Array.isArray(body.query))
          throw new Error('The vector must be a JSON array of numbers');
      }
      const ft = $('#search-filter').value.trim();
      // A Milvus expression goes as a string: the engine parses both forms.
      if (ft) body.filter = filterKind() === 'milvus' ? ft : parseJson(ft, 'The filter');
      const r = (await api('POST', base + '/points/query', body)).result;
      const tb = $('#search-results tbody');
      tb.innerHTML = '';
      for (const pt of r.points)
        tb.insertAdjacentHTML(
            'beforeend',
            `<tr><td>${esc(pt.id)}</td><td class="num">${
                Number(pt.score).toFixed(
                    4)}</td><td><code>${esc(JSON.stringify(pt.payload || {}))}</code></td></tr>`);
      if (!r.points.length) tb.innerHTML = '<tr><td colspan="3" class="muted">No match.</td></tr>';
      show(r.points.length + ' result(s)');
    } catch (e) {
      fail(e);
    }
  };
  await scroll(true);
}

// ---- Metrics: inline SVG line charts over the server's own ring buffer.
function fmtValue(v, unit) {
  if (unit === 'B' || unit === 'B/s') return fmtBytes(v) + (unit === 'B/s' ? '/s' : '');
  if (unit === 's')
    return v < 1 ? (v * 1000).toFixed(v < 0.01 ? 2 : 1) + ' ms' : v.toFixed(2) + ' s';
  if (unit === 'ratio') return (v * 100).toFixed(1) + ' %';
  return (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(2)) + ' ' + unit;
}
function chartSvg(c) {
  const W = 420, H = 170, L = 54, R = 8, T = 8, B = 22;
  const pts = c.points;
  const now = Date.now(), t0 = now - 3600 * 1000;
  let max = 0;
  for (const [, v] of pts) max = Math.max(max, v);
  if (max <= 0) max = 1;
  const x = t => L + (W - L - R) * Math.max(0, (t - t0)) / (now - t0);
  const y = v => T + (H - T - B) * (1 - v / max);
  let grid = '';
  for (let i = 0; i <= 4; i++) {
    const v = max * i / 4;
    grid += `<line class="grid" x1="${L}" x2="${W - R}" y1="${y(v)}" y2="${y(v)}"/><text x="${
        L - 4}" y="${y(v) + 3}" text-anchor="end">${esc(fmtValue(v, c.unit))}</text>`;
  }
  for (let m = 0; m <= 60; m += 15)
    grid += `<text x="${x(t0 + m * 60000)}" y="${H - 6}" text-anchor="middle">${
        m === 60 ? 'now' : '-' + (60 - m) + 'm'}</text>`;
  const line = pts.map(([t, v]) => x(t).toFixed(1) + ',' + y(v).toFixed(1)).join(' ');
  const area = pts.length ? `<polygon class="area" points="${x(pts[0][0]).toFixed(1)},${y(0)} ${
                                line} ${x(pts[pts.length - 1][0]).toFixed(1)},${y(0)}"/>` :
                            '';
  const dots = pts.length === 1 ?
      `<circle cx="${x(pts[0][0])}" cy="${y(pts[0][1])}" r="3" class="bar"/>` :
      '';
  return `<svg class="chart" data-id="${esc(c.id)}" data-points="${pts.length}" viewBox="0 0 ${W} ${
      H}" preserveAspectRatio="none" role="img" aria-label="${esc(c.title)}">
    ${grid}<line class="axis" x1="${L}" x2="${W - R}" y1="${y(0)}" y2="${y(0)}"/>${
      area}<polyline class="line" points="${line}"/>${dots}</svg>`;
}
async function renderCharts(el, filter) {
  const m = await api('GET', 'metrics');
  el.innerHTML =
      m.charts.filter(filter)
          .map(c => {
            const last = c.points.length ? fmtValue(c.points[c.points.length - 1][1], c.unit) :
                                           'no data yet';
            return `<div class="card chart-card"><h3>${esc(c.title)} <span class="muted">— ${
                esc(last)}</span></h3>${chartSvg(c)}</div>`;
          })
          .join('');
  return m;
}
async function metricsPage(p) {
  p.innerHTML =
      `<div class="card"><h2>Metrics</h2><p class="muted">The last hour of this server's own Prometheus series (<a href="/metrics">/metrics</a>), sampled every few seconds.</p></div><div class="charts" id="charts"></div>`;
  const el = $('#charts');
  await renderCharts(el, c => !c.id.startsWith('cache_'));
  state.timer =
      setInterval(() => renderCharts(el, c => !c.id.startsWith('cache_')).catch(fail), 5000);
}
// dataPathPage: datapath.js.

// ---- Features: the registry the feature server serves, and online lookups.
function ttlText(s) {
  if (!s) return 'none';
  if (s % 86400 === 0) return s / 86400 + 'd';
  if (s % 3600 === 0) return s / 3600 + 'h';
  return s + 's';
}
// An online value's age from its event time (join keys and misses have none).
function valueAge(c, i) {
  const st = c.statuses ? c.statuses[i] : '';
  if (!c.event_timestamps || (st !== 'PRESENT' && st !== 'OUTSIDE_MAX_AGE')) return '';
  const t = Date.parse(c.event_timestamps[i]);
  return isNaN(t) || t <= 0 ? '' : ', ' + fmtAge((Date.now() - t) / 1000) + ' old';
}
function fmtAge(sec) {
  sec = Math.max(0, Math.round(sec));
  if (sec < 120) return sec + ' s';
  if (sec < 7200) return Math.round(sec / 60) + ' min';
  if (sec < 172800) return (sec / 3600).toFixed(1) + ' h';
  return (sec / 86400).toFixed(1) + ' d';
}
const isoUs = us => new Date(us / 1000).toISOString().replace('.000Z', 'Z');
// Age of the last materialization's end: how far the online store lags now.
function freshnessText(v) {
  if (!v.online) return '<span class="muted">offline only</span>';
  if (!v.last_materialized_end_us) return '<span class="muted">never materialized</span>';
  const age = Date.now() / 1000 - v.last_materialized_end_us / 1e6;
  const stale = v.ttl_seconds && age > v.ttl_seconds;
  return `<span class="${stale ? 'error' : ''}">${esc(fmtAge(age))} behind${
      stale ? ' (over the TTL)' : ''}</span>`;
}
function viewReportsHtml(view) {
  return `<div class="card" id="view-freshness"><h2>Online freshness</h2><p class="muted">Loading…</p></div>
    <div class="card" id="view-skew"><h2>Skew (PSI per feature)</h2>
      <p class="muted">Population stability index between a reference window of the view's source and a current sample: another window of the source, or what the feature server <b>served</b> (its served-vector log: the values online lookups returned, NULL for entities not found). 10 quantile bins for numbers, one per category; below 0.1 stable, below 0.25 moderate, else significant. Times are UTC; windows include their start, not their end.</p>
      <div class="row">Reference <input id="skew-ref-start" type="datetime-local" step="1"> to <input id="skew-ref-end" type="datetime-local" step="1"></div>
      <div class="row">Current&nbsp;&nbsp; <label><input type="radio" name="skew-current" value="offline" checked> a window of the source</label>
        <label><input type="radio" name="skew-current" value="serving_log"${
      state.session.services.serving_log ? '' : ' disabled'}> the serving log</label></div>
      <div class="row" id="skew-cur-window"><span id="skew-cur-what">Source window</span> <input id="skew-cur-start" type="datetime-local" step="1"> to <input id="skew-cur-end" type="datetime-local" step="1">
        <span class="muted" id="skew-cur-hint"></span>
        <button id="skew-run">Compute skew</button></div>
      <div id="skew-result"></div></div>`;
}
const localInput = us => new Date(us / 1000).toISOString().slice(0, 19);
const skewCurrent = () => document.querySelector('input[name=skew-current]:checked').value;
async function viewReports(view) {
  const f = await api('GET', 'features/freshness?view=' + enc(view.name));
  const el = $('#view-freshness');
  const now = f.now_us / 1e6;
  const line = (label, us, extra = '') => `<tr><th>${label}</th><td>${
      us === null ? '<span class="muted">none</span>' :
                    esc(isoUs(us)) + ' <span class="muted">(' + fmtAge(now - us / 1e6) +
              ' ago)</span>'}${extra}</td></tr>`;
  let verdict = '';
  if (f.newest_online_event_us !== null && f.ttl_seconds) {
    const old = now - f.newest_online_event_us / 1e6 > f.ttl_seconds;
    verdict = old ?
        ' <span class="error">older than the TTL: lookups answer OUTSIDE_MAX_AGE</span>' :
        ' <span class="pill">within the TTL</span>';
  }
  el.innerHTML = `<h2>Online freshness</h2><table><tbody>
    ${line('Newest value materialized', f.newest_online_event_us, verdict)}
    ${
      line(
          'Materialized up to', f.last_materialized_end_us, ' · ' + f.materializations + ' run(s)')}
    ${line('Newest event in the source', f.source_newest_event_us)}
    <tr><th>Source rows</th><td class="num" id="source-rows">${
      f.source_rows}</td></tr></tbody></table>
    <p class="muted">From the registry's materialization record and one scan of the source (<code>${
      esc(view.source.path)}</code>). Values written by push are not counted.</p>`;
  if (f.source_oldest_event_us !== null) {
    const a = f.source_oldest_event_us, b = f.source_newest_event_us + 1e6;
    const mid = a + Math.floor((b - a) / 2e6) * 1e6;
    $('#skew-ref-start').value = localInput(a);
    $('#skew-ref-end').value = localInput(mid);
    $('#skew-cur-start').value = localInput(mid);
    $('#skew-cur-end').value = localInput(b);
  }
  // Against the serving log the current window is on the log's time and may
  // be left empty (every logged request); the reference becomes the whole source.
  const ids = ['#skew-ref-start', '#skew-ref-end', '#skew-cur-start', '#skew-cur-end'];
  const offline = ids.map(id => $(id).value);
  for (const radio of document.querySelectorAll('input[name=skew-current]'))
    radio.onchange = () => {
      const log = skewCurrent() === 'serving_log';
      $('#skew-cur-what').textContent = log ? 'Logged between' : 'Source window';
      $('#skew-cur-hint').textContent = log ? 'empty: every request logged' : '';
      if (log) {
        if (f.source_oldest_event_us !== null) {
          $('#skew-ref-start').value = localInput(f.source_oldest_event_us);
          $('#skew-ref-end').value = localInput(f.source_newest_event_us + 1e6);
        }
        $('#skew-cur-start').value = $('#skew-cur-end').value = '';
      } else {
        ids.forEach((id, i) => {
          $(id).value = offline[i];
        });
      }
    };
  $('#skew-run').onclick = async () => {
    const t = id => ($(id).value ? $(id).value + 'Z' : '');
    try {
      let current = {start: t('#skew-cur-start'), end: t('#skew-cur-end')};
      if (skewCurrent() === 'serving_log') {
        current =
            current.start || current.end ? {serving_log: true, ...current} : {serving_log: true};
      }
      const r = await api('POST', 'features/skew', {
        view: view.name,
        reference: {start: t('#skew-ref-start'), end: t('#skew-ref-end')},
        current
      });
      $('#skew-result').innerHTML = skewHtml(r);
      const served = r.current.source === 'serving_log';
      show(
          'Skew over ' + r.reference_rows + ' reference and ' + r.current_rows +
          (served ? ' served rows (' + r.current.log_files + ' log file(s))' : ' current rows'));
    } catch (e) {
      $('#skew-result').innerHTML = '';
      fail(e);
    }
  };
}
// A bar per feature (PSI), dashed lines at the 0.1 and 0.25 thresholds.
function psiChartSvg(feats) {
  const W = 640, H = 200, L = 44, R = 8, T = 10, B = 34;
  // A square-root scale: a PSI of 8 and the 0.1 / 0.25 thresholds stay readable together.
  const max = Math.sqrt(Math.max(0.3, ...feats.map(f => f.psi)) * 1.1);
  const y = v => T + (H - T - B) * (1 - Math.min(Math.sqrt(Math.max(v, 0)), max) / max);
  const bw = (W - L - R) / Math.max(1, feats.length);
  let g = '';
  for (const [v, label] of [[0.1, '0.1'], [0.25, '0.25']])
    g += `<line class="grid threshold" x1="${L}" x2="${W - R}" y1="${y(v)}" y2="${
        y(v)}"/><text x="${L - 4}" y="${y(v) + 3}" text-anchor="end">${label}</text>`;
  g += `<text x="${L - 4}" y="${y(0) + 3}" text-anchor="end">0</text>`;
  feats.forEach((f, i) => {
    const x = L + i * bw + bw * 0.2, w = bw * 0.6;
    g += `<rect class="bar psi-${esc(f.verdict)}" data-feature="${esc(f.feature)}" data-psi="${
        f.psi}" x="${x.toFixed(1)}" y="${y(f.psi).toFixed(1)}" width="${w.toFixed(1)}" height="${
        (y(0) - y(f.psi)).toFixed(1)}"><title>${esc(f.feature)}: PSI ${f.psi.toFixed(4)} (${
        esc(f.verdict)})</title></rect>
      <text x="${(x + w / 2).toFixed(1)}" y="${(y(f.psi) - 3).toFixed(1)}" text-anchor="middle">${
        f.psi.toFixed(3)}</text><text x="${(x + w / 2).toFixed(1)}" y="${
        H - 18}" text-anchor="middle">${esc(f.feature)}</text>`;
  });
  g += `<text x="${L}" y="${T + 2}" text-anchor="start">PSI (square-root scale)</text>`;
  return `<svg class="chart skew" id="skew-chart" viewBox="0 0 ${W} ${
      H}" role="img" aria-label="PSI per feature">${g}<line class="axis" x1="${L}" x2="${
      W - R}" y1="${y(0)}" y2="${y(0)}"/></svg>`;
}
// A feature's bins: reference and current share side by side.
function binsSvg(f) {
  const W = 640, H = 150, L = 44, R = 8, T = 8, B = 30;
  const max = Math.max(...f.bins.map(b => Math.max(b.reference, b.current)), 0.01);
  const y = v => T + (H - T - B) * (1 - v / max);
  const bw = (W - L - R) / Math.max(1, f.bins.length);
  let g =
      `<text x="${L - 4}" y="${y(max) + 3}" text-anchor="end">${(max * 100).toFixed(0)}%</text>`;
  f.bins.forEach((b, i) => {
    const x = L + i * bw;
    g += `<rect class="bar ref" x="${(x + bw * 0.1).toFixed(1)}" y="${
        y(b.reference).toFixed(1)}" width="${(bw * 0.4).toFixed(1)}" height="${
        (y(0) - y(b.reference)).toFixed(1)}"><title>${esc(b.bin)}: reference ${
        (b.reference * 100).toFixed(1)}%</title></rect>
      <rect class="bar cur" x="${(x + bw * 0.5).toFixed(1)}" y="${
        y(b.current).toFixed(1)}" width="${(bw * 0.4).toFixed(1)}" height="${
        (y(0) - y(b.current)).toFixed(1)}"><title>${esc(b.bin)}: current ${
        (b.current * 100).toFixed(1)}%</title></rect>
      <text class="bin-label" x="${(x + bw / 2).toFixed(1)}" y="${H - 16}" text-anchor="middle">${
        esc(b.bin.length > 14 ? b.bin.slice(0, 13) + '…' : b.bin)}</text>`;
  });
  return `<svg class="chart bins" viewBox="0 0 ${W} ${H}" role="img" aria-label="${
      esc(f.feature)} bins">${g}<line class="axis" x1="${L}" x2="${W - R}" y1="${y(0)}" y2="${
      y(0)}"/></svg>`;
}
function skewHtml(r) {
  const served = r.current.source === 'serving_log';
  const note = served ?
      `<p class="muted" id="skew-source">Current: the serving log, ${r.current_rows} row(s) served${
          r.current.log_oldest_us !== null ? ' between ' + esc(isoUs(r.current.log_oldest_us)) +
                  ' and ' + esc(isoUs(r.current.log_newest_us)) :
                                             ''}${
          r.not_served.length ? '; never served: ' + esc(r.not_served.join(', ')) : ''}.</p>` :
      '<p class="muted" id="skew-source">Current: a window of the source.</p>';
  return note + psiChartSvg(r.features) +
      `<table id="skew-table"><thead><tr><th>Feature</th><th>Kind</th><th class="num">PSI</th><th>Verdict</th><th class="num">Reference rows</th><th class="num">${
             served ? 'Served rows' : 'Current rows'}</th></tr></thead><tbody>` +
      r.features
          .map(
              f => `<tr><td>${esc(f.feature)}</td><td>${esc(f.kind)}</td><td class="num">${
                  f.psi.toFixed(4)}</td><td><span class="pill psi-${esc(f.verdict)}">${
                  esc(f.verdict)}</span></td><td class="num">${
                  f.reference_rows}</td><td class="num">${f.current_rows}</td></tr>`)
          .join('') +
      '</tbody></table>' +
      r.features
          .map(
              f => `<h3>${
                  esc(f.feature)} <span class="muted">— bins: <span class="legend ref">■</span> reference, <span class="legend cur">■</span> current</span></h3>${
                  binsSvg(f)}`)
          .join('');
}
async function featuresPage(p, rest) {
  if (!state.session.services.features) {
    p.innerHTML = '<div class="card">The feature server is switched off on this server.</div>';
    return;
  }
  const reg = await api('GET', 'features');
  const view = rest.length && rest[0] ? reg.feature_views.find(v => v.name === rest[0]) : null;
  let html =
      `<div class="card"><h2>Feature repository <span class="pill">${esc(reg.project)}</span></h2>
    <h3>Entities</h3><table id="entities"><thead><tr><th>Name</th><th>Join key</th><th>Type</th><th>Description</th></tr></thead><tbody>` +
      reg.entities
          .map(
              e => `<tr><td>${esc(e.name)}</td><td>${esc(e.join_key)}</td><td>${
                  esc(e.value_type)}</td><td>${esc(e.description)}</td></tr>`)
          .join('') +
      `</tbody></table><h3>Feature views</h3><table id="feature-views"><thead><tr><th>Name</th><th>Entities</th><th>TTL</th><th>Online</th><th>Features</th><th>Materialized up to</th><th>Freshness</th></tr></thead><tbody>` +
      reg.feature_views
          .map(
              v => `<tr><td><a href="#/features/${enc(v.name)}">${esc(v.name)}</a></td><td>${
                  esc(v.entities.join(', '))}</td><td>${ttlText(v.ttl_seconds)}</td>
      <td>${v.online ? 'yes' : 'no'}</td><td class="num">${v.features.length}</td><td>${
                  v.last_materialized_end_us ?
                      esc(new Date(v.last_materialized_end_us / 1000).toISOString()) :
                      '<span class="muted">never</span>'}</td><td>${freshnessText(v)}</td></tr>`)
          .join('') +
      `</tbody></table><h3>Feature services</h3><table><tbody>` +
      reg.feature_services
          .map(
              s => `<tr><td>${esc(s.name)}</td><td>${
                  esc(s.projections
                          .map(
                              x => x.view +
                                  (x.features.length ? ':[' + x.features.join(',') + ']' : ''))
                          .join(', '))}</td></tr>`)
          .join('') +
      `</tbody></table></div>`;
  if (view) {
    html += `<div class="card" id="feature-view"><h2>${esc(view.name)}</h2>
      <p>Entities: ${esc(view.join_keys.join(', '))} · TTL ${
                ttlText(view.ttl_seconds)} · source <code>${
                esc(view.source.path)}</code> (timestamp <code>${
                esc(view.source.timestamp_field)}</code>)</p>
      <table><thead><tr><th>Feature</th><th>Type</th></tr></thead><tbody>${
                view.features.map(f => `<tr><td>${esc(f.name)}</td><td>${esc(f.type)}</td></tr>`)
                    .join('')}</tbody></table></div>` +
        viewReportsHtml(view);
  }
  const first = view || reg.feature_views[0];
  html += `<div class="card"><h2>Online lookup</h2><div class="grid2">
    <div><h3>Features (one "view:feature" a line)</h3><textarea id="lookup-features">${
      first ? esc(first.features.map(f => first.name + ':' + f.name).join('\n')) :
              ''}</textarea></div>
    <div><h3>Entities (JSON)</h3><textarea id="lookup-entities">${
      first ? esc(JSON.stringify(Object.fromEntries(first.join_keys.map(k => [k, [1001]])))) :
              ''}</textarea></div></div>
    <div class="row"><button id="lookup">Look up</button></div><div id="lookup-result"></div></div>`;
  p.innerHTML = html;
  if (view) viewReports(view).catch(fail);
  $('#lookup').onclick = async () => {
    try {
      const features = $('#lookup-features').value.split('\n').map(s => s.trim()).filter(Boolean);
      const entities = parseJson($('#lookup-entities').value, 'The entities');
      const r = await api('POST', 'features/online', {features, entities});
      const names = r.metadata.feature_names;
      const rows = r.results[0] ? r.results[0].values.length : 0;
      let t = '<table><thead><tr>' + names.map(n => `<th>${esc(n)}</th>`).join('') +
          '</tr></thead><tbody>';
      for (let i = 0; i < rows; i++) {
        t += '<tr>' +
            r.results
                .map(
                    c => `<td>${esc(JSON.stringify(c.values[i]))} <span class="muted">${
                        esc(c.statuses ? c.statuses[i] : '')}${esc(valueAge(c, i))}</span></td>`)
                .join('') +
            '</tr>';
      }
      $('#lookup-result').innerHTML = t + '</tbody></table>';
    } catch (e) {
      fail(e);
    }
  };
}
