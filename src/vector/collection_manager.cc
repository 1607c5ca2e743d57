// CollectionManager: the collections under one root directory, one
// subdirectory each: open (skipping what cannot be opened), create, drop
// (rename out of the way, then remove), list, and snapshots kept under
// root/.snapshots/<collection>/.
#include <time.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <strata/core/clock.h>
#include <strata/core/file_util.h>
#include <strata/core/log.h>
#include <strata/vector/collection.h>

#include "vector/collection_internal.h"
#include "vector/collection_remote.h"

namespace strata::vector {

using json = nlohmann::json;
using internal::OptionsFromJson;
namespace fs = std::filesystem;

namespace {
constexpr log::Logger kLog("vector");
}  // namespace

Status CollectionManager::ValidateName(const std::string& name) {
  if (name.empty() || name.size() > 255) {
    return Status::InvalidArgument("collection names are 1 to 255 characters long");
  }
  if (name[0] == '.') return Status::InvalidArgument("collection names do not start with '.'");
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) {
      return Status::InvalidArgument(fmt::format(
          "collection name \"{}\" has a character other than letters, digits, '_', '-' and '.'",
          name));
    }
  }
  return Status::Ok();
}

Result<std::unique_ptr<CollectionManager>> CollectionManager::Open(
    const std::string& root, const CollectionOptions& defaults) {
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) return Status::IOError(fmt::format("cannot create {}: {}", root, ec.message()));
  std::unique_ptr<CollectionManager> m(new CollectionManager(root, defaults));
  STRATA_RETURN_IF_ERROR(m->OpenLocal());
  return m;
}

Status CollectionManager::OpenLocal() {
  const std::string& root = root_;
  const CollectionOptions& defaults = defaults_;
  CollectionManager* m = this;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    std::string name = e.path().filename().string();
    if (!e.is_directory() || name.empty() || name[0] == '.') continue;
    if (name.find(".dropping-") != std::string::npos) {
      fs::remove_all(e.path(), ec);
      continue;
    }
    if (!fs::exists(e.path() / "config.json")) {
      kLog.Warn("skipping {}: not a collection (no config.json)", e.path().string());
      continue;
    }
    // Stored options, with the process-wide ones (fsync, background work)
    // from this manager: `strata server --no-fsync` applies to every collection.
    CollectionOptions opts;
    {
      std::ifstream cin(e.path() / "config.json");
      json cfg = json::parse(cin, nullptr, false);
      if (cfg.is_object()) opts = OptionsFromJson(cfg.value("options", json::object()), opts);
    }
    opts.sync = opts.sync && defaults.sync;  // --no-fsync turns every collection's off
    opts.background = defaults.background;
    CollectionRole role;
    {
      std::lock_guard<std::mutex> l(mu_);
      role = RoleFor(name);
    }
    auto c = Collection::Open(e.path().string(), opts, role);
    if (!c) {
      kLog.Error("collection {} cannot be opened and is skipped: {}", name, c.error().ToString());
      continue;
    }
    m->collections_[name] = std::shared_ptr<Collection>(std::move(*c));
  }
  if (ec) return Status::IOError(fmt::format("cannot list {}: {}", root, ec.message()));
  return m->LoadAliases();
}

Status CollectionManager::LoadAliases() {
  std::ifstream in(root_ + "/.aliases.json");
  if (!in) return Status::Ok();
  json j = json::parse(in, nullptr, false);
  if (!j.is_object())
    return Status::Corruption(fmt::format("{}/.aliases.json is not a JSON object", root_));
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.value().is_string()) continue;
    // An alias of a collection that did not open (or is gone) is dropped.
    if (collections_.count(it.value().get<std::string>()))
      aliases_[it.key()] = it.value().get<std::string>();
  }
  return Status::Ok();
}

Status CollectionManager::SaveAliases() const {
  json j = json::object();
  for (const auto& [a, c] : aliases_) j[a] = c;
  return WriteFileAtomic(root_ + "/.aliases.json", j.dump(2));
}

Result<std::shared_ptr<Collection>> CollectionManager::Resolve(
    const std::string& name_or_alias) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = collections_.find(name_or_alias);
  if (it == collections_.end()) {
    auto a = aliases_.find(name_or_alias);
    if (a != aliases_.end()) it = collections_.find(a->second);
  }
  if (it == collections_.end())
    return Status::NotFound(fmt::format("collection \"{}\" does not exist", name_or_alias));
  return it->second;
}

Status CollectionManager::UpdateAliases(std::span<const AliasAction> actions) {
  STRATA_RETURN_IF_ERROR(CheckChangesAllowed());
  std::lock_guard<std::mutex> l(mu_);
  std::map<std::string, std::string> next = aliases_;
  using K = AliasAction::Kind;
  for (const auto& a : actions) {
    const std::string& target = a.kind == K::kRename ? a.new_alias : a.alias;
    if (a.kind != K::kDelete) {
      STRATA_RETURN_IF_ERROR(ValidateName(target).WithContext("alias"));
      if (collections_.count(target))
        return Status::AlreadyExists(fmt::format(
            "Collection with name `{}` already exists; an alias cannot take it", target));
    }
    if (a.kind == K::kCreate) {
      if (!collections_.count(a.collection))
        return Status::NotFound(fmt::format("Collection `{}` doesn't exist!", a.collection));
      next[a.alias] = a.collection;
      continue;
    }
    auto it = next.find(a.alias);
    if (it == next.end()) return Status::NotFound(fmt::format("Alias `{}` not found", a.alias));
    if (a.kind == K::kRename) {
      std::string coll = it->second;
      next.erase(it);
      next[a.new_alias] = coll;
    } else {
      next.erase(it);
    }
  }
  std::swap(aliases_, next);
  Status st = SaveAliases();
  if (!st.ok()) std::swap(aliases_, next);
  if (st.ok()) PublishAliases();
  return st;
}

std::map<std::string, std::string> CollectionManager::Aliases() const {
  std::lock_guard<std::mutex> l(mu_);
  return aliases_;
}

CollectionManager::~CollectionManager() {
  StopRemote();
  std::lock_guard<std::mutex> l(mu_);
  for (auto& [n, c] : collections_) c->Close();
}

Result<std::shared_ptr<Collection>> CollectionManager::Create(
    const std::string& name, const CollectionSchema& schema,
    const std::optional<CollectionOptions>& options) {
  STRATA_RETURN_IF_ERROR(ValidateName(name));
  STRATA_RETURN_IF_ERROR(CheckChangesAllowed());
  std::lock_guard<std::mutex> l(mu_);
  if (collections_.count(name))
    return Status::AlreadyExists(fmt::format("collection \"{}\" already exists", name));
  if (aliases_.count(name))
    return Status::AlreadyExists(fmt::format("\"{}\" is already an alias of a collection", name));
  const std::string dir = root_ + "/" + name;
  std::error_code ec;
  if (fs::exists(dir, ec)) fs::remove_all(dir, ec);  // debris of a failed create
  auto c = Collection::Create(dir, name, schema, options ? *options : defaults_, RoleFor(name));
  if (!c) {
    fs::remove_all(dir, ec);
    return c.error();
  }
  if (Status st = PublishCreated(name, c->get()); !st.ok()) {
    (*c)->Close();
    fs::remove_all(dir, ec);
    return st;
  }
  std::shared_ptr<Collection> sp(std::move(*c));
  collections_[name] = sp;
  return sp;
}

Result<std::shared_ptr<Collection>> CollectionManager::Get(const std::string& name) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = collections_.find(name);
  if (it == collections_.end())
    return Status::NotFound(fmt::format("collection \"{}\" does not exist", name));
  return it->second;
}

bool CollectionManager::Exists(const std::string& name) const {
  std::lock_guard<std::mutex> l(mu_);
  return collections_.count(name) > 0;
}

Status CollectionManager::Drop(const std::string& name) {
  STRATA_RETURN_IF_ERROR(CheckChangesAllowed());
  std::shared_ptr<Collection> c;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = collections_.find(name);
    if (it == collections_.end())
      return Status::NotFound(fmt::format("collection \"{}\" does not exist", name));
    c = it->second;
    collections_.erase(it);
    if (std::erase_if(aliases_, [&](const auto& a) { return a.second == name; }) > 0) {
      Status st = SaveAliases();
      if (!st.ok()) kLog.Warn("aliases of {}: {}", name, st.ToString());
    }
  }
  c->Close();
  DropRemote(name);
  const std::string dir = root_ + "/" + name;
  const std::string trash = fmt::format("{}/.{}.dropping-{}", root_, name, NowUnixNanos());
  std::error_code ec;
  fs::rename(dir, trash, ec);
  if (ec) return Status::IOError(fmt::format("cannot remove {}: {}", dir, ec.message()));
  (void)FsyncDir(root_);
  fs::remove_all(trash, ec);
  return Status::Ok();
}

std::vector<std::string> CollectionManager::List() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<std::string> out;
  for (const auto& [n, c] : collections_) out.push_back(n);
  return out;
}

Result<std::string> CollectionManager::CreateSnapshot(const std::string& name) {
  STRATA_ASSIGN_OR_RETURN(auto c, Get(name));
  const auto now = std::chrono::system_clock::now();
  const int64_t secs =
      std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char ts[32];
  std::strftime(ts, sizeof ts, "%Y-%m-%d-%H-%M-%S", &tm);
  std::string snap = fmt::format("{}-{}-{}", name, ts, NowUnixNanos() % 1000000);
  std::string dir = fmt::format("{}/.snapshots/{}", root_, name);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Status::IOError(fmt::format("cannot create {}: {}", dir, ec.message()));
  STRATA_RETURN_IF_ERROR(c->Snapshot(dir + "/" + snap));
  return snap;
}

Result<std::vector<std::string>> CollectionManager::ListSnapshots(const std::string& name) const {
  STRATA_ASSIGN_OR_RETURN(auto c, Get(name));
  std::vector<std::pair<fs::file_time_type, std::string>> v;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fmt::format("{}/.snapshots/{}", root_, name), ec)) {
    std::string n = e.path().filename().string();
    if (n.size() > 8 && n.substr(n.size() - 8) == ".partial") continue;
    if (!e.is_directory(ec)) continue;  // archives (<snapshot>.tar) beside the directories
    v.emplace_back(fs::last_write_time(e.path(), ec), n);
  }
  std::sort(v.begin(), v.end());
  std::vector<std::string> out;
  for (auto& [t, n] : v) out.push_back(n);
  return out;
}

Result<std::shared_ptr<Collection>> CollectionManager::RestoreSnapshot(
    const std::string& snapshot_dir, const std::string& name) {
  STRATA_RETURN_IF_ERROR(ValidateName(name));
  STRATA_RETURN_IF_ERROR(CheckChangesAllowed());
  if (remote_)
    return Status::NotSupported(
        "restoring a snapshot is not supported with --vector-storage: restore it on a server "
        "with local vector storage and copy the points");
  std::lock_guard<std::mutex> l(mu_);
  if (collections_.count(name))
    return Status::AlreadyExists(fmt::format("collection \"{}\" already exists", name));
  if (aliases_.count(name))
    return Status::AlreadyExists(fmt::format("\"{}\" is already an alias of a collection", name));
  std::error_code ec;
  if (!fs::exists(snapshot_dir + "/config.json", ec)) {
    return Status::NotFound(fmt::format("{} is not a collection snapshot", snapshot_dir));
  }
  const std::string dir = root_ + "/" + name;
  fs::copy(snapshot_dir, dir, fs::copy_options::recursive, ec);
  if (ec) {
    fs::remove_all(dir, ec);
    return Status::IOError(fmt::format("cannot copy {}: {}", snapshot_dir, ec.message()));
  }
  // The snapshot's config carries the old name.
  {
    std::ifstream in(dir + "/config.json");
    json cfg = json::parse(in, nullptr, false);
    if (cfg.is_object()) {
      cfg["name"] = name;
      STRATA_RETURN_IF_ERROR(WriteFileAtomic(dir + "/config.json", cfg.dump(2)));
    }
  }
  auto c = Collection::Open(dir);
  if (!c) {
    fs::remove_all(dir, ec);
    return c.error();
  }
  std::shared_ptr<Collection> sp(std::move(*c));
  collections_[name] = sp;
  return sp;
}

}  // namespace strata::vector

namespace strata::vector {

// The collection is closed, its directory renamed and reopened under the new
// name; holders of the old shared_ptr get kUnavailable from then on. The
// manager's lock is held throughout, so no Create/Get sees a half-done rename.
Result<std::shared_ptr<Collection>> CollectionManager::Rename(const std::string& from,
                                                              const std::string& to) {
  STRATA_RETURN_IF_ERROR(ValidateName(to));
  STRATA_RETURN_IF_ERROR(CheckChangesAllowed());
  if (remote_)
    return Status::NotSupported(
        "renaming a collection is not supported with --vector-storage (replicas name "
        "collections by their key prefix); create an alias instead");
  std::lock_guard<std::mutex> l(mu_);
  auto it = collections_.find(from);
  if (it == collections_.end())
    return Status::NotFound(fmt::format("collection \"{}\" does not exist", from));
  if (collections_.count(to))
    return Status::AlreadyExists(fmt::format("collection \"{}\" already exists", to));
  std::shared_ptr<Collection> old = it->second;
  const std::string src = root_ + "/" + from;
  const std::string dst = root_ + "/" + to;
  std::error_code ec;
  if (fs::exists(dst, ec)) fs::remove_all(dst, ec);  // debris of a failed create
  old->Close();
  collections_.erase(it);
  fs::rename(src, dst, ec);
  const std::string opened = ec ? src : dst;
  if (!ec) {
    std::ifstream in(dst + "/config.json");
    json cfg = json::parse(in, nullptr, false);
    if (cfg.is_object()) {
      cfg["name"] = to;
      Status st = WriteFileAtomic(dst + "/config.json", cfg.dump(2));
      if (!st.ok()) kLog.Warn("rename {} -> {}: {}", from, to, st.ToString());
    }
    (void)FsyncDir(root_);
  }
  auto c = Collection::Open(opened);
  if (!c) return c.error().WithContext(fmt::format("reopening collection \"{}\"", to));
  std::shared_ptr<Collection> sp(std::move(*c));
  collections_[ec ? from : to] = sp;
  if (ec) return Status::IOError(fmt::format("cannot rename {}: {}", src, ec.message()));
  return sp;
}

}  // namespace strata::vector
