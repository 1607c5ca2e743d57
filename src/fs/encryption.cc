#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <openssl/evp.h>

#include <strata/core/aead.h>
#include <strata/core/checksum.h>
#include <strata/core/strings.h>
#include <strata/fs/encryption.h>

namespace strata::fs {
namespace {

constexpr std::string_view kBlockLabel = "strata-fs block key v1";
constexpr std::string_view kCheckLabel = "strata-fs key check v1";
constexpr std::string_view kCheckConstant = "strata-fs: this is the volume's key";

std::string Label(std::string_view label, const std::string& uuid) {
  std::string s(label);
  s.push_back('\0');
  s += uuid;
  return s;
}

// The master key: the raw key, or the passphrase stretched with the salt.
Result<std::string> MasterKey(std::string_view material, const std::string& salt_hex) {
  if (material.size() == crypto::kAes256KeyBytes) {
    if (!salt_hex.empty())
      return Status::PermissionDenied(
          "the volume was formatted with a passphrase, this key file holds a raw 32-byte key");
    return std::string(material);
  }
  std::string_view pass = material;
  if (!pass.empty() && pass.back() == '\n') pass.remove_suffix(1);
  if (!pass.empty() && pass.back() == '\r') pass.remove_suffix(1);
  if (pass.size() < 8)
    return Status::InvalidArgument(
        "the encryption key file must hold a raw 32-byte key or a passphrase of at least 8 bytes");
  if (salt_hex.empty())
    return Status::PermissionDenied(
        "the volume was formatted with a raw 32-byte key, this key file holds a passphrase");
  auto salt = HexDecode(salt_hex);
  if (!salt) return Status::Corruption("the volume's encrypt_salt is not hex");
  std::string key(crypto::kAes256KeyBytes, '\0');
  if (PKCS5_PBKDF2_HMAC(pass.data(), static_cast<int>(pass.size()),
                        reinterpret_cast<const unsigned char*>(salt->data()),
                        static_cast<int>(salt->size()), kPbkdf2Iterations, EVP_sha256(),
                        static_cast<int>(key.size()),
                        reinterpret_cast<unsigned char*>(key.data())) != 1)
    return Status::Internal("PBKDF2 failed");
  return key;
}

std::string CheckValue(const std::string& master, const std::string& uuid) {
  return HexEncode(HmacSha256(HmacSha256(master, Label(kCheckLabel, uuid)), kCheckConstant));
}

}  // namespace

Result<std::string> ReadKeyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound(fmt::format("cannot read the encryption key file {}", path));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::IOError(fmt::format("reading the encryption key file {}", path));
  return ss.str();
}

Status SetupEncryption(std::string_view material, fsmeta::Format* f) {
  if (f->uuid.empty())
    return Status::InvalidArgument("the volume needs a uuid before its key is set");
  f->encrypt = std::string(kEncryptAes256Gcm);
  f->encrypt_salt =
      material.size() == crypto::kAes256KeyBytes ? "" : HexEncode(crypto::RandomString(16));
  STRATA_ASSIGN_OR_RETURN(std::string master, MasterKey(material, f->encrypt_salt));
  f->encrypt_check = CheckValue(master, f->uuid);
  return Status::Ok();
}

Result<std::string> DeriveBlockKey(const fsmeta::Format& f, std::string_view material) {
  if (f.encrypt.empty()) return Status::InvalidArgument("the volume is not encrypted");
  if (f.encrypt != kEncryptAes256Gcm)
    return Status::NotSupported(fmt::format("unknown volume encryption \"{}\"", f.encrypt));
  STRATA_ASSIGN_OR_RETURN(std::string master, MasterKey(material, f.encrypt_salt));
  if (CheckValue(master, f.uuid) != f.encrypt_check)
    return Status::PermissionDenied(
        "wrong encryption key: it is not the key this volume was formatted with");
  return HmacSha256(master, Label(kBlockLabel, f.uuid));
}

Result<std::string> SealBlock(std::string_view key, std::string_view aad, std::string_view plain) {
  crypto::GcmIv iv;
  STRATA_RETURN_IF_ERROR(crypto::RandomBytes(iv.data(), iv.size()));
  std::string out(iv.size() + plain.size() + crypto::kGcmTagBytes, '\0');
  std::memcpy(out.data(), iv.data(), iv.size());
  STRATA_RETURN_IF_ERROR(
      crypto::AesGcmSeal(key, iv, aad, plain.data(), plain.size(), out.data() + iv.size()));
  return out;
}

Result<std::string> OpenBlock(std::string_view key, std::string_view aad, std::string_view sealed) {
  if (sealed.size() < kSealOverhead)
    return Status::Corruption(
        fmt::format("encrypted block of {} bytes is too short", sealed.size()));
  crypto::GcmIv iv;
  std::memcpy(iv.data(), sealed.data(), iv.size());
  std::string out(sealed.size() - kSealOverhead, '\0');
  Status st = crypto::AesGcmOpen(key, iv, aad, sealed.data() + iv.size(), sealed.size() - iv.size(),
                                 out.data());
  if (!st.ok())
    return Status::Corruption("encrypted block does not verify (altered, moved, or another key)");
  return out;
}

}  // namespace strata::fs
