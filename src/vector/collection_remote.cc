// Collections on an object store (remote.h): the writer's lease, publishing
// a collection's files and MANIFEST with conditional PUTs, and copying a
// published collection into a local directory.
#include "vector/collection_remote.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/core/clock.h>
#include <strata/core/file_util.h>
#include <strata/core/log.h>

#include "vector/collection_internal.h"

namespace strata::vector::internal {

using json = nlohmann::json;
using objstore::ObjectInfo;
using objstore::ObjectStore;
namespace fs = std::filesystem;

namespace {

constexpr log::Logger kLog("vector");
constexpr const char* kLeaseKey = ".writer";
// A segment file a newer manifest no longer names is deleted this long after,
// so a replica still copying the older manifest's files can finish.
constexpr int64_t kGarbageGraceMs = 60'000;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool LostRace(const Status& st) {
  return st.code() == StatusCode::kPreconditionFailed || st.code() == StatusCode::kConflict;
}

// The object and its ETag; kNotFound when absent.
Result<std::pair<std::string, std::string>> GetWithEtag(ObjectStore* store,
                                                        const std::string& key) {
  std::string body;
  ObjectInfo info;
  STRATA_RETURN_IF_ERROR(store->Get(
      key, {},
      [&](const char* d, size_t n) {
        body.append(d, n);
        return Status::Ok();
      },
      &info));
  return std::make_pair(std::move(body), info.etag);
}

std::string DescribeLease(const json& j) {
  const int64_t age = NowMs() - j.value("renewed_ms", int64_t{0});
  return fmt::format("writer {} ({}, host {}, pid {}), lease renewed {:.1f} s ago",
                     j.value("id", "?"), j.value("endpoint", "?"), j.value("host", "?"),
                     j.value("pid", 0), double(age) / 1000.0);
}

// Local files of a collection directory worth publishing, relative names.
std::vector<std::string> FilesOf(const std::string& dir, const std::vector<uint64_t>& segments) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const char* f : {"config.json", "milvus.json"}) {
    if (fs::exists(dir + "/" + f, ec)) out.push_back(f);
  }
  std::set<std::string> prefixes;
  for (uint64_t id : segments) prefixes.insert(fmt::format("{:016d}.", id));
  for (const auto& e : fs::directory_iterator(dir + "/segments", ec)) {
    const std::string n = e.path().filename().string();
    if (n.size() > 17 && prefixes.count(n.substr(0, 17)) && n.find(".tmp") == std::string::npos)
      out.push_back("segments/" + n);
  }
  return out;
}

}  // namespace

std::string DescribeWriter(ObjectStore* store) {
  auto got = GetWithEtag(store, kLeaseKey);
  if (!got)
    return got.error().code() == StatusCode::kNotFound ? "no writer" : got.error().ToString();
  json j = json::parse(got->first, nullptr, false);
  if (!j.is_object()) return "a writer whose lease is unreadable";
  return DescribeLease(j);
}

std::string WriterLease::Body() const {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  json j = {{"id", id_},         {"endpoint", endpoint_}, {"host", host},
            {"pid", ::getpid()}, {"renewed_ms", NowMs()}, {"ttl_ms", ttl_ms_}};
  return j.dump();
}

Result<std::unique_ptr<WriterLease>> WriterLease::Acquire(ObjectStore* store, std::string id,
                                                          std::string endpoint, int64_t ttl_ms) {
  std::unique_ptr<WriterLease> lease(
      new WriterLease(store, std::move(id), std::move(endpoint), ttl_ms));
  objstore::WriteOptions wo;
  wo.content_type = "application/json";
  auto got = GetWithEtag(store, kLeaseKey);
  if (!got && got.error().code() != StatusCode::kNotFound) {
    return got.error().WithContext(fmt::format("reading the writer lease of {}", store->url()));
  }
  if (!got) {
    wo.if_none_match_star = true;
  } else {
    json j = json::parse(got->first, nullptr, false);
    const bool mine = j.is_object() && j.value("id", "") == lease->id_;
    const bool expired =
        !j.is_object() || NowMs() - j.value("renewed_ms", int64_t{0}) > j.value("ttl_ms", ttl_ms);
    if (!mine && !expired) {
      return Status::PreconditionFailed(fmt::format(
          "vector storage {} is held by {}; a second writer is refused: stop that writer (its "
          "lease expires {} ms after its last renewal) or serve reads with --vector-replica-of",
          store->url(), DescribeLease(j), j.value("ttl_ms", ttl_ms)));
    }
    if (!mine) kLog.Warn("taking over the expired lease of {}", DescribeLease(j));
    wo.if_match = got->second;
  }
  auto put = store->PutBytes(kLeaseKey, lease->Body(), wo);
  if (!put) {
    if (LostRace(put.error())) {
      return Status::PreconditionFailed(
          fmt::format("vector storage {} was just taken by {}; a second writer is refused",
                      store->url(), DescribeWriter(store)));
    }
    return put.error().WithContext(fmt::format("taking the writer lease of {}", store->url()));
  }
  lease->etag_ = put->etag;
  return lease;
}

Status WriterLease::Renew() {
  std::lock_guard<std::mutex> l(mu_);
  objstore::WriteOptions wo;
  wo.content_type = "application/json";
  wo.if_match = etag_;
  auto put = store_->PutBytes(kLeaseKey, Body(), wo);
  if (!put) {
    if (LostRace(put.error())) {
      return Status::PreconditionFailed(fmt::format(
          "this server lost the writer lease of {} to {}; it no longer writes there; send "
          "writes to that writer",
          store_->url(), DescribeWriter(store_)));
    }
    return put.error();
  }
  etag_ = put->etag;
  return Status::Ok();
}

ObjectPublisher::ObjectPublisher(ObjectStore* store, std::string collection, std::string etag,
                                 const std::map<std::string, uint64_t>& remote,
                                 const std::string& dir)
    : store_(store), collection_(std::move(collection)), etag_(std::move(etag)) {
  for (const auto& [rel, size] : remote) {
    struct stat st;
    if (::stat((dir + "/" + rel).c_str(), &st) == 0 && uint64_t(st.st_size) == size &&
        rel.rfind("segments/", 0) == 0) {
      sent_[rel] = {size, int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
    }
  }
}

Status ObjectPublisher::Upload(const std::string& dir, const std::string& rel) {
  const std::string path = dir + "/" + rel;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return Status::FromErrno(err, "stat " + path);
  }
  const std::pair<uint64_t, int64_t> id{
      uint64_t(st.st_size), int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
  auto it = sent_.find(rel);
  if (it != sent_.end() && it->second == id) {
    ::close(fd);
    return Status::Ok();
  }
  objstore::FileSource src(fd, 0, id.first);
  objstore::WriteOptions wo;
  wo.size = id.first;
  auto put = store_->Put(collection_ + "/" + rel, src, wo);
  ::close(fd);
  if (!put) return put.error().WithContext(fmt::format("publishing {}", path));
  sent_[rel] = id;
  return Status::Ok();
}

Status ObjectPublisher::CollectGarbage(const std::vector<std::string>& live) {
  const std::set<std::string> keep(live.begin(), live.end());
  const int64_t now = NowMs();
  for (auto it = sent_.begin(); it != sent_.end(); ++it) {
    if (!keep.count(it->first)) doomed_.emplace(it->first, now);
  }
  std::vector<std::string> keys;
  for (auto it = doomed_.begin(); it != doomed_.end();) {
    if (keep.count(it->first)) {
      it = doomed_.erase(it);
    } else if (now - it->second >= kGarbageGraceMs) {
      keys.push_back(collection_ + "/" + it->first);
      sent_.erase(it->first);
      it = doomed_.erase(it);
    } else {
      ++it;
    }
  }
  if (keys.empty()) return Status::Ok();
  auto del = store_->DeleteMany(keys);
  if (!del)
    kLog.Warn("collection {}: old segment objects not deleted: {}", collection_,
              del.error().ToString());
  return Status::Ok();
}

Status ObjectPublisher::Publish(const std::string& dir, const std::string& manifest) {
  std::lock_guard<std::mutex> l(mu_);
  STRATA_ASSIGN_OR_RETURN(auto man, Collection::Impl::ReadManifest(dir + "/MANIFEST"));
  std::vector<uint64_t> ids;
  for (const auto& s : man.segments) ids.push_back(s.id);
  const std::vector<std::string> files = FilesOf(dir, ids);
  for (const auto& rel : files) STRATA_RETURN_IF_ERROR(Upload(dir, rel));
  objstore::WriteOptions wo;
  if (etag_.empty()) {
    wo.if_none_match_star = true;
  } else {
    wo.if_match = etag_;
  }
  auto put = store_->PutBytes(collection_ + "/MANIFEST", manifest, wo);
  if (!put) {
    if (LostRace(put.error())) {
      return Status::PreconditionFailed(fmt::format(
          "collection \"{}\" in {} was published by another writer ({}); this server stopped "
          "writing to it: send writes to that writer",
          collection_, store_->url(), DescribeWriter(store_)));
    }
    return put.error().WithContext(fmt::format("publishing the manifest of \"{}\"", collection_));
  }
  etag_ = put->etag;
  return CollectGarbage(files);
}

bool ObjectPublisher::RootFilesChanged(const std::string& dir) {
  std::lock_guard<std::mutex> l(mu_);
  for (const char* f : {"config.json", "milvus.json"}) {
    struct stat st;
    if (::stat((dir + "/" + f).c_str(), &st) != 0) continue;
    const std::pair<uint64_t, int64_t> id{
        uint64_t(st.st_size), int64_t(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec};
    auto it = sent_.find(f);
    if (it == sent_.end() || it->second != id) return true;
  }
  return false;
}

Result<std::vector<std::string>> ListRemoteCollections(ObjectStore* store) {
  std::vector<std::string> out;
  std::string token;
  do {
    STRATA_ASSIGN_OR_RETURN(auto page, store->List("", "/", token));
    for (std::string p : page.common_prefixes) {
      if (!p.empty() && p.back() == '/') p.pop_back();
      if (CollectionManager::ValidateName(p).ok()) out.push_back(p);
    }
    token = page.next_token;
  } while (!token.empty());
  return out;
}

Result<std::string> DownloadCollection(ObjectStore* meta, ObjectStore* data,
                                       const std::string& name, const std::string& dir,
                                       const std::string& prev_dir,
                                       std::map<std::string, std::string>* etags) {
  std::error_code ec;
  fs::create_directories(dir + "/segments", ec);
  if (ec) return Status::IOError(fmt::format("cannot create {}: {}", dir, ec.message()));
  STRATA_ASSIGN_OR_RETURN(auto man, GetWithEtag(meta, name + "/MANIFEST"));
  STRATA_RETURN_IF_ERROR(WriteFileAtomic(dir + "/MANIFEST", man.first));
  STRATA_ASSIGN_OR_RETURN(auto parsed, Collection::Impl::ReadManifest(dir + "/MANIFEST"));
  std::map<std::string, ObjectInfo> objects;
  STRATA_RETURN_IF_ERROR(meta->ListAll(name + "/", [&](const ObjectInfo& o) {
    objects[o.key.substr(name.size() + 1)] = o;
    return Status::Ok();
  }));
  std::set<std::string> prefixes;
  for (const auto& s : parsed.segments) prefixes.insert(fmt::format("segments/{:016d}.", s.id));
  std::map<std::string, std::string> next;
  for (const auto& [rel, info] : objects) {
    const bool root_file = rel == "config.json" || rel == "milvus.json";
    if (!root_file && !(rel.size() > 26 && prefixes.count(rel.substr(0, 26)))) continue;
    const std::string path = dir + "/" + rel;
    auto old = etags->find(rel);
    if (!prev_dir.empty() && old != etags->end() && old->second == info.etag) {
      fs::create_hard_link(prev_dir + "/" + rel, path, ec);
      if (!ec) {
        next[rel] = info.etag;
        continue;
      }
    }
    const std::string tmp = path + ".part";
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return Status::FromErrno(errno, "create " + tmp);
    objstore::ReadOptions ro;
    ro.if_match = info.etag;
    Status st =
        data->Get(info.key, ro, [&](const char* d, size_t n) { return WriteAll(fd, d, n, tmp); });
    ::close(fd);
    if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) st = Status::FromErrno(errno, path);
    if (!st.ok()) {
      ::unlink(tmp.c_str());
      return st.WithContext(fmt::format("copying collection \"{}\"", name));
    }
    next[rel] = info.etag;
  }
  if (!next.count("config.json"))
    return Status::NotFound(fmt::format("collection \"{}\" has no config.json in the store", name));
  for (const auto& s : parsed.segments) {
    if (!next.count(fmt::format("segments/{:016d}.dat", s.id)))
      return Status::NotFound(fmt::format("segment {} of \"{}\" is not in the store", s.id, name));
  }
  *etags = std::move(next);
  return man.second;
}

}  // namespace strata::vector::internal
