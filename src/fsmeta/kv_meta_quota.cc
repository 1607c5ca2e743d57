// Directory quotas (JuiceFS `quota` semantics): limits on the space and the
// inode count of a directory tree.
//
// A quota is one record P<0><dir ino> holding the limits and the usage of
// everything below the directory. Every operation that adds or removes space
// or inodes charges the quota records of the directories above the change in
// its own transaction (QuotaDeltas), so the usage is as exact as the rest of
// the metadata and shared by every mount: two mounts writing into one quota
// tree conflict on its record (Redis retries, SQLite serialises) and their sum
// is enforced. Which directories have a quota is cached for a second per
// client (QuotaDirs): a new quota is enforced by other mounts within that
// second, and what they change meanwhile is not counted; `CheckQuotas` with
// repair recomputes the usage from the tree.
//
// Accounting rules: each directory entry counts one inode and the space of
// its inode (SpaceOf), so a file hard-linked twice into a tree counts twice.
// Writes and truncations of a file are charged to the tree of its parent; a
// file with several links has no single parent (Attr::parent == 0) and its
// size changes are charged nowhere until the next repair. A directory with
// content cannot be renamed between different quota trees (EXDEV, as CephFS
// answers: `mv` then copies and removes, which the quotas count).
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include <strata/core/clock.h>
#include <strata/core/coding.h>

#include "fsmeta/codec.h"
#include "fsmeta/kv.h"
#include "fsmeta/kv_meta.h"

namespace strata::fsmeta {

using namespace codec;  // NOLINT: private keys and encodings

namespace {

std::string EncodeQuota(const Quota& q) {
  std::string v;
  PutBigEndian64(&v, q.max_space);
  PutBigEndian64(&v, q.max_inodes);
  PutBigEndian64(&v, static_cast<uint64_t>(q.used_space));
  PutBigEndian64(&v, static_cast<uint64_t>(q.used_inodes));
  return v;
}

bool DecodeQuota(std::string_view v, Ino ino, Quota* q) {
  if (v.size() != 32) return false;
  q->ino = ino;
  q->max_space = DecodeBigEndian64(v.data());
  q->max_inodes = DecodeBigEndian64(v.data() + 8);
  q->used_space = static_cast<int64_t>(DecodeBigEndian64(v.data() + 16));
  q->used_inodes = static_cast<int64_t>(DecodeBigEndian64(v.data() + 24));
  return true;
}

Ino QuotaIno(const std::string& key) { return DecodeBigEndian64(key.data() + kGroupLen); }

}  // namespace

// ---- QuotaDeltas --------------------------------------------------------------

std::set<Ino> QuotaDeltas::QuotasOf(Ino dir) {
  std::set<Ino> out;
  if (!active()) return out;
  Ino cur = dir;
  for (int depth = 0; depth < 10000 && cur != kTrashIno && cur != 0; ++depth) {
    if (dirs_->count(cur)) out.insert(cur);
    if (cur == kRootIno) break;
    Attr* a = as_.Get(cur);
    if (!a || a->parent == 0 || a->parent == cur) break;
    cur = a->parent;
  }
  return out;
}

void QuotaDeltas::Charge(Ino dir, int64_t space, int64_t inodes) {
  if (!active() || (space == 0 && inodes == 0)) return;
  for (Ino q : QuotasOf(dir)) {
    auto& d = d_[q];
    d.first += space;
    d.second += inodes;
  }
}

Status QuotaDeltas::Move(KvTxn& t, Ino ino, const Attr& a, Ino from, Ino to) {
  if (!active()) return Status::Ok();
  int64_t space = static_cast<int64_t>(SpaceOf(a)), inodes = 1;
  if (IsDir(a) && QuotasOf(from) != QuotasOf(to)) {
    Quota q;
    if (auto v = dirs_->count(ino) ? t.Get(QuotaKey(ino)) : std::nullopt;
        v && DecodeQuota(*v, ino, &q)) {
      space += q.used_space;
      inodes += q.used_inodes;
    } else {
      bool empty = true;
      t.Scan(DentPrefix(ino), "", 1, true, [&](const std::string&, const std::string&) {
        empty = false;
        return false;
      });
      if (!empty) {
        return FsError(EXDEV,
                       "a directory with content cannot move between directory quotas; "
                       "copy it and remove the original (mv does this)");
      }
    }
  }
  Charge(from, -space, -inodes);
  Charge(to, space, inodes);
  return Status::Ok();
}

Status QuotaDeltas::Apply(KvTxn& t) {
  for (const auto& [dir, d] : d_) {
    if (d.first == 0 && d.second == 0) continue;
    auto v = t.Get(QuotaKey(dir));
    if (!v) continue;  // removed since this client read the list
    Quota q;
    if (!DecodeQuota(*v, dir, &q)) {
      return Status::Corruption("quota record of inode " + std::to_string(dir) + " is corrupt");
    }
    if (d.first > 0 && q.max_space && q.used_space + d.first > static_cast<int64_t>(q.max_space)) {
      return FsError(EDQUOT, "space quota of directory inode " + std::to_string(dir) + " (" +
                                 std::to_string(q.max_space) + " bytes) exceeded");
    }
    if (d.second > 0 && q.max_inodes &&
        q.used_inodes + d.second > static_cast<int64_t>(q.max_inodes)) {
      return FsError(EDQUOT, "inode quota of directory inode " + std::to_string(dir) + " (" +
                                 std::to_string(q.max_inodes) + ") exceeded");
    }
    q.used_space += d.first;
    q.used_inodes += d.second;
    t.Set(QuotaKey(dir), EncodeQuota(q));
  }
  d_.clear();
  return Status::Ok();
}

// ---- KvMeta -------------------------------------------------------------------

std::shared_ptr<const std::set<Ino>> KvMeta::QuotaDirs() {
  std::lock_guard<std::mutex> lock(qdirs_mu_);
  const int64_t now = NowUnixNanos();
  if (qdirs_read_ns_ != 0 && now - qdirs_read_ns_ < 1000000000) return qdirs_;
  auto dirs = std::make_shared<std::set<Ino>>();
  // The quota records are one scan group: a range read (Redis: of the
  // group's index), not a scan of the whole key space.
  Status st = kv_->Txn(
      [&](KvTxn& t) {
        dirs->clear();
        t.Scan(QuotaPrefix(), "", 0, true, [&](const std::string& k, const std::string&) {
          if (k.size() == kGroupLen + 8) dirs->insert(QuotaIno(k));
          return true;
        });
        return Status::Ok();
      },
      true);
  // A failed read keeps the previous list (the operation's own transaction
  // reports a backend that is down).
  if (!st.ok()) return qdirs_;
  qdirs_ = dirs->empty() ? nullptr : std::shared_ptr<const std::set<Ino>>(std::move(dirs));
  qdirs_read_ns_ = now;
  return qdirs_;
}

Result<Quota> KvMeta::ComputeQuotaUsage(Ino dir) {
  Context root;
  root.check_permission = false;
  STRATA_ASSIGN_OR_RETURN(Summary s, GetSummary(root, dir));
  Quota q;
  q.ino = dir;
  // GetSummary counts the directory itself; a quota counts what is below it.
  q.used_inodes = static_cast<int64_t>(s.files + s.dirs) - 1;
  q.used_space = static_cast<int64_t>(s.size) - 4096;
  return q;
}

Status KvMeta::SetQuota(Ino ino, uint64_t max_space, uint64_t max_inodes) {
  if (ino == kTrashIno) return FsError(EPERM, "the trash cannot have a quota");
  STRATA_ASSIGN_OR_RETURN(Attr a, GetAttr(ino));
  if (!IsDir(a)) return FsError(ENOTDIR, "a quota needs a directory");
  bool exists = false;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        exists = t.Get(QuotaKey(ino)).has_value();
        return Status::Ok();
      },
      true));
  Quota usage;
  if (!exists) {
    // Counted from the tree before the record exists; changes racing with
    // this walk are what CheckQuotas repairs.
    STRATA_ASSIGN_OR_RETURN(usage, ComputeQuotaUsage(ino));
  }
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        Quota q = usage;
        q.ino = ino;
        if (auto v = t.Get(QuotaKey(ino))) {
          if (!DecodeQuota(*v, ino, &q)) return Status::Corruption("quota record is corrupt");
        }
        q.max_space = max_space;
        q.max_inodes = max_inodes;
        t.Set(QuotaKey(ino), EncodeQuota(q));
        return Status::Ok();
      },
      false));
  std::lock_guard<std::mutex> lock(qdirs_mu_);
  qdirs_read_ns_ = 0;  // re-read at the next operation
  return Status::Ok();
}

Status KvMeta::CheckQuotaGrowth(Ino ino, uint64_t new_size) {
  const auto qdirs = QuotaDirs();
  if (!qdirs) return Status::Ok();
  const int64_t now = NowUnixNanos();
  GrowthView view;
  {
    std::lock_guard<std::mutex> lock(qdirs_mu_);
    auto it = growth_.find(ino);
    if (it != growth_.end() && now - it->second.read_ns < 1000000000) view = it->second;
  }
  if (view.read_ns == 0) {
    STRATA_RETURN_IF_ERROR(Txn(
        [&](KvTxn& t) {
          view = GrowthView{now, 0, -1};
          AttrCache as(t);
          Attr* a = as.Get(ino);
          if (!a || !IsReg(*a) || a->nlink == 0) return Status::Ok();
          view.size = a->size;
          QuotaDeltas quota(qdirs.get(), as);
          for (Ino q : quota.QuotasOf(a->parent)) {
            auto v = t.Get(QuotaKey(q));
            Quota rec;
            if (!v || !DecodeQuota(*v, q, &rec) || rec.max_space == 0) continue;
            const int64_t room = static_cast<int64_t>(rec.max_space) - rec.used_space;
            if (view.headroom < 0 || room < view.headroom)
              view.headroom = std::max<int64_t>(room, 0);
          }
          return Status::Ok();
        },
        true));
    std::lock_guard<std::mutex> lock(qdirs_mu_);
    if (growth_.size() > 4096) growth_.clear();  // a bounded cache of recently grown files
    growth_[ino] = view;
  }
  if (view.headroom < 0 || new_size <= view.size) return Status::Ok();
  const int64_t growth = static_cast<int64_t>((new_size + 4095) / 4096 * 4096) -
                         static_cast<int64_t>((view.size + 4095) / 4096 * 4096);
  if (growth > view.headroom) {
    return FsError(EDQUOT, "the directory quota above inode " + std::to_string(ino) +
                               " has no room for this write");
  }
  return Status::Ok();
}

Result<Quota> KvMeta::GetQuota(Ino ino) {
  std::optional<std::string> v;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        v = t.Get(QuotaKey(ino));
        return Status::Ok();
      },
      true));
  if (!v) return FsError(ENOENT, "directory inode " + std::to_string(ino) + " has no quota");
  Quota q;
  if (!DecodeQuota(*v, ino, &q)) return Status::Corruption("quota record is corrupt");
  return q;
}

Status KvMeta::DeleteQuota(Ino ino) {
  bool found = false;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        found = t.Get(QuotaKey(ino)).has_value();
        if (found) t.Delete(QuotaKey(ino));
        return Status::Ok();
      },
      false));
  if (!found) return FsError(ENOENT, "directory inode " + std::to_string(ino) + " has no quota");
  std::lock_guard<std::mutex> lock(qdirs_mu_);
  qdirs_read_ns_ = 0;
  return Status::Ok();
}

Result<std::vector<Quota>> KvMeta::ListQuotas() {
  std::vector<Quota> out;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        out.clear();
        Status bad;
        t.Scan(QuotaPrefix(), "", 0, false, [&](const std::string& k, const std::string& v) {
          if (k.size() != kGroupLen + 8) return true;
          Quota q;
          if (!DecodeQuota(v, QuotaIno(k), &q)) {
            bad = Status::Corruption("quota record of inode " + std::to_string(QuotaIno(k)) +
                                     " is corrupt");
            return false;
          }
          out.push_back(q);
          return true;
        });
        return bad;
      },
      true));
  return out;
}

Result<std::vector<std::string>> KvMeta::CheckQuotas(Ino ino, bool repair) {
  std::vector<Quota> quotas;
  if (ino != 0) {
    STRATA_ASSIGN_OR_RETURN(Quota q, GetQuota(ino));
    quotas.push_back(q);
  } else {
    STRATA_ASSIGN_OR_RETURN(quotas, ListQuotas());
  }
  std::vector<std::string> out;
  for (const Quota& stored : quotas) {
    auto attr = GetAttr(stored.ino);
    if (!attr.ok() || !IsDir(*attr)) {
      out.push_back("quota on inode " + std::to_string(stored.ino) +
                    ": the directory no longer exists" + (repair ? " (quota removed)" : ""));
      if (repair) STRATA_RETURN_IF_ERROR(DeleteQuota(stored.ino));
      continue;
    }
    STRATA_ASSIGN_OR_RETURN(Quota real, ComputeQuotaUsage(stored.ino));
    if (real.used_space == stored.used_space && real.used_inodes == stored.used_inodes) continue;
    std::string line = "quota on inode " + std::to_string(stored.ino) + ": stored usage " +
                       std::to_string(stored.used_space) + " bytes, " +
                       std::to_string(stored.used_inodes) + " inodes; the tree holds " +
                       std::to_string(real.used_space) + " bytes, " +
                       std::to_string(real.used_inodes) + " inodes";
    if (repair) {
      // Set the difference, not the total, so changes committed since the walk stay counted.
      const int64_t ds = real.used_space - stored.used_space;
      const int64_t di = real.used_inodes - stored.used_inodes;
      STRATA_RETURN_IF_ERROR(Txn(
          [&](KvTxn& t) {
            auto v = t.Get(QuotaKey(stored.ino));
            if (!v) return Status::Ok();
            Quota q;
            if (!DecodeQuota(*v, stored.ino, &q))
              return Status::Corruption("quota record is corrupt");
            q.used_space += ds;
            q.used_inodes += di;
            t.Set(QuotaKey(stored.ino), EncodeQuota(q));
            return Status::Ok();
          },
          false));
      line += " (repaired)";
    }
    out.push_back(line);
  }
  return out;
}

}  // namespace strata::fsmeta
