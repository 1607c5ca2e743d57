// AWS SDK for JavaScript v3 (@aws-sdk/client-s3, @aws-sdk/lib-storage) with its
// default checksum behaviour against a real `strata server` (started by
// ../test_js.py, which passes STRATA_ENDPOINT / STRATA_ACCESS_KEY / STRATA_SECRET_KEY).
import assert from "node:assert/strict";
import crypto from "node:crypto";
import { Readable } from "node:stream";
import zlib from "node:zlib";

import {
  CreateBucketCommand,
  DeleteBucketCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";

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
});
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
