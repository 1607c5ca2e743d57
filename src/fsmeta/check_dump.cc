// fsck (Check) and the JSON dump/load of a volume's metadata.
#include <sys/stat.h>

#include <functional>
#include <istream>
#include <iterator>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fsmeta/codec.h"
#include "fsmeta/kv_meta.h"

namespace strata::fsmeta {

using namespace codec;  // NOLINT
using nlohmann::json;

namespace {

std::string Hex(std::string_view s) {
  static const char* d = "0123456789abcdef";
  std::string o;
  o.reserve(s.size() * 2);
  for (unsigned char c : s) {
    o.push_back(d[c >> 4]);
    o.push_back(d[c & 15]);
  }
  return o;
}

bool Unhex(std::string_view h, std::string* out) {
  if (h.size() % 2) return false;
  out->clear();
  auto v = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < h.size(); i += 2) {
    int a = v(h[i]), b = v(h[i + 1]);
    if (a < 0 || b < 0) return false;
    out->push_back(static_cast<char>(a * 16 + b));
  }
  return true;
}

// A name as JSON: a string when it is valid UTF-8, else {"hex": "..."}.
json NameJson(const std::string& s) {
  try {
    json j = s;
    (void)j.dump();
    return j;
  } catch (const std::exception&) {
    return json{{"hex", Hex(s)}};
  }
}

std::string NameFromJson(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  std::string out;
  if (!Unhex(j.at("hex").get<std::string>(), &out)) throw std::runtime_error("bad hex name");
  return out;
}

json AttrJson(Ino ino, const Attr& a) {
  return {{"ino", ino},
          {"mode", a.mode},
          {"uid", a.uid},
          {"gid", a.gid},
          {"nlink", a.nlink},
          {"size", a.size},
          {"rdev", a.rdev},
          {"atime_ns", a.atime_ns},
          {"mtime_ns", a.mtime_ns},
          {"ctime_ns", a.ctime_ns},
          {"parent", a.parent}};
}

}  // namespace

// One fsck pass: what the steps of Check learned so far (every inode's
// attributes first, then link counts from the entries), and the steps.
struct KvMeta::CheckRun {
  CheckRun(KvMeta& meta, const CheckOptions& opts) : m(meta), options(opts) {}
  KvMeta& m;
  const CheckOptions& options;
  std::vector<std::string> problems;
  std::map<Ino, Attr> attrs;
  std::map<Ino, uint32_t> links, subdirs;
  std::set<Ino> sustained;
  std::set<Ino> freed;  // by repair

  Status Fix(const std::function<void(KvTxn&)>& fn) {
    return m.Txn(
        [&](KvTxn& t) {
          fn(t);
          return Status::Ok();
        },
        false);
  }
  Status LoadAttrs();
  Status CheckEntries();
  Status CheckLinks();
  Status CheckCounters();
  Status CheckChunks();
  Status CheckSymlinks();
};

Status KvMeta::CheckRun::LoadAttrs() {
  return m.kv_->ScanAll("A", [&](const std::string& k, const std::string& v) {
    if (k.size() != 9) return true;
    Attr a;
    if (!DecodeAttr(v, &a)) {
      problems.push_back("inode " + std::to_string(DecodeBigEndian64(k.data() + 1)) +
                         ": corrupt attributes");
      return true;
    }
    attrs[DecodeBigEndian64(k.data() + 1)] = a;
    return true;
  });
}

// Directory entries: dangling ones (removed on repair), types, directory
// parents; counts the links of every inode and the subdirectories of each
// directory.
Status KvMeta::CheckRun::CheckEntries() {
  std::vector<std::string> dangling;
  STRATA_RETURN_IF_ERROR(m.kv_->ScanAll("D", [&](const std::string& k, const std::string& v) {
    if (k.size() < 10) return true;
    Ino parent = DecodeBigEndian64(k.data() + 1);
    std::string name = k.substr(9);
    uint32_t type;
    Ino ino;
    if (!DecodeDent(v, &type, &ino)) {
      problems.push_back("entry \"" + name + "\" in directory " + std::to_string(parent) +
                         ": corrupt");
      dangling.push_back(k);
      return true;
    }
    auto pit = attrs.find(parent);
    if (pit == attrs.end() || !S_ISDIR(pit->second.mode)) {
      problems.push_back("entry \"" + name + "\" in directory " + std::to_string(parent) +
                         ": the directory does not exist");
      dangling.push_back(k);
      return true;
    }
    auto it = attrs.find(ino);
    if (it == attrs.end()) {
      problems.push_back("entry \"" + name + "\" in directory " + std::to_string(parent) +
                         ": dangling, inode " + std::to_string(ino) + " does not exist");
      dangling.push_back(k);
      return true;
    }
    if ((it->second.mode & S_IFMT) != type) {
      problems.push_back("entry \"" + name + "\" in directory " + std::to_string(parent) +
                         ": type differs from inode " + std::to_string(ino));
    }
    links[ino]++;
    if (S_ISDIR(it->second.mode)) {
      subdirs[parent]++;
      if (it->second.parent != parent) {
        problems.push_back("directory " + std::to_string(ino) + ": parent is " +
                           std::to_string(it->second.parent) + ", entry is in " +
                           std::to_string(parent));
        if (options.repair) {
          it->second.parent = parent;
          Attr a = it->second;
          (void)Fix([&](KvTxn& t) { t.Set(AttrKey(ino), EncodeAttr(a)); });
        }
      }
    }
    return true;
  }));
  if (options.repair) {
    for (const auto& k : dangling) STRATA_RETURN_IF_ERROR(Fix([&](KvTxn& t) { t.Delete(k); }));
  }
  return Status::Ok();
}

// Link counts against the entries found; inodes no entry links (orphans),
// unless unlinked while open (sustained).
Status KvMeta::CheckRun::CheckLinks() {
  STRATA_RETURN_IF_ERROR(m.kv_->ScanAll("U", [&](const std::string& k, const std::string&) {
    if (k.size() == 17) sustained.insert(DecodeBigEndian64(k.data() + 9));
    return true;
  }));

  for (auto& [ino, a] : attrs) {
    uint32_t expect;
    if (S_ISDIR(a.mode)) {
      expect = 2 + subdirs[ino];
      if (ino != kRootIno && ino != kTrashIno && links[ino] == 0) {
        problems.push_back("directory " + std::to_string(ino) + ": not linked from any directory");
        if (options.repair) {
          Attr copy = a;
          STRATA_RETURN_IF_ERROR(Fix([&](KvTxn& t) { m.FreeInode(t, ino, copy); }));
          freed.insert(ino);
        }
        continue;
      }
    } else {
      expect = links[ino];
      if (expect == 0) {
        if (sustained.count(ino) && a.nlink == 0) continue;  // unlinked while open
        problems.push_back("inode " + std::to_string(ino) +
                           ": not linked from any directory (orphan)");
        if (options.repair) {
          Attr copy = a;
          STRATA_RETURN_IF_ERROR(Fix([&](KvTxn& t) { m.FreeInode(t, ino, copy); }));
          freed.insert(ino);
        }
        continue;
      }
    }
    if (a.nlink != expect) {
      problems.push_back("inode " + std::to_string(ino) + ": nlink is " + std::to_string(a.nlink) +
                         ", should be " + std::to_string(expect));
      if (options.repair) {
        a.nlink = expect;
        Attr copy = a;
        STRATA_RETURN_IF_ERROR(Fix([&](KvTxn& t) { t.Set(AttrKey(ino), EncodeAttr(copy)); }));
      }
    }
  }
  return Status::Ok();
}

// The counters behind StatFS against the inodes found.
Status KvMeta::CheckRun::CheckCounters() {
  int64_t inodes = 0, space = 0;
  for (const auto& [ino, a] : attrs) {
    if (ino == kTrashIno || freed.count(ino)) continue;
    ++inodes;
    if (S_ISDIR(a.mode))
      space += 4096;
    else if (S_ISREG(a.mode))
      space += static_cast<int64_t>((a.size + 4095) / 4096 * 4096);
  }
  std::optional<std::string> ci, cs;
  STRATA_RETURN_IF_ERROR(m.Txn(
      [&](KvTxn& t) {
        ci = t.Get(kInodes);
        cs = t.Get(kUsedSpace);
        return Status::Ok();
      },
      true));
  int64_t have_i = ci ? std::stoll(*ci) : 0, have_s = cs ? std::stoll(*cs) : 0;
  if (have_i != inodes || have_s != space) {
    problems.push_back("counters: " + std::to_string(have_i) + " inodes / " +
                       std::to_string(have_s) + " bytes recorded, " + std::to_string(inodes) +
                       " / " + std::to_string(space) + " found");
    if (options.repair) {
      STRATA_RETURN_IF_ERROR(Fix([&](KvTxn& t) {
        t.Set(kInodes, std::to_string(inodes));
        t.Set(kUsedSpace, std::to_string(space));
      }));
    }
  }
  return Status::Ok();
}

// Chunks: of a regular file, within its length, slices in range. Bad
// chunks are dropped on repair (their slices queued for deletion).
Status KvMeta::CheckRun::CheckChunks() {
  std::vector<std::pair<std::string, std::string>> bad_chunks;
  STRATA_RETURN_IF_ERROR(m.kv_->ScanAll("C", [&](const std::string& k, const std::string& v) {
    if (k.size() != 13) return true;
    Ino ino = DecodeBigEndian64(k.data() + 1);
    uint32_t idx = DecodeBigEndian32(k.data() + 9);
    std::string where = "inode " + std::to_string(ino) + " chunk " + std::to_string(idx);
    auto it = attrs.find(ino);
    if (it == attrs.end() || !S_ISREG(it->second.mode)) {
      problems.push_back(where + ": belongs to no regular file");
      bad_chunks.emplace_back(k, v);
      return true;
    }
    std::vector<Slice> slices;
    if (!DecodeSlices(v, &slices)) {
      problems.push_back(where + ": corrupt slice list");
      return true;
    }
    if (static_cast<uint64_t>(idx) * kChunkSize >= it->second.size && !slices.empty()) {
      problems.push_back(where + ": lies past the end of the file (" +
                         std::to_string(it->second.size) + ")");
      bad_chunks.emplace_back(k, v);
      return true;
    }
    for (const auto& s : slices) {
      if (static_cast<uint64_t>(s.pos) + s.len > kChunkSize ||
          (s.id != 0 && static_cast<uint64_t>(s.off) + s.len > s.size)) {
        problems.push_back(where + ": slice " + std::to_string(s.id) + " is out of range");
      }
    }
    return true;
  }));
  if (options.repair) {
    for (auto& [k, v] : bad_chunks) {
      STRATA_RETURN_IF_ERROR(Fix([&](KvTxn& t) {
        m.QueueSlices(t, v);
        t.Delete(k);
      }));
    }
  }
  return Status::Ok();
}

// Symlink targets: none without its inode, none missing.
Status KvMeta::CheckRun::CheckSymlinks() {
  STRATA_RETURN_IF_ERROR(m.kv_->ScanAll("S", [&](const std::string& k, const std::string&) {
    if (k.size() == 9 && !attrs.count(DecodeBigEndian64(k.data() + 1))) {
      problems.push_back("symlink target of missing inode " +
                         std::to_string(DecodeBigEndian64(k.data() + 1)));
    }
    return true;
  }));
  for (const auto& [ino, a] : attrs) {
    if (!S_ISLNK(a.mode)) continue;
    bool has = false;
    STRATA_RETURN_IF_ERROR(m.Txn(
        [&](KvTxn& t) {
          has = t.Get(SymKey(ino)).has_value();
          return Status::Ok();
        },
        true));
    if (!has) problems.push_back("symlink " + std::to_string(ino) + ": no target");
  }
  return Status::Ok();
}

Result<std::vector<std::string>> KvMeta::Check(const CheckOptions& options) {
  CheckRun run(*this, options);
  STRATA_RETURN_IF_ERROR(run.LoadAttrs());
  if (!run.attrs.count(kRootIno)) run.problems.push_back("root directory (inode 1) is missing");
  STRATA_RETURN_IF_ERROR(run.CheckEntries());
  STRATA_RETURN_IF_ERROR(run.CheckLinks());
  STRATA_RETURN_IF_ERROR(run.CheckCounters());
  STRATA_RETURN_IF_ERROR(run.CheckChunks());
  STRATA_RETURN_IF_ERROR(run.CheckSymlinks());
  return std::move(run.problems);
}

Status KvMeta::Dump(std::ostream& out) {
  STRATA_ASSIGN_OR_RETURN(Format f, LoadFormat());
  json fj = {{"name", f.name},
             {"uuid", f.uuid},
             {"storage", f.storage},
             {"block_size", f.block_size},
             {"compress", f.compress},
             {"trash_days", f.trash_days},
             {"capacity", f.capacity},
             {"inodes", f.inodes},
             {"meta_version", f.meta_version},
             {"encrypt", f.encrypt},
             {"encrypt_salt", f.encrypt_salt},
             {"encrypt_check", f.encrypt_check}};
  json counters = json::object();
  STRATA_RETURN_IF_ERROR(kv_->ScanAll("K", [&](const std::string& k, const std::string& v) {
    counters[k.substr(1)] = std::stoll(v);
    return true;
  }));
  out << "{\"format\":" << fj.dump() << ",\n\"counters\":" << counters.dump() << ",\n\"inodes\":[";
  bool first = true;
  Status inner;
  STRATA_RETURN_IF_ERROR(kv_->ScanAll("A", [&](const std::string& k, const std::string& v) {
    Attr a;
    if (k.size() != 9 || !DecodeAttr(v, &a)) return true;
    Ino ino = DecodeBigEndian64(k.data() + 1);
    json j = AttrJson(ino, a);
    inner = Txn(
        [&](KvTxn& t) {
          if (S_ISLNK(a.mode)) {
            auto s = t.Get(SymKey(ino));
            if (s) j["symlink"] = NameJson(*s);
          }
          json x = json::object();
          t.Scan(XattrPrefix(ino), "", 0, false, [&](const std::string& xk, const std::string& xv) {
            x[Hex(xk.substr(9))] = Hex(xv);
            return true;
          });
          if (!x.empty()) j["xattrs"] = x;
          return Status::Ok();
        },
        true);
    if (!inner.ok()) return false;
    out << (first ? "\n" : ",\n") << j.dump();
    first = false;
    return true;
  }));
  STRATA_RETURN_IF_ERROR(inner);
  out << "],\n\"entries\":[";
  first = true;
  STRATA_RETURN_IF_ERROR(kv_->ScanAll("D", [&](const std::string& k, const std::string& v) {
    uint32_t type;
    Ino ino;
    if (k.size() < 10 || !DecodeDent(v, &type, &ino)) return true;
    json j = json::array({DecodeBigEndian64(k.data() + 1), NameJson(k.substr(9)), ino, type >> 12});
    out << (first ? "\n" : ",\n") << j.dump();
    first = false;
    return true;
  }));
  out << "],\n\"chunks\":[";
  first = true;
  STRATA_RETURN_IF_ERROR(kv_->ScanAll("C", [&](const std::string& k, const std::string& v) {
    std::vector<Slice> slices;
    if (k.size() != 13 || !DecodeSlices(v, &slices)) return true;
    json s = json::array();
    for (const auto& x : slices) s.push_back({x.id, x.size, x.off, x.len, x.pos});
    json j = json::array({DecodeBigEndian64(k.data() + 1), DecodeBigEndian32(k.data() + 9), s});
    out << (first ? "\n" : ",\n") << j.dump();
    first = false;
    return true;
  }));
  out << "],\n\"sustained\":[";
  first = true;
  STRATA_RETURN_IF_ERROR(kv_->ScanAll("U", [&](const std::string& k, const std::string&) {
    if (k.size() != 17) return true;
    out << (first ? "" : ",")
        << json::array({DecodeBigEndian64(k.data() + 1), DecodeBigEndian64(k.data() + 9)}).dump();
    first = false;
    return true;
  }));
  out << "],\n\"delslices\":[";
  first = true;
  STRATA_RETURN_IF_ERROR(kv_->ScanAll("Q", [&](const std::string& k, const std::string& v) {
    if (k.size() != 17 || v.size() != 4) return true;
    out << (first ? "" : ",")
        << json::array({DecodeBigEndian64(k.data() + 9), DecodeBigEndian32(v.data())}).dump();
    first = false;
    return true;
  }));
  out << "],\n\"quotas\":[";  // [dir ino, max space, max inodes, used space, used inodes]
  first = true;
  STRATA_RETURN_IF_ERROR(kv_->ScanAll(QuotaPrefix(), [&](const std::string& k, const std::string& v) {
    if (k.size() != 17 || v.size() != 32) return true;
    json j = json::array({DecodeBigEndian64(k.data() + 9)});
    for (int i = 0; i < 2; ++i) j.push_back(DecodeBigEndian64(v.data() + 8 * i));
    for (int i = 2; i < 4; ++i) j.push_back(static_cast<int64_t>(DecodeBigEndian64(v.data() + 8 * i)));
    out << (first ? "" : ",") << j.dump();
    first = false;
    return true;
  }));
  out << "],\n\"slicerefs\":[";  // [slice id, extra references] of slices shared by clones
  first = true;
  STRATA_RETURN_IF_ERROR(kv_->ScanAll("R", [&](const std::string& k, const std::string& v) {
    if (k.size() != 9) return true;
    out << (first ? "" : ",") << json::array({DecodeBigEndian64(k.data() + 1), std::stoll(v)}).dump();
    first = false;
    return true;
  }));
  out << "]}\n";
  if (!out) return Status::IOError("writing the metadata dump failed");
  return Status::Ok();
}

Status KvMeta::Load(std::istream& in) {
  json doc;
  try {
    // Whole-buffer parsing is several times faster than parsing the stream.
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    doc = json::parse(text);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("metadata dump is not valid JSON: ") + e.what());
  }
  bool formatted = false;
  STRATA_RETURN_IF_ERROR(Txn(
      [&](KvTxn& t) {
        formatted = t.Get(kFormatKey).has_value();
        return Status::Ok();
      },
      true));
  if (formatted) {
    return Status::AlreadyExists(
        "the metadata store already holds a volume; destroy it before load");
  }
  std::vector<std::pair<std::string, std::string>> kvs;
  Status st;
  auto flush = [&]() -> Status {
    if (kvs.empty()) return Status::Ok();
    // Straight to the backend: the loaded volume keeps the dump's change
    // counters (a load makes a new volume, no client has cached it yet).
    Status s = kv_->Txn(
        [&](KvTxn& t) {
          for (auto& [k, v] : kvs) t.Set(k, v);
          return Status::Ok();
        },
        false);
    kvs.clear();
    return s;
  };
  auto add = [&](std::string k, std::string v) -> Status {
    kvs.emplace_back(std::move(k), std::move(v));
    if (kvs.size() >= 10000) return flush();
    return Status::Ok();
  };
  std::string format_json;
  try {
    const json& f = doc.at("format");
    if (!f.at("name").is_string()) throw std::runtime_error("format.name must be a string");
    format_json = f.dump();
    for (auto& [name, v] : doc.at("counters").items()) {
      STRATA_RETURN_IF_ERROR(add("K" + name, std::to_string(v.get<int64_t>())));
    }
    for (const auto& j : doc.at("inodes")) {
      Attr a;
      Ino ino = j.at("ino").get<Ino>();
      a.mode = j.at("mode").get<uint32_t>();
      a.uid = j.at("uid").get<uint32_t>();
      a.gid = j.at("gid").get<uint32_t>();
      a.nlink = j.at("nlink").get<uint32_t>();
      a.size = j.at("size").get<uint64_t>();
      a.rdev = j.value("rdev", uint64_t{0});
      a.atime_ns = j.value("atime_ns", int64_t{0});
      a.mtime_ns = j.value("mtime_ns", int64_t{0});
      a.ctime_ns = j.value("ctime_ns", int64_t{0});
      a.parent = j.value("parent", Ino{0});
      STRATA_RETURN_IF_ERROR(add(AttrKey(ino), EncodeAttr(a)));
      if (j.contains("symlink"))
        STRATA_RETURN_IF_ERROR(add(SymKey(ino), NameFromJson(j["symlink"])));
      if (j.contains("xattrs")) {
        for (auto& [hk, hv] : j["xattrs"].items()) {
          std::string name, value;
          if (!Unhex(hk, &name) || !Unhex(hv.get<std::string>(), &value)) {
            throw std::runtime_error("bad xattr hex");
          }
          STRATA_RETURN_IF_ERROR(add(XattrKey(ino, name), value));
        }
      }
    }
    for (const auto& j : doc.at("entries")) {
      Ino parent = j.at(0).get<Ino>();
      std::string name = NameFromJson(j.at(1));
      Ino ino = j.at(2).get<Ino>();
      uint32_t type = j.at(3).get<uint32_t>() << 12;
      STRATA_RETURN_IF_ERROR(add(DentKey(parent, name), EncodeDent(type, ino)));
    }
    for (const auto& j : doc.at("chunks")) {
      std::vector<Slice> slices;
      for (const auto& s : j.at(2)) {
        slices.push_back({s.at(0).get<uint64_t>(), s.at(1).get<uint32_t>(), s.at(2).get<uint32_t>(),
                          s.at(3).get<uint32_t>(), s.at(4).get<uint32_t>()});
      }
      STRATA_RETURN_IF_ERROR(
          add(ChunkKey(j.at(0).get<Ino>(), j.at(1).get<uint32_t>()), EncodeSlices(slices)));
    }
    if (doc.contains("sustained")) {
      for (const auto& j : doc["sustained"]) {
        STRATA_RETURN_IF_ERROR(add(SustainKey(j.at(0).get<uint64_t>(), j.at(1).get<Ino>()), ""));
      }
    }
    if (doc.contains("delslices")) {
      for (const auto& j : doc["delslices"]) {
        std::string v;
        PutBigEndian32(&v, j.at(1).get<uint32_t>());
        STRATA_RETURN_IF_ERROR(add(DelSliceKey(j.at(0).get<uint64_t>()), v));
      }
    }
    if (doc.contains("quotas")) {
      for (const auto& j : doc["quotas"]) {
        std::string v;
        PutBigEndian64(&v, j.at(1).get<uint64_t>());
        PutBigEndian64(&v, j.at(2).get<uint64_t>());
        PutBigEndian64(&v, static_cast<uint64_t>(j.at(3).get<int64_t>()));
        PutBigEndian64(&v, static_cast<uint64_t>(j.at(4).get<int64_t>()));
        STRATA_RETURN_IF_ERROR(add(QuotaKey(j.at(0).get<Ino>()), v));
      }
    }
    if (doc.contains("slicerefs")) {
      for (const auto& j : doc["slicerefs"]) {
        STRATA_RETURN_IF_ERROR(add(SliceRefKey(j.at(0).get<uint64_t>()), std::to_string(j.at(1).get<int64_t>())));
      }
    }
  } catch (const std::exception& e) {
    return Status::InvalidArgument(std::string("metadata dump is malformed: ") + e.what() +
                                   " (the store may hold a partial load; destroy it and retry)");
  }
  STRATA_RETURN_IF_ERROR(add(kFormatKey, format_json));  // last: the volume exists once complete
  STRATA_RETURN_IF_ERROR(flush());
  DropCaches();
  return LoadFormat().status();
}

}  // namespace strata::fsmeta
