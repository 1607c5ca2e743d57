// AWS SDK for JavaScript v3 (@aws-sdk/client-s3, @aws-sdk/lib-storage,
// @aws-sdk/s3-presigned-post) with its default checksum behaviour
// (requestChecksumCalculation / responseChecksumValidation "WHEN_SUPPORTED")
// against a real `strata server` (started by ../test_js.py, which passes
// STRATA_ENDPOINT / STRATA_ACCESS_KEY / STRATA_SECRET_KEY).
//
// Cases for S3 features that land with another branch run only when named in
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { Readable } from "node:stream";
import zlib from "node:zlib";

import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { createPresignedPost } from "@aws-sdk/s3-presigned-post";

const endpoint = process.env.STRATA_ENDPOINT;
const accessKeyId = process.env.STRATA_ACCESS_KEY;
const secretAccessKey = process.env.STRATA_SECRET_KEY;
if (!endpoint || !accessKeyId || !secretAccessKey) {
  console.error("STRATA_ENDPOINT, STRATA_ACCESS_KEY and STRATA_SECRET_KEY must be set");
  process.exit(2);
}

const MiB = 1024 * 1024;
const Bucket = "js-sdk-bucket";

// Every request as it leaves the SDK (after checksums and signing).
const wire = [];
const s3 = new S3Client({
  endpoint,
  region: "us-east-1",
  forcePathStyle: true,
  credentials: { accessKeyId, secretAccessKey },
  maxAttempts: 1,
  // The SDK's defaults, stated: a CRC32 on every request that takes one, and
  // response checksums validated whenever the server returns them.
  requestChecksumCalculation: "WHEN_SUPPORTED",
  responseChecksumValidation: "WHEN_SUPPORTED",
});
// An S3 error from a call that must fail: [HTTP status, error name].
async function failure(p) {
  try {
    await p;
  } catch (e) {
    return [e.$metadata?.httpStatusCode, e.name];
  }
  assert.fail("the call succeeded but should have failed");
}
// A browser-style form POST: the fields, then the file (fetch + FormData).
async function postForm(url, fields, filename, data, type = "application/octet-stream") {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  form.append("file", new Blob([data], { type }), filename);
  const r = await fetch(url, { method: "POST", body: form, redirect: "manual" });
  return { status: r.status, headers: r.headers, text: await r.text() };
}
s3.middlewareStack.add(
  (next, context) => async (args) => {
    const r = args.request;
    wire.push({ op: context.commandName, method: r.method, path: r.path, query: { ...r.query }, headers: { ...r.headers } });
    return next(args);
  },
  { step: "finalizeRequest", priority: "low", name: "strataWireCapture" },
);
function lastWire(op) {
  const w = wire.filter((x) => x.op === op);
  assert.ok(w.length > 0, `no ${op} request captured`);
  return w[w.length - 1];
}

const md5 = (b) => crypto.createHash("md5").update(b).digest("hex");
const sha256 = (b) => crypto.createHash("sha256").update(b).digest("hex");
const crc32b64 = (b) => {
  const buf = Buffer.alloc(4);
  buf.writeUInt32BE(zlib.crc32(b) >>> 0);
  return buf.toString("base64");
};
async function getBytes(Key, extra = {}) {
  const r = await s3.send(new GetObjectCommand({ Bucket, Key, ...extra }));
  return { resp: r, body: Buffer.from(await r.Body.transformToByteArray()) };
}
function chunked(buf, size) {
  return Readable.from((function* () {
    for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, Math.min(i + size, buf.length));
  })());
}

const bufferBody = crypto.randomBytes(100 * 1024);
const streamBody = crypto.randomBytes(300 * 1024 + 7);
const uploadBody = crypto.randomBytes(12 * MiB);
let uploadResult = null;

const cases = [
  ["CreateBucket", async () => {
    await s3.send(new CreateBucketCommand({ Bucket }));
  }],
  ["PutObject Buffer", async () => {
    const r = await s3.send(new PutObjectCommand({ Bucket, Key: "buffer.bin", Body: bufferBody }));
    assert.equal(r.ETag, `"${md5(bufferBody)}"`);
    const w = lastWire("PutObjectCommand");
    console.log("  PutObject(Buffer) sent:", JSON.stringify(Object.fromEntries(Object.entries(w.headers)
      .filter(([k]) => /checksum|content-encoding|content-sha256|content-length|trailer/i.test(k)))));
    const sent = w.headers["x-amz-checksum-crc32"];
    assert.equal(sent, crc32b64(bufferBody), "the SDK did not send a CRC32 header (default checksums)");
    assert.equal(r.ChecksumCRC32, crc32b64(bufferBody), "PutObject response lacks the CRC32");
  }],
  ["PutObject Readable stream with ContentLength (aws-chunked + trailer)", async () => {
    const r = await s3.send(new PutObjectCommand({
      Bucket, Key: "stream.bin", Body: chunked(streamBody, 64 * 1024), ContentLength: streamBody.length,
    }));
    const w = lastWire("PutObjectCommand");
    console.log("  PutObject(stream) sent:", JSON.stringify(Object.fromEntries(Object.entries(w.headers)
      .filter(([k]) => /checksum|content-encoding|content-sha256|content-length|trailer|transfer/i.test(k)))));
    assert.equal(w.headers["x-amz-content-sha256"], "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
      "this SDK version does not stream with aws-chunked; the case would not test what it claims");
    assert.equal(r.ETag, `"${md5(streamBody)}"`);
    assert.equal(r.ChecksumCRC32, crc32b64(streamBody));
    const { body } = await getBytes("stream.bin");
    assert.equal(body.length, streamBody.length);
    assert.ok(body.equals(streamBody), "stream upload stored different bytes");
  }],
  ["Upload (lib-storage) 12 MiB stream, multipart", async () => {
    const up = new Upload({
      client: s3,
      params: { Bucket, Key: "upload.bin", Body: chunked(uploadBody, MiB) },
      queueSize: 3,
      partSize: 5 * MiB,
    });
    const r = await up.done();
    assert.match(r.ETag, /^"[0-9a-f]{32}-3"$/, `not a 3-part multipart ETag: ${r.ETag}`);
    uploadResult = r;
    const parts = wire.filter((x) => x.op === "UploadPartCommand");
    assert.equal(parts.length, 3, `${parts.length} UploadPart requests`);
    const { body } = await getBytes("upload.bin");
    assert.equal(sha256(body), sha256(uploadBody), "multipart download differs");
    const h = await s3.send(new HeadObjectCommand({ Bucket, Key: "upload.bin" }));
    assert.equal(h.ContentLength, uploadBody.length);
  }],
  ["CompleteMultipartUpload result checksum fields", async () => {
    const r = uploadResult;
    assert.ok(r, "no Upload result");
    console.log(`  CompleteMultipartUpload result: CRC32=${r.ChecksumCRC32} type=${r.ChecksumType}`);
    const partCrcs = [0, 1, 2].map((i) => Buffer.from(crc32b64(uploadBody.subarray(i * 5 * MiB, (i + 1) * 5 * MiB)), "base64"));
    assert.equal(r.ChecksumCRC32, `${crc32b64(Buffer.concat(partCrcs))}-3`, "<ChecksumCRC32> of the result");
    assert.equal(r.ChecksumType, "COMPOSITE", "<ChecksumType> of CompleteMultipartUploadResult");
  }],
  ["GetObject ChecksumMode ENABLED", async () => {
    for (const [Key, data] of [["buffer.bin", bufferBody], ["stream.bin", streamBody]]) {
      const { resp, body } = await getBytes(Key, { ChecksumMode: "ENABLED" });
      assert.ok(body.equals(data), `${Key}: bytes differ`);
      assert.equal(resp.ChecksumCRC32, crc32b64(data), `${Key}: stored CRC32 differs`);
    }
    const { resp } = await getBytes("upload.bin", { ChecksumMode: "ENABLED" });
    console.log(`  multipart object checksum: CRC32=${resp.ChecksumCRC32} type=${resp.ChecksumType}`);
    // Composite checksum: CRC32 over the parts' raw CRC32s, then "-<parts>".
    const partCrcs = [0, 1, 2].map((i) => Buffer.from(crc32b64(uploadBody.subarray(i * 5 * MiB, (i + 1) * 5 * MiB)), "base64"));
    assert.equal(resp.ChecksumCRC32, `${crc32b64(Buffer.concat(partCrcs))}-3`, "composite CRC32 of the multipart object");
  }],
  ["ListObjectsV2", async () => {
    const r = await s3.send(new ListObjectsV2Command({ Bucket }));
    const got = (r.Contents || []).map((o) => [o.Key, o.Size]);
    assert.deepEqual(got, [["buffer.bin", bufferBody.length], ["stream.bin", streamBody.length],
      ["upload.bin", uploadBody.length]]);
    const p = await s3.send(new ListObjectsV2Command({ Bucket, MaxKeys: 2 }));
    assert.equal(p.IsTruncated, true);
    const p2 = await s3.send(new ListObjectsV2Command({ Bucket, ContinuationToken: p.NextContinuationToken }));
    assert.deepEqual((p2.Contents || []).map((o) => o.Key), ["upload.bin"]);
  }],
  ["DeleteObjects (CRC32, no Content-MD5)", async () => {
    const r = await s3.send(new DeleteObjectsCommand({
      Bucket, Delete: { Objects: [{ Key: "buffer.bin" }, { Key: "stream.bin" }, { Key: "upload.bin" }] },
    }));
    const w = lastWire("DeleteObjectsCommand");
    assert.ok(!Object.keys(w.headers).some((k) => k.toLowerCase() === "content-md5"),
      "the SDK sent Content-MD5; the case would not test the no-MD5 path");
    assert.deepEqual((r.Deleted || []).map((d) => d.Key).sort(), ["buffer.bin", "stream.bin", "upload.bin"]);
    assert.equal((r.Errors || []).length, 0, JSON.stringify(r.Errors));
    const l = await s3.send(new ListObjectsV2Command({ Bucket }));
    assert.equal(l.KeyCount, 0);
  }],
  ["Multipart by hand: upload created without an algorithm, parts with default CRC32", async () => {
    // The SDK adds x-amz-checksum-crc32 to every UploadPart; the upload itself
    // names no algorithm. The answers must stay valid HTTP for the SDK.
    const Key = "byhand.bin";
    const p1 = crypto.randomBytes(5 * MiB), p2 = crypto.randomBytes(1000);
    const up = await s3.send(new CreateMultipartUploadCommand({ Bucket, Key }));
    const e1 = await s3.send(new UploadPartCommand({ Bucket, Key, UploadId: up.UploadId, PartNumber: 1, Body: p1 }));
    assert.ok(lastWire("UploadPartCommand").headers["x-amz-checksum-crc32"], "the SDK sent no CRC32 on UploadPart");
    const e2 = await s3.send(new UploadPartCommand({ Bucket, Key, UploadId: up.UploadId, PartNumber: 2, Body: p2 }));
    const r = await s3.send(new CompleteMultipartUploadCommand({
      Bucket, Key, UploadId: up.UploadId,
      MultipartUpload: { Parts: [{ PartNumber: 1, ETag: e1.ETag }, { PartNumber: 2, ETag: e2.ETag }] },
    }));
    assert.match(r.ETag, /-2"$/);
    const { body } = await getBytes(Key);
    assert.ok(body.equals(Buffer.concat([p1, p2])), "multipart bytes differ");
    await s3.send(new DeleteObjectCommand({ Bucket, Key }));
  }],
  ["createPresignedPost + form POST (fetch/FormData)", async () => {
    const data = crypto.randomBytes(200 * 1024);
    const { url, fields } = await createPresignedPost(s3, {
      Bucket, Key: "post/${filename}", Expires: 300,
      Conditions: [["content-length-range", 1, MiB], ["starts-with", "$Content-Type", "image/"]],
      Fields: { "Content-Type": "image/png", success_action_status: "201", "x-amz-meta-by": "js" },
    });
    const r = await postForm(url, fields, "pic.png", data, "image/png");
    assert.equal(r.status, 201, r.text);
    assert.match(r.text, /<Key>post\/pic\.png<\/Key>/);
    assert.match(r.text, new RegExp(`<ETag>(&quot;|")${md5(data)}(&quot;|")</ETag>`), r.text);
    const { resp, body } = await getBytes("post/pic.png");
    assert.ok(body.equals(data), "POSTed bytes differ");
    assert.equal(resp.ContentType, "image/png");
    assert.deepEqual(resp.Metadata, { by: "js" });
    // Past content-length-range: EntityTooLarge, nothing stored.
    const big = await postForm(url, fields, "big.png", crypto.randomBytes(MiB + 1), "image/png");
    assert.equal(big.status, 400, big.text);
    assert.match(big.text, /<Code>EntityTooLarge<\/Code>/);
    assert.deepEqual(await failure(s3.send(new HeadObjectCommand({ Bucket, Key: "post/big.png" }))), [404, "NotFound"]);
    // A field value the policy does not allow.
    const bad = await postForm(url, { ...fields, "Content-Type": "text/html" }, "x.html", "<p>", "text/html");
    assert.equal(bad.status, 403, bad.text);
    assert.match(bad.text, /Invalid according to Policy/);
    await s3.send(new DeleteObjectCommand({ Bucket, Key: "post/pic.png" }));
  }],
  ["CopyObject and conditional PutObject", async () => {
    await s3.send(new PutObjectCommand({ Bucket, Key: "cond.txt", Body: "one", IfNoneMatch: "*" }));
    assert.deepEqual(await failure(s3.send(new PutObjectCommand({ Bucket, Key: "cond.txt", Body: "two", IfNoneMatch: "*" }))),
      [412, "PreconditionFailed"]);
    const c = await s3.send(new CopyObjectCommand({ Bucket, Key: "cond-copy.txt", CopySource: `${Bucket}/cond.txt` }));
    assert.equal(c.CopyObjectResult.ETag, `"${md5(Buffer.from("one"))}"`);
    const { body } = await getBytes("cond-copy.txt");
    assert.equal(body.toString(), "one");
    await s3.send(new DeleteObjectsCommand({ Bucket, Delete: { Objects: [{ Key: "cond.txt" }, { Key: "cond-copy.txt" }] } }));
  }],
  ["SSE-C PutObject / GetObject (400 without the key)", async () => {
    const key = crypto.randomBytes(32);
    const sse = { SSECustomerAlgorithm: "AES256", SSECustomerKey: key.toString("base64"),
      SSECustomerKeyMD5: crypto.createHash("md5").update(key).digest("base64") };
    const data = crypto.randomBytes(300 * 1024);
    try {
      await s3.send(new PutObjectCommand({ Bucket, Key: "ssec.bin", Body: data, ...sse }));
      const { resp, body } = await getBytes("ssec.bin", sse);
      assert.ok(body.equals(data), "SSE-C bytes differ");
      assert.equal(resp.SSECustomerAlgorithm, "AES256");
      const [status] = await failure(s3.send(new GetObjectCommand({ Bucket, Key: "ssec.bin" })));
      assert.equal(status, 400, "GetObject without the SSE-C key");
    } finally {
      await s3.send(new DeleteObjectCommand({ Bucket, Key: "ssec.bin" }));
    }
  }],
  ["DeleteBucket", async () => {
    await s3.send(new DeleteBucketCommand({ Bucket }));
  }],
];

let failed = 0;
for (const [name, fn] of cases) {
  const t0 = Date.now();
  try {
    await fn();
    console.log(`ok   ${name} (${((Date.now() - t0) / 1000).toFixed(1)}s)`);
  } catch (e) {
    failed++;
    const meta = e.$metadata ? ` [HTTP ${e.$metadata.httpStatusCode} ${e.name}]` : "";
    console.log(`FAIL ${name}${meta}: ${e.stack || e}`);
    if (e.$response) console.log("  response:", e.$response.statusCode, JSON.stringify(e.$response.headers));
  }
}
console.log(`js-sdk: ${cases.length - failed} passed, ${failed} failed of ${cases.length}`);
process.exit(failed ? 1 : 0);
