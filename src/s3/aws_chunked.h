// Decoder for `Content-Encoding: aws-chunked` request bodies (SigV4 streaming).
//
// Wraps a pull source (the raw HTTP body) and yields the decoded payload.
// Framing: `hex-size[;chunk-signature=sig]\r\n<data>\r\n` ... `0[;...]\r\n`,
// then optional trailers (`name:value\r\n`) and a final `\r\n`.
//
// Signed modes (STREAMING-AWS4-HMAC-SHA256-PAYLOAD[-TRAILER]) verify each
// chunk's signature, chained from the request's seed signature, before any of
// its bytes are released, so a chunk is buffered whole (at most
// max_signed_chunk_size); with a caller buffer at least as large as the chunk,
// the chunk is read straight into it. The signed-trailer mode also verifies
// x-amz-trailer-signature. Unsigned mode (STREAMING-UNSIGNED-PAYLOAD-TRAILER)
// streams chunk data through without buffering.
//
// Errors follow sigv4.h: "IncompleteBody: ..." (truncated), "InvalidRequest:
// ..." (bad framing), "InvalidChunkSizeError: ..." (kInvalidArgument), and
// "SignatureDoesNotMatch: ..." (kPermissionDenied). Errors are sticky.
// Checking the trailer checksum against the payload is the caller's job: it
// hashes the payload anyway while storing it.
//
// Thread-compatible: one decoder per request, used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <strata/core/checksum.h>
#include <strata/core/result.h>

#include "s3/sigv4.h"

namespace strata::s3 {

struct AwsChunkedOptions {
  // Largest chunk accepted in the signed modes (each is buffered to be verified).
  size_t max_signed_chunk_size = 16 << 20;
  // When set (from X-Amz-Decoded-Content-Length), the decoded payload must be
  // exactly this long; more is rejected as soon as it arrives.
  std::optional<uint64_t> expected_decoded_length;
  size_t max_line = 4096;    // one chunk header or trailer line
  size_t max_trailers = 32;  // trailer lines, excluding the trailer signature
};

// A trailer that carries a checksum, e.g. x-amz-checksum-crc32:BASE64.
struct ChecksumTrailer {
  ChecksumAlgorithm algorithm = ChecksumAlgorithm::kNone;
  std::string base64;  // as sent
  std::string digest;  // decoded raw bytes (big-endian for CRCs), as Hasher::Digest()
};

class AwsChunkedDecoder {
 public:
  using Source = std::function<Result<size_t>(char* buf, size_t n)>;  // 0 at end

  // `auth` selects the mode: kStreamingSigned / kStreamingSignedTrailer verify
  // signatures with its signing_key, scope, amz_date and seed_signature; any
  // other mode decodes unsigned chunks.
  AwsChunkedDecoder(Source source, const AuthResult& auth, AwsChunkedOptions options = {});
  ~AwsChunkedDecoder();
  AwsChunkedDecoder(const AwsChunkedDecoder&) = delete;
  AwsChunkedDecoder& operator=(const AwsChunkedDecoder&) = delete;

  // Up to n decoded bytes; 0 once the final chunk and trailers are read and
  // verified (and for n == 0).
  Result<size_t> Read(char* buf, size_t n);

  bool done() const { return state_ == State::kDone; }
  // Decoded payload bytes released so far (compare with X-Amz-Decoded-Content-Length).
  uint64_t decoded_length() const { return decoded_; }
  // Trailers after the final chunk, names lower-cased, values trimmed, in order;
  // x-amz-trailer-signature is not included. Complete once done().
  const std::vector<std::pair<std::string, std::string>>& trailers() const { return trailers_; }
  // The x-amz-checksum-* trailer, if one was sent (its base64 is validated).
  const std::optional<ChecksumTrailer>& checksum_trailer() const { return checksum_trailer_; }

 private:
  enum class State { kChunkHeader, kChunkData, kChunkDataEnd, kServing, kTrailers, kDone, kError };

  Status Fail(Status st);
  Status ReadLine(std::string_view* line);
  Status ReadExact(char* dst, size_t n);
  Status ExpectCrlf();
  Status Fill();
  Status ParseChunkHeader(std::string_view line, uint64_t* size);
  Status VerifyChunk(std::string_view data, std::string_view sig);
  Status ReadTrailers();
  Status CountDecoded(uint64_t n);

  Source source_;
  AwsChunkedOptions options_;
  bool signed_ = false;
  bool signed_trailer_ = false;
  std::string signing_key_, scope_, amz_date_;
  std::string prev_signature_;
  std::string sts_;  // reused string-to-sign buffer

  // Raw input buffered for framing: in_[in_pos_, in_len_) is unread.
  std::unique_ptr<char[]> in_;
  size_t in_cap_ = 0, in_pos_ = 0, in_len_ = 0;
  bool source_eof_ = false;

  State state_ = State::kChunkHeader;
  Status error_;
  uint64_t chunk_remaining_ = 0;  // unsigned: bytes of the current chunk still to stream
  std::string chunk_signature_;   // signature of the chunk being read
  std::unique_ptr<char[]> chunk_;  // signed: the verified chunk being served
  size_t chunk_cap_ = 0, chunk_len_ = 0, chunk_pos_ = 0;
  uint64_t chunk_index_ = 0;  // for error messages
  uint64_t decoded_ = 0;
  std::vector<std::pair<std::string, std::string>> trailers_;
  std::optional<ChecksumTrailer> checksum_trailer_;
};

}  // namespace strata::s3
