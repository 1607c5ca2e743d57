#include "s3/aws_chunked.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>

#include <strata/core/checksum.h>
#include <strata/core/strings.h>

namespace strata::s3 {
namespace {

constexpr int64_t kSec = 1'000'000'000;
constexpr int64_t kExampleNow = 1369353600LL * kSec;  // 2013-05-24T00:00:00Z
constexpr char kAk[] = "AKIAIOSFODNN7EXAMPLE";
constexpr char kSecret[] = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
constexpr char kDate[] = "20130524T000000Z";
constexpr char kScope[] = "20130524/us-east-1/s3/aws4_request";

std::string ExampleSigningKey() {
  std::string k = HmacSha256(std::string("AWS4") + kSecret, "20130524");
  k = HmacSha256(k, "us-east-1");
  k = HmacSha256(k, "s3");
  return HmacSha256(k, "aws4_request");
}

AuthResult SignedAuth(const std::string& seed, PayloadMode mode = PayloadMode::kStreamingSigned) {
  AuthResult a;
  a.access_key = kAk;
  a.payload_mode = mode;
  a.seed_signature = seed;
  a.signing_key = ExampleSigningKey();
  a.scope = kScope;
  a.amz_date = kDate;
  return a;
}

AuthResult UnsignedAuth() {
  AuthResult a;
  a.access_key = kAk;
  a.payload_mode = PayloadMode::kStreamingUnsignedTrailer;
  return a;
}

// A source over a string that hands out at most `max_read` bytes per call.
AwsChunkedDecoder::Source StringSource(std::string body, size_t max_read = SIZE_MAX) {
  auto state = std::make_shared<std::pair<std::string, size_t>>(std::move(body), 0);
  return [state, max_read](char* buf, size_t n) -> Result<size_t> {
    auto& [s, pos] = *state;
    const size_t k = std::min({n, max_read, s.size() - pos});
    std::copy(s.data() + pos, s.data() + pos + k, buf);
    pos += k;
    return k;
  };
}

// Reads to the end; the error if any Read fails.
Result<std::string> DecodeAll(AwsChunkedDecoder& d, size_t read_size = 1 << 20) {
  std::string out;
  std::string buf(read_size, '\0');
  for (;;) {
    Result<size_t> r = d.Read(buf.data(), buf.size());
    if (!r) return r.error();
    if (*r == 0) return out;
    out.append(buf.data(), *r);
  }
}

// ---- An independent encoder that follows the AWS spec literally.

struct RefSigner {
  std::string key = ExampleSigningKey();
  std::string prev;

  std::string Chunk(std::string_view data) {
    const std::string sts = std::string("AWS4-HMAC-SHA256-PAYLOAD\n") + kDate + "\n" + kScope +
                            "\n" + prev + "\n" + HexEncode(Sha256("")) + "\n" +
                            HexEncode(Sha256(data));
    prev = HexEncode(HmacSha256(key, sts));
    return prev;
  }
  std::string Trailer(const std::string& canonical) {
    const std::string sts = std::string("AWS4-HMAC-SHA256-TRAILER\n") + kDate + "\n" + kScope +
                            "\n" + prev + "\n" + HexEncode(Sha256(canonical));
    return HexEncode(HmacSha256(key, sts));
  }
};

using Trailers = std::vector<std::pair<std::string, std::string>>;

// signer == nullptr: unsigned framing.
std::string EncodeBody(std::string_view payload, size_t chunk, RefSigner* signer,
                       const Trailers& trailers = {}, bool sign_trailers = false) {
  auto hex = [](size_t n) {
    char b[32];
    snprintf(b, sizeof(b), "%zx", n);
    return std::string(b);
  };
  std::string out;
  for (size_t off = 0; off < payload.size(); off += chunk) {
    std::string_view piece = payload.substr(off, chunk);
    out += hex(piece.size());
    if (signer) out += ";chunk-signature=" + signer->Chunk(piece);
    out += "\r\n";
    out.append(piece);
    out += "\r\n";
  }
  out += "0";
  if (signer) out += ";chunk-signature=" + signer->Chunk("");
  out += "\r\n";
  std::string canonical;
  for (auto& [k, v] : trailers) {
    out += k + ":" + v + "\r\n";
    canonical += k + ":" + v + "\n";
  }
  if (sign_trailers) out += "x-amz-trailer-signature:" + signer->Trailer(canonical) + "\r\n";
  out += "\r\n";
  return out;
}

std::string RandomPayload(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

void ExpectStatus(const Status& st, StatusCode code, std::string_view s3_code) {
  EXPECT_EQ(st.code(), code) << st.ToString();
  EXPECT_TRUE(StartsWith(st.message(), std::string(s3_code) + ": ")) << st.message();
}

// ---- The AWS documentation example ("Signature Calculations for the
// Authorization Header: Transferring Payload in Multiple Chunks").

const char kExampleSeed[] = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9";

std::string AwsExampleBody() {
  return "10000;chunk-signature=ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"
         "\r\n" +
         std::string(65536, 'a') +
         "\r\n400;chunk-signature="
         "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497\r\n" +
         std::string(1024, 'a') +
         "\r\n0;chunk-signature=b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"
         "\r\n\r\n";
}

TEST(AwsChunkedTest, AwsExampleSeedSignatureVerifies) {
  // The example's request headers; VerifySigV4 must accept the seed signature
  // and hand back what the decoder needs.
  std::vector<std::pair<std::string, std::string>> h = {
      {"Host", "s3.amazonaws.com"},
      {"x-amz-date", kDate},
      {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
      {"Authorization",
       "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
       "SignedHeaders=content-encoding;content-length;host;x-amz-content-sha256;x-amz-date;"
       "x-amz-decoded-content-length;x-amz-storage-class,Signature=" +
           std::string(kExampleSeed)},
      {"x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"},
      {"Content-Encoding", "aws-chunked"},
      {"x-amz-decoded-content-length", "66560"},
      {"Content-Length", "66824"},
  };
  SigV4Request req;
  req.method = "PUT";
  req.path = "/examplebucket/chunkObject.txt";
  for (auto& [k, v] : h) req.headers.emplace_back(k, v);
  req.now_ns = kExampleNow;
  auto auth = VerifySigV4(req, [](std::string_view) { return std::string(kSecret); });
  ASSERT_TRUE(auth.has_value()) << auth.error().ToString();
  EXPECT_EQ(auth->payload_mode, PayloadMode::kStreamingSigned);
  EXPECT_EQ(auth->seed_signature, kExampleSeed);
  EXPECT_EQ(auth->scope, kScope);
  EXPECT_EQ(auth->amz_date, kDate);
  EXPECT_EQ(auth->signing_key, ExampleSigningKey());
  EXPECT_EQ(AwsExampleBody().size(), 66824u);  // the example's Content-Length

  AwsChunkedDecoder d(StringSource(AwsExampleBody()), *auth);
  auto out = DecodeAll(d);
  ASSERT_TRUE(out.has_value()) << out.error().ToString();
  EXPECT_EQ(*out, std::string(66560, 'a'));
}

TEST(AwsChunkedTest, AwsExampleAnyReadAndSourceSizes) {
  for (size_t read_size : {size_t{1}, size_t{1000}, size_t{65536}, size_t{70000}}) {
    for (size_t src_max : {size_t{1}, size_t{7}, size_t{4096}, SIZE_MAX}) {
      if (read_size == 1 && src_max == 1) continue;  // slow and adds nothing
      AwsChunkedOptions o;
      o.expected_decoded_length = 66560;
      AwsChunkedDecoder d(StringSource(AwsExampleBody(), src_max), SignedAuth(kExampleSeed), o);
      auto out = DecodeAll(d, read_size);
      ASSERT_TRUE(out.has_value()) << read_size << "/" << src_max << ": "
                                   << out.error().ToString();
      EXPECT_EQ(*out, std::string(66560, 'a'));
      EXPECT_TRUE(d.done());
      EXPECT_EQ(d.decoded_length(), 66560u);
      EXPECT_TRUE(d.trailers().empty());
      // Reading past the end keeps returning 0.
      char c;
      auto again = d.Read(&c, 1);
      ASSERT_TRUE(again.has_value());
      EXPECT_EQ(*again, 0u);
    }
  }
}

TEST(AwsChunkedTest, ReferenceEncoderMatchesAwsExample) {
  RefSigner s;
  s.prev = kExampleSeed;
  EXPECT_EQ(EncodeBody(std::string(66560, 'a'), 65536, &s), AwsExampleBody());
}

TEST(AwsChunkedTest, AwsTrailerExample) {
  // The trailer example of the same documentation: seed, chunk signatures and
  // a CRC32C trailer over the same 66560 bytes.
  const std::string seed = "106e2a8a18243abcf37539882f36619c00e2dfc72633413f02d3b74544bfeb8e";
  {
    std::vector<std::pair<std::string, std::string>> h = {
        {"Host", "s3.amazonaws.com"},
        {"x-amz-date", kDate},
        {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
        {"Authorization",
         "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,"
         "SignedHeaders=content-encoding;host;x-amz-content-sha256;x-amz-date;"
         "x-amz-decoded-content-length;x-amz-storage-class;x-amz-trailer,Signature=" +
             seed},
        {"x-amz-content-sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"},
        {"Content-Encoding", "aws-chunked"},
        {"x-amz-decoded-content-length", "66560"},
        {"x-amz-trailer", "x-amz-checksum-crc32c"},
    };
    SigV4Request req;
    req.method = "PUT";
    req.path = "/examplebucket/chunkObject.txt";
    for (auto& [k, v] : h) req.headers.emplace_back(k, v);
    req.now_ns = kExampleNow;
    auto auth = VerifySigV4(req, [](std::string_view) { return std::string(kSecret); });
    ASSERT_TRUE(auth.has_value()) << auth.error().ToString();
    EXPECT_EQ(auth->payload_mode, PayloadMode::kStreamingSignedTrailer);
    EXPECT_EQ(auth->seed_signature, seed);
  }
  const std::string payload(66560, 'a');
  auto crc = Hasher::Create(ChecksumAlgorithm::kCrc32c);
  crc->Update(payload.data(), payload.size());
  const std::string crc_digest = crc->Digest();
  const std::string crc_b64 = Base64Encode(crc_digest);
  EXPECT_EQ(crc_b64, "sOO8/Q==");

  RefSigner s;
  s.prev = seed;
  const std::string body = EncodeBody(payload, 65536, &s, {{"x-amz-checksum-crc32c", crc_b64}},
                                      /*sign_trailers=*/true);
  EXPECT_NE(body.find("10000;chunk-signature="
                      "b474d8862b1487a5145d686f57f013e54db672cee1c953b3010fb58501ef5aa2\r\n"),
            std::string::npos);
  EXPECT_NE(body.find("400;chunk-signature="
                      "1c1344b170168f8e65b41376b44b20fe354e373826ccbbe2c1d40a8cae51e5c7\r\n"),
            std::string::npos);
  EXPECT_NE(body.find("0;chunk-signature="
                      "2ca2aba2005185cf7159c6277faf83795951dd77a3a99e6e65d5c9f85863f992\r\n"),
            std::string::npos);
  EXPECT_NE(body.find("x-amz-checksum-crc32c:sOO8/Q==\r\nx-amz-trailer-signature:"
                      "d81f82fc3505edab99d459891051a732e8730629a2e4a59689829ca17fe2e435\r\n\r\n"),
            std::string::npos);

  AwsChunkedDecoder d(StringSource(body, 5000),
                      SignedAuth(seed, PayloadMode::kStreamingSignedTrailer));
  auto out = DecodeAll(d, 4096);
  ASSERT_TRUE(out.has_value()) << out.error().ToString();
  EXPECT_EQ(*out, payload);
  ASSERT_EQ(d.trailers().size(), 1u);
  EXPECT_EQ(d.trailers()[0].first, "x-amz-checksum-crc32c");
  EXPECT_EQ(d.trailers()[0].second, "sOO8/Q==");
  ASSERT_TRUE(d.checksum_trailer().has_value());
  EXPECT_EQ(d.checksum_trailer()->algorithm, ChecksumAlgorithm::kCrc32c);
  EXPECT_EQ(d.checksum_trailer()->digest, crc_digest);
}

// ---- Signature failures.

TEST(AwsChunkedTest, TamperedChunkDataIsNeverReleased) {
  std::string body = AwsExampleBody();
  // Flip one byte of the second chunk's data.
  const size_t second = body.find("400;chunk-signature=");
  body[body.find("\r\n", second) + 10] = 'b';
  for (size_t read_size : {size_t{100}, size_t{1 << 20}}) {
    AwsChunkedDecoder d(StringSource(body), SignedAuth(kExampleSeed));
    std::string buf(read_size, '\0');
    uint64_t released = 0;
    Status err;
    for (;;) {
      auto r = d.Read(buf.data(), buf.size());
      if (!r) {
        err = r.error();
        break;
      }
      ASSERT_NE(*r, 0u) << "a tampered body decoded to the end";
      released += *r;
    }
    ExpectStatus(err, StatusCode::kPermissionDenied, "SignatureDoesNotMatch");
    EXPECT_EQ(released, 65536u);  // only the first, intact chunk
    // The error is sticky.
    auto again = d.Read(buf.data(), buf.size());
    ASSERT_FALSE(again.has_value());
    ExpectStatus(again.error(), StatusCode::kPermissionDenied, "SignatureDoesNotMatch");
  }
}

TEST(AwsChunkedTest, WrongSeedFailsFirstChunk) {
  std::string seed = kExampleSeed;
  seed[0] = seed[0] == '0' ? '1' : '0';
  AwsChunkedDecoder d(StringSource(AwsExampleBody()), SignedAuth(seed));
  auto out = DecodeAll(d, 100);
  ASSERT_FALSE(out.has_value());
  ExpectStatus(out.error(), StatusCode::kPermissionDenied, "SignatureDoesNotMatch");
  EXPECT_EQ(d.decoded_length(), 0u);
}

TEST(AwsChunkedTest, ReorderedOrDroppedChunksFail) {
  const std::string payload = RandomPayload(3000, 1);
  RefSigner s;
  s.prev = kExampleSeed;
  const std::string body = EncodeBody(payload, 1000, &s);
  // Split into framed chunks.
  std::vector<std::string> chunks;
  size_t pos = 0;
  for (int i = 0; i < 3; ++i) {
    const size_t hdr_end = body.find("\r\n", pos) + 2;
    const size_t end = hdr_end + 1000 + 2;
    chunks.push_back(body.substr(pos, end - pos));
    pos = end;
  }
  const std::string tail = body.substr(pos);
  for (const std::string& bad : {chunks[1] + chunks[0] + chunks[2] + tail,  // reordered
                                 chunks[0] + chunks[2] + tail,              // dropped
                                 chunks[0] + chunks[1] + chunks[2] + chunks[2] + tail}) {
    AwsChunkedDecoder d(StringSource(bad), SignedAuth(kExampleSeed));
    auto out = DecodeAll(d);
    ASSERT_FALSE(out.has_value());
    ExpectStatus(out.error(), StatusCode::kPermissionDenied, "SignatureDoesNotMatch");
  }
  // The untouched body passes.
  AwsChunkedDecoder ok(StringSource(body), SignedAuth(kExampleSeed));
  auto out = DecodeAll(ok);
  ASSERT_TRUE(out.has_value()) << out.error().ToString();
  EXPECT_EQ(*out, payload);
}

TEST(AwsChunkedTest, TamperedFinalChunkSignature) {
  std::string body = AwsExampleBody();
  const size_t at = body.rfind("chunk-signature=") + 16;
  body[at] = body[at] == 'b' ? 'c' : 'b';
  AwsChunkedDecoder d(StringSource(body), SignedAuth(kExampleSeed));
  auto out = DecodeAll(d);
  ASSERT_FALSE(out.has_value());
  ExpectStatus(out.error(), StatusCode::kPermissionDenied, "SignatureDoesNotMatch");
}

// ---- Trailers.

TEST(AwsChunkedTest, UnsignedTrailerChecksum) {
  const std::string payload = RandomPayload(200000, 2);
  auto crc = Hasher::Create(ChecksumAlgorithm::kCrc32);
  crc->Update(payload.data(), payload.size());
  const std::string digest = crc->Digest();
  // One big chunk, as some SDKs send: unsigned chunks are streamed, not capped.
  for (size_t chunk : {size_t{65536}, payload.size()}) {
    const std::string body =
        EncodeBody(payload, chunk, nullptr, {{"x-amz-checksum-crc32", Base64Encode(digest)}});
    AwsChunkedOptions o;
    o.max_signed_chunk_size = 1024;  // irrelevant to unsigned chunks
    o.expected_decoded_length = payload.size();
    AwsChunkedDecoder d(StringSource(body, 3000), UnsignedAuth(), o);
    auto out = DecodeAll(d, 777);
    ASSERT_TRUE(out.has_value()) << out.error().ToString();
    EXPECT_EQ(*out, payload);
    ASSERT_TRUE(d.checksum_trailer().has_value());
    EXPECT_EQ(d.checksum_trailer()->algorithm, ChecksumAlgorithm::kCrc32);
    EXPECT_EQ(d.checksum_trailer()->digest, digest);
    EXPECT_EQ(d.checksum_trailer()->base64, Base64Encode(digest));
    ASSERT_EQ(d.trailers().size(), 1u);
    EXPECT_EQ(d.trailers()[0].first, "x-amz-checksum-crc32");
  }
}

TEST(AwsChunkedTest, TrailerNamesAreLowerCasedAndValuesTrimmed) {
  const std::string body = "3\r\nabc\r\n0\r\nX-Amz-Checksum-SHA256: " +
                           Base64Encode(Sha256("abc")) + " \r\nx-custom:v\r\n\r\n";
  AwsChunkedDecoder d(StringSource(body), UnsignedAuth());
  auto out = DecodeAll(d);
  ASSERT_TRUE(out.has_value()) << out.error().ToString();
  EXPECT_EQ(*out, "abc");
  ASSERT_EQ(d.trailers().size(), 2u);
  EXPECT_EQ(d.trailers()[0].first, "x-amz-checksum-sha256");
  EXPECT_EQ(d.trailers()[0].second, Base64Encode(Sha256("abc")));
  EXPECT_EQ(d.trailers()[1].first, "x-custom");
  ASSERT_TRUE(d.checksum_trailer().has_value());
  EXPECT_EQ(d.checksum_trailer()->algorithm, ChecksumAlgorithm::kSha256);
  EXPECT_EQ(d.checksum_trailer()->digest, Sha256("abc"));
}

TEST(AwsChunkedTest, InvalidChecksumTrailers) {
  for (const std::string& t : {std::string("x-amz-checksum-crc32:not base64"),
                               std::string("x-amz-checksum-crc32:AAAAAAAAAAA="),  // 8 bytes
                               std::string("x-amz-checksum-crc32:AAAAAA==\r\n"
                                           "x-amz-checksum-crc32c:AAAAAA==")}) {
    const std::string body = "3\r\nabc\r\n0\r\n" + t + "\r\n\r\n";
    AwsChunkedDecoder d(StringSource(body), UnsignedAuth());
    auto out = DecodeAll(d);
    ASSERT_FALSE(out.has_value()) << t;
    ExpectStatus(out.error(), StatusCode::kInvalidArgument, "InvalidRequest");
  }
}

TEST(AwsChunkedTest, SignedTrailer) {
  const std::string payload = RandomPayload(20000, 3);
  auto crc = Hasher::Create(ChecksumAlgorithm::kCrc64Nvme);
  crc->Update(payload.data(), payload.size());
  const std::string crc_digest = crc->Digest();
  const std::string b64 = Base64Encode(crc_digest);
  auto encode = [&](const Trailers& t) {
    RefSigner s;
    s.prev = kExampleSeed;
    return EncodeBody(payload, 8192, &s, t, /*sign_trailers=*/true);
  };
  {
    AwsChunkedDecoder d(StringSource(encode({{"x-amz-checksum-crc64nvme", b64}})),
                        SignedAuth(kExampleSeed, PayloadMode::kStreamingSignedTrailer));
    auto out = DecodeAll(d, 5000);
    ASSERT_TRUE(out.has_value()) << out.error().ToString();
    EXPECT_EQ(*out, payload);
    ASSERT_TRUE(d.checksum_trailer().has_value());
    EXPECT_EQ(d.checksum_trailer()->algorithm, ChecksumAlgorithm::kCrc64Nvme);
    EXPECT_EQ(d.checksum_trailer()->digest, crc_digest);
  }
  {
    // Trailer value changed after signing.
    std::string body = encode({{"x-amz-checksum-crc64nvme", b64}});
    body.replace(body.find(b64), b64.size(), Base64Encode(std::string(8, '\0')));
    AwsChunkedDecoder d(StringSource(body),
                        SignedAuth(kExampleSeed, PayloadMode::kStreamingSignedTrailer));
    auto out = DecodeAll(d);
    ASSERT_FALSE(out.has_value());
    ExpectStatus(out.error(), StatusCode::kPermissionDenied, "SignatureDoesNotMatch");
  }
  {
    // Trailer signature missing.
    RefSigner s;
    s.prev = kExampleSeed;
    const std::string body =
        EncodeBody(payload, 8192, &s, {{"x-amz-checksum-crc64nvme", b64}}, false);
    AwsChunkedDecoder d(StringSource(body),
                        SignedAuth(kExampleSeed, PayloadMode::kStreamingSignedTrailer));
    auto out = DecodeAll(d);
    ASSERT_FALSE(out.has_value());
    ExpectStatus(out.error(), StatusCode::kPermissionDenied, "SignatureDoesNotMatch");
  }
  {
    // An extra, unsigned trailer injected.
    std::string body = encode({{"x-amz-checksum-crc64nvme", b64}});
    body.insert(body.find("x-amz-trailer-signature:"), "x-amz-meta-evil:1\r\n");
    AwsChunkedDecoder d(StringSource(body),
                        SignedAuth(kExampleSeed, PayloadMode::kStreamingSignedTrailer));
    auto out = DecodeAll(d);
    ASSERT_FALSE(out.has_value());
    ExpectStatus(out.error(), StatusCode::kPermissionDenied, "SignatureDoesNotMatch");
  }
}

// ---- Framing errors.

TEST(AwsChunkedTest, EveryTruncationIsAnError) {
  const std::string payload = RandomPayload(300, 4);
  RefSigner s;
  s.prev = kExampleSeed;
  const std::string signed_body = EncodeBody(payload, 100, &s);
  const std::string unsigned_body =
      EncodeBody(payload, 100, nullptr, {{"x-amz-checksum-crc32", "AAAAAA=="}});
  for (size_t len = 0; len < signed_body.size(); ++len) {
    AwsChunkedDecoder d(StringSource(signed_body.substr(0, len)), SignedAuth(kExampleSeed));
    auto out = DecodeAll(d, 64);
    ASSERT_FALSE(out.has_value()) << "signed body truncated to " << len << " decoded cleanly";
    EXPECT_EQ(out.error().code(), StatusCode::kInvalidArgument) << out.error().ToString();
  }
  for (size_t len = 0; len < unsigned_body.size(); ++len) {
    AwsChunkedDecoder d(StringSource(unsigned_body.substr(0, len)), UnsignedAuth());
    auto out = DecodeAll(d, 64);
    ASSERT_FALSE(out.has_value()) << "unsigned body truncated to " << len << " decoded cleanly";
    EXPECT_EQ(out.error().code(), StatusCode::kInvalidArgument) << out.error().ToString();
  }
  // Truncation inside data reports IncompleteBody.
  AwsChunkedDecoder d(StringSource(signed_body.substr(0, 150)), SignedAuth(kExampleSeed));
  auto out = DecodeAll(d);
  ASSERT_FALSE(out.has_value());
  ExpectStatus(out.error(), StatusCode::kInvalidArgument, "IncompleteBody");
}

TEST(AwsChunkedTest, MalformedFraming) {
  const std::string sig(64, 'a');
  const std::vector<std::pair<std::string, bool /*signed*/>> cases = {
      {"zz\r\nabc\r\n0\r\n\r\n", false},                           // bad hex
      {"\r\n0\r\n\r\n", false},                                    // empty size
      {"3\nabc\r\n0\r\n\r\n", false},                              // LF only
      {"3\r\nabcd\r\n0\r\n\r\n", false},                           // data longer than size
      {"5\r\nabc\r\n0\r\n\r\n", false},                            // data shorter than size
      {"11111111111111111\r\n", false},                            // > 16 hex digits
      {"3\r\nabc\r\n0\r\nbadtrailer\r\n\r\n", false},              // trailer without colon
      {"3\r\nabc\r\n0\r\n\r\nextra", false},                       // data after the end
      {"3\r\nabc\r\n0\r\n\r\n", true},                             // signed without signature
      {"3;chunk-signature=abc\r\nabc\r\n0\r\n\r\n", true},         // short signature
      {"3;chunk-signature=" + sig + "\r\nabc\r\n0\r\n\r\n", true},  // final chunk unsigned
      {std::string(5000, '1') + "\r\n", false},                     // overlong line
  };
  for (const auto& [body, is_signed] : cases) {
    AwsChunkedDecoder d(StringSource(body),
                        is_signed ? SignedAuth(kExampleSeed) : UnsignedAuth());
    auto out = DecodeAll(d);
    ASSERT_FALSE(out.has_value()) << body.substr(0, 60);
    // Framing errors are kInvalidArgument, except the signature chain
    // catching a chunk it cannot verify.
    if (out.error().code() != StatusCode::kPermissionDenied) {
      EXPECT_EQ(out.error().code(), StatusCode::kInvalidArgument) << out.error().ToString();
      EXPECT_TRUE(StartsWith(out.error().message(), "InvalidRequest: ") ||
                  StartsWith(out.error().message(), "IncompleteBody: "))
          << out.error().message();
    }
  }
}

TEST(AwsChunkedTest, ChunkExtensionsIgnoredWhenUnsigned) {
  AwsChunkedDecoder d(StringSource("3;foo=bar\r\nabc\r\n0;x=y\r\n\r\n"), UnsignedAuth());
  auto out = DecodeAll(d);
  ASSERT_TRUE(out.has_value()) << out.error().ToString();
  EXPECT_EQ(*out, "abc");
}

TEST(AwsChunkedTest, OversizedSignedChunk) {
  const std::string payload = RandomPayload(5000, 5);
  RefSigner s;
  s.prev = kExampleSeed;
  AwsChunkedOptions o;
  o.max_signed_chunk_size = 4096;
  AwsChunkedDecoder d(StringSource(EncodeBody(payload, 5000, &s)), SignedAuth(kExampleSeed), o);
  auto out = DecodeAll(d);
  ASSERT_FALSE(out.has_value());
  ExpectStatus(out.error(), StatusCode::kInvalidArgument, "InvalidChunkSizeError");
  // The default cap is 16 MiB.
  AwsChunkedDecoder big(StringSource("1000001;chunk-signature=" + std::string(64, 'a') + "\r\n"),
                        SignedAuth(kExampleSeed));
  out = DecodeAll(big);
  ASSERT_FALSE(out.has_value());
  ExpectStatus(out.error(), StatusCode::kInvalidArgument, "InvalidChunkSizeError");
}

TEST(AwsChunkedTest, DecodedLengthMustMatch) {
  const std::string payload = RandomPayload(1000, 6);
  const std::string body = EncodeBody(payload, 400, nullptr);
  {
    AwsChunkedOptions o;
    o.expected_decoded_length = 999;  // fewer than sent: rejected when the chunk arrives
    AwsChunkedDecoder d(StringSource(body), UnsignedAuth(), o);
    auto out = DecodeAll(d);
    ASSERT_FALSE(out.has_value());
    EXPECT_EQ(out.error().code(), StatusCode::kInvalidArgument);
    EXPECT_LE(d.decoded_length(), 999u);
  }
  {
    AwsChunkedOptions o;
    o.expected_decoded_length = 1001;  // more than sent
    AwsChunkedDecoder d(StringSource(body), UnsignedAuth(), o);
    auto out = DecodeAll(d);
    ASSERT_FALSE(out.has_value());
    ExpectStatus(out.error(), StatusCode::kInvalidArgument, "IncompleteBody");
  }
  {
    AwsChunkedOptions o;
    o.expected_decoded_length = 1000;
    AwsChunkedDecoder d(StringSource(body), UnsignedAuth(), o);
    auto out = DecodeAll(d);
    ASSERT_TRUE(out.has_value()) << out.error().ToString();
    EXPECT_EQ(d.decoded_length(), 1000u);
  }
}

TEST(AwsChunkedTest, SourceErrorsPropagateAndStick) {
  int calls = 0;
  AwsChunkedDecoder d(
      [&calls](char* buf, size_t n) -> Result<size_t> {
        if (calls++ == 0) {
          const std::string first = "5\r\nab";
          std::copy(first.begin(), first.end(), buf);
          return first.size();
        }
        return Status::IOError("connection reset by peer");
      },
      UnsignedAuth());
  char buf[16];
  auto r = d.Read(buf, sizeof(buf));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(std::string(buf, *r), "ab");
  r = d.Read(buf, sizeof(buf));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kIOError);
  const int calls_after_error = calls;
  r = d.Read(buf, sizeof(buf));
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kIOError);
  EXPECT_EQ(calls, calls_after_error);  // sticky: the source is not touched again
}

TEST(AwsChunkedTest, RandomSignedBodiesRoundTrip) {
  std::mt19937 rng(7);
  for (int iter = 0; iter < 40; ++iter) {
    const std::string payload = RandomPayload(rng() % 50000, rng());
    const size_t chunk = 1 + rng() % 20000;
    RefSigner s;
    s.prev = kExampleSeed;
    const bool trailer = iter % 2;
    const std::string body =
        trailer ? EncodeBody(payload, chunk, &s, {{"x-amz-checksum-crc32c", "AAAAAA=="}}, true)
                : EncodeBody(payload, chunk, &s);
    AwsChunkedDecoder d(StringSource(body, 1 + rng() % 10000),
                        SignedAuth(kExampleSeed, trailer ? PayloadMode::kStreamingSignedTrailer
                                                         : PayloadMode::kStreamingSigned));
    auto out = DecodeAll(d, 1 + rng() % 30000);
    ASSERT_TRUE(out.has_value()) << out.error().ToString();
    EXPECT_EQ(*out, payload);
  }
}

}  // namespace
}  // namespace strata::s3
