#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <strata/core/aead.h>
#include <strata/core/checksum.h>
#include <strata/core/file_util.h>
#include <strata/core/strings.h>
#include <strata/s3/kms.h>

namespace strata::s3 {
namespace {

constexpr char kBuiltinKeyId[] = "aws/s3";

Result<std::string> ReadOrCreateMaster(const std::string& path) {
  std::ifstream in(path);
  if (in) {
    std::stringstream ss;
    ss << in.rdbuf();
    std::string hex(Trim(ss.str()));
    std::optional<std::string> raw = HexDecode(hex);
    if (!raw || raw->size() != crypto::kAes256KeyBytes)
      return Status::InvalidArgument("KMS master key file \"" + path +
                                     "\" must hold 64 hex characters (a 256-bit key)");
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && (st.st_mode & 077) != 0)
      return Status::PermissionDenied("KMS master key file \"" + path +
                                      "\" is readable by others; chmod 600 it");
    return *raw;
  }
  std::string raw = crypto::RandomString(crypto::kAes256KeyBytes);
  std::string text = HexEncode(raw) + "\n";
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Status::FromErrno(errno, "create KMS master key file " + path);
  Status st = WriteAll(fd, text.data(), text.size(), path);
  if (st.ok() && ::fsync(fd) != 0) st = Status::FromErrno(errno, "fsync " + path);
  ::close(fd);
  if (!st.ok()) {
    ::unlink(path.c_str());
    return st;
  }
  return raw;
}

}  // namespace

Result<std::shared_ptr<const KeyManager>> KeyManager::Open(const KmsOptions& options) {
  if (options.master_key_file.empty())
    return Status::InvalidArgument("KmsOptions::master_key_file is required");
  STRATA_ASSIGN_OR_RETURN(std::string master, ReadOrCreateMaster(options.master_key_file));
  return FromMasterKey(std::move(master), options);
}

Result<std::shared_ptr<const KeyManager>> KeyManager::FromMasterKey(std::string master,
                                                                    const KmsOptions& options) {
  if (master.size() != crypto::kAes256KeyBytes)
    return Status::InvalidArgument("the KMS master key is 32 bytes");
  std::shared_ptr<KeyManager> k(new KeyManager());
  k->master_ = std::move(master);
  for (const std::string& id : options.key_ids) {
    if (id.empty() || id.size() > 256 || id.find_first_of(" \t\r\n") != std::string::npos)
      return Status::InvalidArgument("KMS key id \"" + id +
                                     "\" must be 1-256 characters, no spaces");
    k->key_ids_.push_back(id);
  }
  if (k->key_ids_.empty()) k->key_ids_.push_back(kBuiltinKeyId);
  k->default_key_id_ =
      options.default_key_id.empty() ? k->key_ids_.front() : options.default_key_id;
  if (std::find(k->key_ids_.begin(), k->key_ids_.end(), k->default_key_id_) == k->key_ids_.end())
    return Status::InvalidArgument("default KMS key \"" + k->default_key_id_ +
                                   "\" is not declared");
  return std::shared_ptr<const KeyManager>(std::move(k));
}

std::string KeyManager::Resolve(std::string_view key_id) const {
  std::string_view name = key_id;
  if (StartsWith(name, "arn:aws:kms:")) {
    size_t slash = name.find(":key/");
    size_t alias = name.find(":alias/");
    if (slash != std::string_view::npos) {
      name = name.substr(slash + 5);
    } else if (alias != std::string_view::npos) {
      name = name.substr(alias + 7);
    } else {
      return "";
    }
  } else if (StartsWith(name, "alias/")) {
    name = name.substr(6);
  }
  for (const std::string& id : key_ids_) {
    if (id == name) return id;
  }
  return "";
}

std::string KeyManager::NewDataKey() { return crypto::RandomString(crypto::kAes256KeyBytes); }

std::string KeyManager::Kek(std::string_view key_id) const {
  return HmacSha256(
      master_, key_id.empty() ? std::string("strata:sse-s3") : "strata:kms:" + std::string(key_id));
}

Result<std::string> KeyManager::Wrap(std::string_view key_id, std::string_view data_key,
                                     std::string_view aad) const {
  if (!key_id.empty() && Resolve(key_id) != key_id)
    return Status::NotFound("KMS key \"" + std::string(key_id) + "\" does not exist");
  return WrapWith(Kek(key_id), data_key, aad);
}

Result<std::string> KeyManager::Unwrap(std::string_view key_id, std::string_view wrapped,
                                       std::string_view aad) const {
  if (!key_id.empty() && Resolve(key_id) != key_id)
    return Status::NotFound("KMS key \"" + std::string(key_id) + "\" does not exist");
  return UnwrapWith(Kek(key_id), wrapped, aad);
}

Result<std::string> KeyManager::WrapWith(std::string_view kek, std::string_view data_key,
                                         std::string_view aad) {
  crypto::GcmIv iv;
  STRATA_RETURN_IF_ERROR(crypto::RandomBytes(iv.data(), iv.size()));
  std::string out(iv.size() + data_key.size() + crypto::kGcmTagBytes, '\0');
  std::memcpy(out.data(), iv.data(), iv.size());
  STRATA_RETURN_IF_ERROR(
      crypto::AesGcmSeal(kek, iv, aad, data_key.data(), data_key.size(), out.data() + iv.size()));
  return out;
}

Result<std::string> KeyManager::UnwrapWith(std::string_view kek, std::string_view wrapped,
                                           std::string_view aad) {
  if (wrapped.size() != crypto::kGcmIvBytes + crypto::kAes256KeyBytes + crypto::kGcmTagBytes)
    return Status::Corruption("a wrapped data key has the wrong length");
  crypto::GcmIv iv;
  std::memcpy(iv.data(), wrapped.data(), iv.size());
  std::string out(crypto::kAes256KeyBytes, '\0');
  STRATA_RETURN_IF_ERROR(crypto::AesGcmOpen(kek, iv, aad, wrapped.data() + iv.size(),
                                            wrapped.size() - iv.size(), out.data()));
  return out;
}

}  // namespace strata::s3
