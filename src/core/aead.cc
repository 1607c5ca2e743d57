#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <strata/core/aead.h>

namespace strata::crypto {
namespace {

struct CtxFree {
  void operator()(EVP_CIPHER_CTX* c) const { EVP_CIPHER_CTX_free(c); }
};
using CtxPtr = std::unique_ptr<EVP_CIPHER_CTX, CtxFree>;

Status Fail(const char* what) { return Status::Internal(std::string("AES-256-GCM: ") + what); }

}  // namespace

Status AesGcmSeal(std::string_view key, const GcmIv& iv, std::string_view aad, const char* in,
                  size_t n, char* out) {
  if (key.size() != kAes256KeyBytes) return Status::InvalidArgument("AES-256 key must be 32 bytes");
  CtxPtr ctx(EVP_CIPHER_CTX_new());
  if (!ctx) return Fail("out of memory");
  const auto* k = reinterpret_cast<const unsigned char*>(key.data());
  int len = 0;
  if (EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, k, iv.data()) != 1)
    return Fail("init");
  if (!aad.empty() && EVP_EncryptUpdate(ctx.get(), nullptr, &len,
                                        reinterpret_cast<const unsigned char*>(aad.data()),
                                        static_cast<int>(aad.size())) != 1)
    return Fail("aad");
  auto* o = reinterpret_cast<unsigned char*>(out);
  size_t done = 0;
  while (done < n) {
    const int chunk = static_cast<int>(std::min<size_t>(n - done, 1 << 30));
    if (EVP_EncryptUpdate(ctx.get(), o + done, &len,
                          reinterpret_cast<const unsigned char*>(in) + done, chunk) != 1)
      return Fail("encrypt");
    done += static_cast<size_t>(len);
  }
  if (EVP_EncryptFinal_ex(ctx.get(), o + done, &len) != 1) return Fail("final");
  if (EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kGcmTagBytes, o + n) != 1)
    return Fail("tag");
  return Status::Ok();
}

Status AesGcmOpen(std::string_view key, const GcmIv& iv, std::string_view aad, const char* in,
                  size_t n, char* out) {
  if (key.size() != kAes256KeyBytes) return Status::InvalidArgument("AES-256 key must be 32 bytes");
  if (n < kGcmTagBytes) return Status::Corruption("sealed data is shorter than its tag");
  const size_t m = n - kGcmTagBytes;
  CtxPtr ctx(EVP_CIPHER_CTX_new());
  if (!ctx) return Fail("out of memory");
  const auto* k = reinterpret_cast<const unsigned char*>(key.data());
  int len = 0;
  if (EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, k, iv.data()) != 1)
    return Fail("init");
  if (!aad.empty() && EVP_DecryptUpdate(ctx.get(), nullptr, &len,
                                        reinterpret_cast<const unsigned char*>(aad.data()),
                                        static_cast<int>(aad.size())) != 1)
    return Fail("aad");
  auto* o = reinterpret_cast<unsigned char*>(out);
  size_t done = 0;
  while (done < m) {
    const int chunk = static_cast<int>(std::min<size_t>(m - done, 1 << 30));
    if (EVP_DecryptUpdate(ctx.get(), o + done, &len,
                          reinterpret_cast<const unsigned char*>(in) + done, chunk) != 1)
      return Fail("decrypt");
    done += static_cast<size_t>(len);
  }
  std::array<unsigned char, kGcmTagBytes> tag;
  std::memcpy(tag.data(), in + m, kGcmTagBytes);
  if (EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kGcmTagBytes, tag.data()) != 1)
    return Fail("tag");
  if (EVP_DecryptFinal_ex(ctx.get(), o + done, &len) != 1)
    return Status::PermissionDenied(
        "AES-256-GCM authentication failed: wrong key, or the sealed bytes were altered");
  return Status::Ok();
}

Status RandomBytes(void* out, size_t n) {
  if (RAND_bytes(static_cast<unsigned char*>(out), static_cast<int>(n)) != 1)
    return Status::Internal("the random number generator failed");
  return Status::Ok();
}

std::string RandomString(size_t n) {
  std::string s(n, '\0');
  if (!RandomBytes(s.data(), n).ok()) std::abort();
  return s;
}

}  // namespace strata::crypto
