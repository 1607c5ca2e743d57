// strata fs sync SRC DST — `juicefs sync` for Strata FS: make DST hold what
// SRC holds, where each side is a local directory (a mounted Strata FS volume
// is one: its path is a directory) or s3://BUCKET[/PREFIX].
//
// Whenever a side is a bucket this is `strata sync` (transfer_cmds.cc, the
// parallel engine of objstore/transfer.h and the plans of transfer_plan.h):
// the JuiceFS flag names are translated and everything else (connection
// flags, --json, --quiet) is passed on as is, so there is one sync, not two.
// What this command adds is directory -> directory (two volumes, a volume and
// a local disk), which `strata sync` refuses: both trees are walked, a file is
// copied when it is missing in DST, its size differs, its mtime (whole
// seconds) differs, or with --check-all its bytes differ; copies go to a
// temporary name and are renamed into place with SRC's mtime, so a second run
// copies nothing and an interrupted one leaves no half file under a real name.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include <strata/core/status.h>
#include <strata/objstore/transfer_plan.h>

#include "cli/exit_codes.h"
#include "cli/fs_objbench.h"
#include "cli/transfer_cmds.h"

namespace strata::cli {
namespace {

using objstore::LocalFile;

struct FsSyncArgs {
  std::string src, dst;
  bool delete_dst = false;
  bool dry_run = false;
  bool check_all = false;
  int threads = 10;
  bool no_progress = false;
  bool quiet = false;
  std::vector<std::string> exclude, include;
  std::vector<std::string> s3_args;  // passed on to `strata sync` verbatim
};

bool IsBucketUrl(const std::string& s) { return s.rfind("s3://", 0) == 0; }

Status ErrnoStatus(const std::string& what) {
  const int e = errno;
  std::string msg = what + ": " + std::strerror(e);
  if (e == ENOENT) return Status::NotFound(msg);
  if (e == EACCES || e == EPERM) return Status::PermissionDenied(msg);
  return Status::IOError(msg);
}

// Byte-for-byte comparison of two files (--check-all).
Result<bool> SameContent(const std::string& a, const std::string& b) {
  const int fa = ::open(a.c_str(), O_RDONLY | O_CLOEXEC);
  if (fa < 0) return ErrnoStatus("open " + a);
  const int fb = ::open(b.c_str(), O_RDONLY | O_CLOEXEC);
  if (fb < 0) {
    Status st = ErrnoStatus("open " + b);
    ::close(fa);
    return st;
  }
  std::vector<char> ba(1 << 20), bb(1 << 20);
  Result<bool> out = true;
  for (;;) {
    const ssize_t na = ::read(fa, ba.data(), ba.size());
    if (na < 0) {
      out = ErrnoStatus("read " + a);
      break;
    }
    size_t got = 0;
    while (got < static_cast<size_t>(na)) {
      const ssize_t nb = ::read(fb, bb.data() + got, static_cast<size_t>(na) - got);
      if (nb < 0) {
        out = ErrnoStatus("read " + b);
        break;
      }
      if (nb == 0) break;
      got += static_cast<size_t>(nb);
    }
    if (!out.ok()) break;
    if (got != static_cast<size_t>(na) || std::memcmp(ba.data(), bb.data(), got) != 0) {
      out = false;
      break;
    }
    if (na == 0) break;
  }
  ::close(fa);
  ::close(fb);
  return out;
}

// Copies src to dst through a temporary file beside it, then gives it src's
// mtime and mode and renames it into place.
Status CopyFile(const LocalFile& src, const std::string& dst, std::atomic<uint64_t>* copied_bytes) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(dst).parent_path(), ec);
  if (ec)
    return Status::IOError("mkdir " + std::filesystem::path(dst).parent_path().string() + ": " +
                           ec.message());
  struct stat st {};
  const int in = ::open(src.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0) return ErrnoStatus("open " + src.path);
  if (::fstat(in, &st) != 0) {
    Status s = ErrnoStatus("stat " + src.path);
    ::close(in);
    return s;
  }
  const std::string tmp = dst + ".strata-sync-tmp";
  const int out = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (out < 0) {
    Status s = ErrnoStatus("create " + tmp);
    ::close(in);
    return s;
  }
  Status res;
  std::vector<char> buf(1 << 20);
  for (;;) {
    const ssize_t n = ::read(in, buf.data(), buf.size());
    if (n < 0) {
      res = ErrnoStatus("read " + src.path);
      break;
    }
    if (n == 0) break;
    ssize_t off = 0;
    while (off < n) {
      const ssize_t w = ::write(out, buf.data() + off, static_cast<size_t>(n - off));
      if (w < 0) {
        res = ErrnoStatus("write " + tmp);
        break;
      }
      off += w;
    }
    if (!res.ok()) break;
    *copied_bytes += static_cast<uint64_t>(n);
  }
  if (res.ok() && ::fchmod(out, st.st_mode & 07777) != 0) res = ErrnoStatus("chmod " + tmp);
  const struct timespec times[2] = {st.st_atim, st.st_mtim};
  if (res.ok() && ::futimens(out, times) != 0) res = ErrnoStatus("set mtime of " + tmp);
  // close() is where a network filesystem (Strata FS included) reports a
  // failed upload.
  if (::close(out) != 0 && res.ok()) res = ErrnoStatus("close " + tmp);
  ::close(in);
  if (res.ok() && ::rename(tmp.c_str(), dst.c_str()) != 0)
    res = ErrnoStatus("rename " + tmp + " to " + dst);
  if (!res.ok()) ::unlink(tmp.c_str());
  return res;
}

int SyncDirs(const FsSyncArgs& a, const objstore::PathFilter& filters) {
  auto fail = [](const Status& st) {
    fmt::print(stderr, "strata fs sync: {}\n", st.ToString());
    return ExitCodeFor(st);
  };
  if (!objstore::IsLocalDir(a.src)) {
    return fail(Status::InvalidArgument("SRC \"" + a.src +
                                        "\" is not a directory (nor an s3:// location)"));
  }
  std::error_code ec;
  if (std::filesystem::exists(a.dst, ec) && !objstore::IsLocalDir(a.dst))
    return fail(Status::InvalidArgument("DST \"" + a.dst + "\" exists and is not a directory"));
  {
    // Overlapping trees: DST inside SRC would copy DST into itself, and SRC
    // inside DST would lose SRC's own files to --delete-dst (they are not
    // under SRC's relative names).
    const auto s = std::filesystem::weakly_canonical(a.src, ec).string() + "/";
    const auto d = std::filesystem::weakly_canonical(a.dst, ec).string() + "/";
    if (ec) return fail(Status::InvalidArgument("cannot resolve " + a.dst + ": " + ec.message()));
    if (s.rfind(d, 0) == 0 || d.rfind(s, 0) == 0)
      return fail(Status::InvalidArgument(
          "SRC and DST overlap (one is inside the other): " + a.src + ", " + a.dst));
  }
  std::vector<LocalFile> src_files, dst_files;
  if (Status st = objstore::WalkLocal(a.src, &src_files); !st.ok())
    return fail(st.WithContext("walking " + a.src));
  if (objstore::IsLocalDir(a.dst)) {
    if (Status st = objstore::WalkLocal(a.dst, &dst_files); !st.ok())
      return fail(st.WithContext("walking " + a.dst));
  }
  std::map<std::string, const LocalFile*> dst_by_rel;
  for (const LocalFile& f : dst_files) dst_by_rel[f.rel] = &f;

  // The plan. Excluded paths are neither copied nor deleted.
  std::vector<const LocalFile*> to_copy;
  std::vector<std::string> to_delete;
  std::vector<std::pair<const LocalFile*, const LocalFile*>> to_compare;
  size_t skipped = 0;
  std::map<std::string, bool> in_src;
  for (const LocalFile& f : src_files) {
    if (!filters.Included(f.rel)) continue;
    in_src[f.rel] = true;
    auto it = dst_by_rel.find(f.rel);
    if (it == dst_by_rel.end() || it->second->size != f.size ||
        it->second->mtime_ns / 1000000000 != f.mtime_ns / 1000000000) {
      to_copy.push_back(&f);
    } else if (a.check_all) {
      to_compare.emplace_back(&f, it->second);
    } else {
      ++skipped;
    }
  }
  if (a.delete_dst) {
    for (const LocalFile& f : dst_files)
      if (filters.Included(f.rel) && !in_src.count(f.rel)) to_delete.push_back(f.path);
  }
  std::atomic<size_t> failed{0};
  std::mutex mu;
  auto report = [&](const Status& st) {
    ++failed;
    std::lock_guard l(mu);
    fmt::print(stderr, "strata fs sync: {}\n", st.ToString());
  };
  for (const auto& [s, d] : to_compare) {
    auto same = SameContent(s->path, d->path);
    if (!same.ok()) {
      report(same.error());
    } else if (*same) {
      ++skipped;
    } else {
      to_copy.push_back(s);
    }
  }
  uint64_t total_bytes = 0;
  for (const LocalFile* f : to_copy) total_bytes += f->size;

  if (a.dry_run) {
    for (const LocalFile* f : to_copy)
      fmt::print("(dryrun) copy {} to {}\n", f->path, objstore::JoinPath(a.dst, f->rel));
    for (const std::string& p : to_delete) fmt::print("(dryrun) delete {}\n", p);
    fmt::print("Would copy {} files ({} bytes), skip {}, delete {}\n", to_copy.size(), total_bytes,
               skipped, to_delete.size());
    return failed ? kExitSomeFailed : 0;
  }

  std::atomic<size_t> next{0}, copied{0};
  std::atomic<uint64_t> bytes{0};
  auto worker = [&] {
    for (size_t i = next++; i < to_copy.size(); i = next++) {
      const LocalFile& f = *to_copy[i];
      Status st = CopyFile(f, objstore::JoinPath(a.dst, f.rel), &bytes);
      if (st.ok()) {
        ++copied;
        if (!a.quiet) {
          std::lock_guard l(mu);
          fmt::print("copy: {} to {}\n", f.path, objstore::JoinPath(a.dst, f.rel));
        }
      } else {
        report(st);
      }
    }
  };
  const bool bar = !a.no_progress && !a.quiet && ::isatty(STDERR_FILENO);
  std::vector<std::thread> ts;
  const size_t nt = std::min<size_t>(static_cast<size_t>(std::max(1, a.threads)),
                                     std::max<size_t>(1, to_copy.size()));
  for (size_t t = 0; t < nt; ++t) ts.emplace_back(worker);
  if (bar) {
    while (next.load() < to_copy.size() || copied.load() + failed.load() < to_copy.size()) {
      const uint64_t b = bytes.load();
      const int fill = total_bytes == 0 ? 30 : static_cast<int>(30 * b / total_bytes);
      fmt::print(stderr, "\r[{}{}] {}/{} files, {}/{} bytes",
                 std::string(static_cast<size_t>(fill), '#'),
                 std::string(static_cast<size_t>(30 - fill), ' '), copied.load(), to_copy.size(), b,
                 total_bytes);
      std::fflush(stderr);
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  for (auto& t : ts) t.join();
  if (bar) std::fputs("\r\033[K", stderr);
  size_t deleted = 0;
  for (const std::string& p : to_delete) {
    if (::unlink(p.c_str()) == 0 || errno == ENOENT) {
      ++deleted;
      if (!a.quiet) fmt::print("delete: {}\n", p);
    } else {
      report(ErrnoStatus("delete " + p));
    }
  }
  fmt::print("Copied {} files ({} bytes), skipped {}, deleted {}, failed {}\n", copied.load(),
             bytes.load(), skipped, deleted, failed.load());
  return failed ? kExitSomeFailed : 0;
}

// Either side a bucket: `strata sync` with the flags translated.
int SyncViaTransfer(const FsSyncArgs& a, const std::vector<std::pair<bool, std::string>>& rules) {
  std::vector<std::string> args = {a.src, a.dst, "--concurrency", std::to_string(a.threads)};
  if (a.delete_dst) args.push_back("--delete");
  if (a.dry_run) args.push_back("--dryrun");
  if (a.check_all) args.push_back("--checksum");
  if (a.no_progress) args.push_back("--no-progress");
  if (a.quiet) args.push_back("--quiet");
  for (const auto& [inc, pattern] : rules) {
    args.push_back(inc ? "--include" : "--exclude");
    args.push_back(pattern);
  }
  args.insert(args.end(), a.s3_args.begin(), a.s3_args.end());
  CLI::App app{"strata"};
  int code = 0;
  RegisterTransferCommands(app, &code);
  std::vector<std::string> argv = {"sync"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::reverse(argv.begin(), argv.end());  // CLI11 takes the vector back to front
  try {
    app.parse(argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }
  return code;
}

}  // namespace

void RegisterFsSync(CLI::App* fsc,
                    const std::function<std::function<void()>(std::function<int()>)>& wrap) {
  auto a = std::make_shared<FsSyncArgs>();
  auto* s = fsc->add_subcommand("sync",
                                "Make DST hold what SRC holds: directories (mounted volumes, local "
                                "disks) and s3://BUCKET[/PREFIX]");
  s->add_option("src", a->src,
                "A directory (e.g. a path in a mounted volume) or s3://BUCKET[/PREFIX]")
      ->required();
  s->add_option("dst", a->dst, "A directory or s3://BUCKET[/PREFIX]")->required();
  s->add_flag("--delete-dst", a->delete_dst, "Delete files in DST that are not in SRC");
  s->add_flag("--dry-run", a->dry_run, "Print what would be copied or deleted, change nothing");
  s->add_flag(
      "--check-all", a->check_all,
      "Compare the contents of files whose size and mtime agree (directories: byte by byte; "
      "buckets: as strata sync --checksum)");
  s->add_option("-p,--threads", a->threads, "Files (and parts) copied at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  s->add_option("--exclude", a->exclude,
                "Skip paths matching this pattern (relative to SRC; * ? []; repeatable)")
      ->allow_extra_args(false);
  s->add_option("--include", a->include,
                "Do not skip paths matching this, even if an --exclude matched (repeatable)")
      ->allow_extra_args(false);
  s->add_flag("--no-progress", a->no_progress,
              "No progress bar (it is shown only when stderr is a terminal)");
  s->add_flag("-q,--quiet", a->quiet, "Print errors and the summary only");
  s->allow_extras();
  s->footer(
      "\nWith an s3:// side this is `strata sync` (its connection flags --endpoint-url, "
      "--profile,\n"
      "--region, --json, ... are passed on). Directory to directory is done here: copied when\n"
      "missing, or size or mtime (seconds) differ, or with --check-all the bytes differ.\n"
      "Examples:\n"
      "  strata fs sync /mnt/vol1/data /mnt/vol2/data --delete-dst\n"
      "  strata fs sync /mnt/vol1/ds s3://backup/ds --endpoint-url http://127.0.0.1:9000\n"
      "  strata fs sync s3://backup/ds /mnt/vol1/ds --threads 32 --exclude '*.tmp'");
  s->callback(wrap([a, s]() -> int {
    // --exclude/--include in command-line order (the last match wins).
    std::vector<std::pair<bool, std::string>> rules;
    size_t ei = 0, ii = 0;
    for (const CLI::Option* o : s->parse_order()) {
      if (o->check_lname("exclude") && ei < a->exclude.size())
        rules.emplace_back(false, a->exclude[ei++]);
      else if (o->check_lname("include") && ii < a->include.size())
        rules.emplace_back(true, a->include[ii++]);
    }
    while (ei < a->exclude.size()) rules.emplace_back(false, a->exclude[ei++]);
    while (ii < a->include.size()) rules.emplace_back(true, a->include[ii++]);
    a->s3_args = s->remaining();
    if (IsBucketUrl(a->src) || IsBucketUrl(a->dst)) return SyncViaTransfer(*a, rules);
    if (!a->s3_args.empty()) {
      fmt::print(
          stderr,
          "strata fs sync: unknown option {} (directory to directory takes no connection flags)\n",
          a->s3_args.front());
      return kExitUsage;
    }
    objstore::PathFilter filters;
    for (const auto& [inc, pattern] : rules) filters.Add(inc, pattern);
    return SyncDirs(*a, filters);
  }));
}

}  // namespace strata::cli
