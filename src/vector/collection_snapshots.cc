// CollectionManager: snapshot archives (download), deleting snapshots, and
// recovering a collection from an archive (upload or a local file).
#include <algorithm>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include <strata/core/clock.h>
#include <strata/core/log.h>
#include <strata/vector/collection.h>

#include "vector/snapshot_archive.h"

namespace strata::vector {

namespace fs = std::filesystem;

namespace {

constexpr log::Logger kLog("vector");

// A snapshot name as CreateSnapshot makes them: one path component.
Status CheckSnapshotName(const std::string& snap) {
  Status st = CollectionManager::ValidateName(snap);
  if (!st.ok()) return Status::InvalidArgument(fmt::format("\"{}\" is not a snapshot name", snap));
  return Status::Ok();
}

}  // namespace

// The directory of an existing snapshot of an existing collection.
Result<std::string> CollectionManager::ExistingSnapshotDir(const std::string& name,
                                                           const std::string& snapshot) {
  STRATA_RETURN_IF_ERROR(CheckSnapshotName(snapshot));
  STRATA_RETURN_IF_ERROR(Get(name).status());
  std::string dir = fmt::format("{}/.snapshots/{}/{}", root_, name, snapshot);
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    return Status::NotFound(
        fmt::format("Snapshot {} of collection {} does not exist", snapshot, name));
  return dir;
}

Result<std::string> CollectionManager::SnapshotArchive(const std::string& name,
                                                       const std::string& snapshot) {
  STRATA_ASSIGN_OR_RETURN(const std::string dir, ExistingSnapshotDir(name, snapshot));
  std::error_code ec;
  const std::string tar = dir + ".tar";
  if (!fs::exists(tar, ec)) STRATA_RETURN_IF_ERROR(internal::WriteSnapshotArchive(dir, tar));
  return tar;
}

Status CollectionManager::DeleteSnapshot(const std::string& name, const std::string& snapshot) {
  STRATA_ASSIGN_OR_RETURN(const std::string dir, ExistingSnapshotDir(name, snapshot));
  std::error_code ec;
  fs::remove(dir + ".tar", ec);
  fs::remove_all(dir, ec);
  if (ec) return Status::IOError(fmt::format("cannot remove {}: {}", dir, ec.message()));
  return Status::Ok();
}

Result<std::shared_ptr<Collection>> CollectionManager::RecoverFromArchive(const std::string& path,
                                                                          uint64_t offset,
                                                                          uint64_t length,
                                                                          const std::string& name) {
  STRATA_RETURN_IF_ERROR(ValidateName(name));
  STRATA_RETURN_IF_ERROR(CheckChangesAllowed());
  if (remote_)
    return Status::NotSupported(
        "recovering a snapshot is not supported with --vector-storage: recover it on a server "
        "with local vector storage and copy the points");
  const std::string tmp = fmt::format("{}/.recover-{}-{}", root_, name, NowUnixNanos());
  STRATA_RETURN_IF_ERROR(internal::ExtractSnapshotArchive(path, offset, length, tmp));
  std::error_code ec;
  auto cleanup = [&](Status st) {
    fs::remove_all(tmp, ec);
    return st;
  };
  if (!fs::exists(tmp + "/config.json", ec))
    return cleanup(
        Status::InvalidArgument("the archive is not a collection snapshot (no config.json)"));
  {
    // Opened once before anything is replaced: a snapshot that does not open
    // must not cost the existing collection.
    CollectionOptions probe = defaults_;
    probe.background = false;
    auto c = Collection::Open(tmp, probe);
    if (!c) return cleanup(c.error().WithContext("the snapshot does not open"));
  }
  std::vector<std::string> kept_aliases;
  for (const auto& [alias, coll] : Aliases()) {
    if (coll == name) kept_aliases.push_back(alias);
  }
  if (Exists(name)) {
    Status st = Drop(name);
    if (!st.ok()) return cleanup(st);
  }
  auto c = RestoreSnapshot(tmp, name);
  fs::remove_all(tmp, ec);
  if (!c) return c.error();
  std::vector<AliasAction> actions;
  for (const auto& a : kept_aliases) actions.push_back({AliasAction::Kind::kCreate, a, name, ""});
  if (!actions.empty()) {
    Status st = UpdateAliases(actions);
    if (!st.ok()) kLog.Warn("recover {}: aliases not restored: {}", name, st.ToString());
  }
  kLog.Info("collection {} recovered from a snapshot archive", name);
  return c;
}

}  // namespace strata::vector
