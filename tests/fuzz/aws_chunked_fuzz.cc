// Fuzzes the aws-chunked body decoder (SigV4 streaming uploads): chunk size
// lines, chunk-signature extensions, CRLFs, trailers and the checksum trailer.
// The first input byte picks the mode (unsigned-trailer, signed, signed with
// trailer), the read size and whether X-Amz-Decoded-Content-Length is set;
// the rest is the raw HTTP body, handed to the decoder in pieces of a size
// the same byte picks, so framing split across reads is covered. Signatures
// cannot be forged by a fuzzer, so the signed modes stop at the first chunk's
// signature check; the unsigned mode reaches the trailers.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "s3/aws_chunked.h"

using strata::s3::AuthResult;
using strata::s3::AwsChunkedDecoder;
using strata::s3::AwsChunkedOptions;
using strata::s3::PayloadMode;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t ctl = data[0];
  std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);

  AuthResult auth;
  switch (ctl & 3) {
    case 0:
    case 1:
      auth.payload_mode = PayloadMode::kStreamingUnsignedTrailer;
      break;
    case 2:
      auth.payload_mode = PayloadMode::kStreamingSigned;
      break;
    default:
      auth.payload_mode = PayloadMode::kStreamingSignedTrailer;
      break;
  }
  if (auth.payload_mode != PayloadMode::kStreamingUnsignedTrailer) {
    auth.amz_date = "20130524T000000Z";
    auth.scope = "20130524/us-east-1/s3/aws4_request";
    auth.signing_key = strata::s3::DeriveSigningKey("secret", "20130524", "us-east-1", "s3");
    auth.seed_signature = std::string(64, 'a');
  }
  AwsChunkedOptions opt;
  opt.max_signed_chunk_size = 4096;
  if (ctl & 4) opt.expected_decoded_length = body.size() / 2;
  const size_t source_piece = 1 + ((ctl >> 3) & 7) * 97;  // 1 .. 680 bytes per source read
  const size_t read_size = (ctl & 0x40) ? 3 : 8192;

  size_t pos = 0;
  AwsChunkedDecoder dec(
      [&](char* buf, size_t n) -> strata::Result<size_t> {
        const size_t k = std::min({n, source_piece, body.size() - pos});
        std::copy_n(body.data() + pos, k, buf);
        pos += k;
        return k;
      },
      auth, opt);
  std::string out(read_size, '\0');
  uint64_t total = 0;
  for (;;) {
    auto got = dec.Read(out.data(), out.size());
    if (!got.has_value()) break;
    if (*got == 0) {
      // Done: everything released was counted, and a set length was met.
      if (!dec.done() || dec.decoded_length() != total) __builtin_trap();
      if (opt.expected_decoded_length && total != *opt.expected_decoded_length) __builtin_trap();
      break;
    }
    if (*got > out.size()) __builtin_trap();
    total += *got;
  }
  return 0;
}
