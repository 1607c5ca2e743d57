// KvMeta: sessions and locks. A session is one client (a mount): it
// registers, heartbeats, and owns its open files and locks; a session whose
// heartbeat stopped is cleaned by another client (CleanStaleSessions): its
// locks dropped (H keys list them without a scan), its files unlinked while
// open freed. Locks are keys visible to every client: BSD flock (F) and POSIX
// record locks (L), both polled when blocking.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include <strata/core/clock.h>

#include "fsmeta/codec.h"
#include "fsmeta/kv.h"
#include "fsmeta/kv_meta.h"

namespace strata::fsmeta {

using namespace codec;  // NOLINT: private keys and encodings

// ---- sessions -------------------------------------------------------------

static std::string SessionToJson(const SessionInfo& s) {
  return nlohmann::json{{"sid", s.sid},         {"host", s.host}, {"mount_point", s.mount_point},
                        {"version", s.version}, {"pid", s.pid},   {"heartbeat_ns", s.heartbeat_ns}}
      .dump();
}

static SessionInfo SessionFromJson(std::string_view v) {
  SessionInfo s;
  try {
    auto j = nlohmann::json::parse(v);
    s.sid = j.value("sid", uint64_t{0});
    s.host = j.value("host", "");
    s.mount_point = j.value("mount_point", "");
    s.version = j.value("version", "");
    s.pid = j.value("pid", 0u);
    s.heartbeat_ns = j.value("heartbeat_ns", int64_t{0});
  } catch (const std::exception&) {
  }
  return s;
}

Result<uint64_t> KvMeta::NewSession(const SessionInfo& info) {
  bool formatted;
  {
    std::lock_guard<std::mutex> lock(fmt_mu_);
    formatted = format_.has_value();
  }
  if (!formatted) STRATA_RETURN_IF_ERROR(LoadFormat().status());
  STRATA_ASSIGN_OR_RETURN(int64_t sid, kv_->Incr(kNextSession, 1));
  SessionInfo s = info;
  s.sid = static_cast<uint64_t>(sid);
  s.heartbeat_ns = NowUnixNanos();
  if (s.pid == 0) s.pid = static_cast<uint32_t>(getpid());
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        t.Set(SessionKey(s.sid), SessionToJson(s));
        return Status::Ok();
      },
      false));
  {
    std::lock_guard<std::mutex> lock(session_mu_);
    session_ = s;
  }
  sid_ = s.sid;
  return s.sid;
}

uint64_t KvMeta::SessionId() const { return sid_; }

Status KvMeta::Heartbeat() {
  uint64_t sid = sid_;
  if (sid == 0) return Status::InvalidArgument("no session: call NewSession first");
  std::string info;
  {
    std::lock_guard<std::mutex> lock(session_mu_);
    session_.heartbeat_ns = NowUnixNanos();
    info = SessionToJson(session_);
  }
  return Txn(
      [&](KvTxn& t) {
        t.Set(SessionKey(sid), info);
        return Status::Ok();
      },
      false);
}

Status KvMeta::CleanSession(uint64_t sid) {
  // Locks held by the session.
  for (;;) {
    std::vector<std::string> held;
    STRATA_RETURN_IF_ERROR(Txn(
        [&](KvTxn& t) {
          held.clear();
          t.Scan(HeldPrefix(sid), "", 500, true, [&](const std::string& k, const std::string&) {
            held.push_back(k);
            return true;
          });
          for (const auto& k : held) {
            t.Delete(k);
            t.Delete(k.substr(kGroupLen));
          }
          return Status::Ok();
        },
        false));
    if (held.size() < 500) break;
  }
  // Sustained inodes: free those no longer linked anywhere.
  std::vector<Ino> inos;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        inos.clear();
        t.Scan(SustainPrefix(sid), "", 0, true, [&](const std::string& k, const std::string&) {
          if (k.size() == 17) inos.push_back(DecodeBigEndian64(k.data() + 9));
          return true;
        });
        return Status::Ok();
      },
      true));
  for (Ino ino : inos) {
    STRATA_RETURN_IF_ERROR(Txn(
        [&](KvTxn& t) {
          t.Delete(SustainKey(sid, ino));
          AttrCache as(t);
          Attr* a = as.Get(ino);
          if (a && a->nlink == 0) FreeInode(t, ino, *a);
          return Status::Ok();
        },
        false));
  }
  return Txn(
      [&](KvTxn& t) {
        t.Delete(SessionKey(sid));
        return Status::Ok();
      },
      false);
}

Status KvMeta::CloseSession() {
  if (sid_ == 0) return Status::Ok();
  {
    std::lock_guard<std::mutex> lock(open_mu_);
    open_.clear();
  }
  Status st = CleanSession(sid_.exchange(0));
  return st;
}

Result<std::vector<SessionInfo>> KvMeta::ListSessions() {
  std::vector<SessionInfo> out;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        out.clear();
        t.Scan(SessionPrefix(), "", 0, false, [&](const std::string& k, const std::string& v) {
          if (k.size() == 17) out.push_back(SessionFromJson(v));
          return true;
        });
        return Status::Ok();
      },
      true));
  return out;
}

Result<int> KvMeta::CleanStaleSessions(int64_t stale_after_s) {
  STRATA_ASSIGN_OR_RETURN(auto sessions, ListSessions());
  int64_t now = NowUnixNanos();
  int n = 0;
  for (const auto& s : sessions) {
    if (s.sid == sid_) continue;
    if (now - s.heartbeat_ns > stale_after_s * 1000000000ll) {
      STRATA_RETURN_IF_ERROR(CleanSession(s.sid));
      ++n;
    }
  }
  return n;
}

// ---- locks ----------------------------------------------------------------

Status KvMeta::Flock(const Context&, Ino ino, uint64_t owner, uint32_t type, bool block) {
  if (type != F_RDLCK && type != F_WRLCK && type != F_UNLCK)
    return FsError(EINVAL, "bad flock type");
  std::string mine = LockKey('F', ino, sid_, owner);
  for (;;) {
    Status st = Txn(
        [&](KvTxn& t) {
          if (type == F_UNLCK) {
            t.Delete(mine);
            t.Delete(HeldKey(sid_, mine));
            return Status::Ok();
          }
          bool conflict = false;
          t.Scan(Key1('F', ino), "", 0, false, [&](const std::string& k, const std::string& v) {
            if (k == mine || v.empty()) return true;
            uint32_t theirs = static_cast<unsigned char>(v[0]);
            if (type == F_WRLCK || theirs == F_WRLCK) {
              conflict = true;
              return false;
            }
            return true;
          });
          if (conflict) return FsError(EAGAIN, "file is locked by another owner");
          t.Set(mine, std::string(1, static_cast<char>(type)));
          t.Set(HeldKey(sid_, mine), "");
          return Status::Ok();
        },
        false);
    if (!block || ErrnoOf(st) != EAGAIN) return st;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

static bool Overlaps(const PlockRange& a, uint64_t start, uint64_t end) {
  return a.start <= end && start <= a.end;
}

Status KvMeta::Getlk(const Context&, Ino ino, uint64_t owner, LockRange* range) {
  if (range->type != F_RDLCK && range->type != F_WRLCK) return FsError(EINVAL, "bad lock type");
  std::string mine = LockKey('L', ino, sid_, owner);
  LockRange found;
  found.type = F_UNLCK;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        found.type = F_UNLCK;
        t.Scan(Key1('L', ino), "", 0, false, [&](const std::string& k, const std::string& v) {
          if (k == mine) return true;
          for (const auto& r : DecodePlocks(v)) {
            if (Overlaps(r, range->start, range->end) &&
                (range->type == F_WRLCK || r.type == F_WRLCK)) {
              found = {r.type, r.start, r.end, r.pid};
              return false;
            }
          }
          return true;
        });
        return Status::Ok();
      },
      true));
  *range = found;
  return Status::Ok();
}

Status KvMeta::Setlk(const Context& ctx, Ino ino, uint64_t owner, bool block,
                     const LockRange& range) {
  if (range.type != F_RDLCK && range.type != F_WRLCK && range.type != F_UNLCK) {
    return FsError(EINVAL, "bad lock type");
  }
  if (range.end < range.start) return FsError(EINVAL, "lock range ends before it starts");
  std::string mine = LockKey('L', ino, sid_, owner);
  for (;;) {
    Status st = Txn(
        [&](KvTxn& t) {
          std::vector<PlockRange> my;
          bool conflict = false;
          t.Scan(Key1('L', ino), "", 0, false, [&](const std::string& k, const std::string& v) {
            if (k == mine) {
              my = DecodePlocks(v);
              return true;
            }
            if (range.type == F_UNLCK) return true;
            for (const auto& r : DecodePlocks(v)) {
              if (Overlaps(r, range.start, range.end) &&
                  (range.type == F_WRLCK || r.type == F_WRLCK)) {
                conflict = true;
                return false;
              }
            }
            return true;
          });
          if (conflict) return FsError(EAGAIN, "range is locked by another owner");
          // Cut [start, end] out of this owner's ranges, then add the new one.
          std::vector<PlockRange> next;
          for (const auto& r : my) {
            if (!Overlaps(r, range.start, range.end)) {
              next.push_back(r);
              continue;
            }
            if (r.start < range.start) next.push_back({r.type, r.start, range.start - 1, r.pid});
            if (r.end > range.end) next.push_back({r.type, range.end + 1, r.end, r.pid});
          }
          if (range.type != F_UNLCK) {
            next.push_back({range.type, range.start, range.end, range.pid ? range.pid : ctx.pid});
          }
          std::sort(next.begin(), next.end(),
                    [](const PlockRange& a, const PlockRange& b) { return a.start < b.start; });
          if (next.empty()) {
            t.Delete(mine);
            t.Delete(HeldKey(sid_, mine));
          } else {
            t.Set(mine, EncodePlocks(next));
            t.Set(HeldKey(sid_, mine), "");
          }
          return Status::Ok();
        },
        false);
    if (!block || ErrnoOf(st) != EAGAIN) return st;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

}  // namespace strata::fsmeta
