// strata fs objbench STORAGE_URL — the object store's own speed, as
// `juicefs objbench` measures it: a functional check of the operations a
// volume needs, then big-object put/get (a big "file" cut into blocks) and
// small-object put/get/head/list/delete, with N threads. It opens the same
// URLs as `strata fs format --storage` (objstore::OpenObjectStore), works
// under a random prefix and deletes everything it wrote, so it can be pointed
// at a volume's live bucket: a mount's numbers are bounded by these.
#include "cli/fs_objbench.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include <strata/core/strings.h>
#include <strata/objstore/object_store.h>

#include "cli/exit_codes.h"

namespace strata::cli {
namespace {

using objstore::ObjectStore;
using Clock = std::chrono::steady_clock;

struct ObjbenchArgs {
  std::string storage;
  std::string big_object_size = "256M";
  std::string block_size = "4M";
  std::string small_object_size = "128K";
  int small_objects = 100;
  int threads = 4;
  bool skip_functional = false;
  bool no_progress = false;
};

std::string HumanSize(uint64_t b) {
  if (b >= (1ull << 30) && b % (1ull << 30) == 0) return fmt::format("{} GiB", b >> 30);
  if (b >= (1ull << 20) && b % (1ull << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= 1024 && b % 1024 == 0) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

std::string RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::string s(n, '\0');
  for (size_t i = 0; i + 8 <= n; i += 8) {
    const uint64_t v = g();
    std::memcpy(&s[i], &v, 8);
  }
  for (size_t i = n - n % 8; i < n; ++i) s[i] = static_cast<char>(g());
  return s;
}

// One measured phase: n operations spread over threads, each timed.
struct PhaseResult {
  std::string item;
  int ops = 0;
  int failed = 0;
  uint64_t bytes = 0;  // payload moved (0: not a data phase)
  double seconds = 0;
  double avg_ms = 0, p99_ms = 0;
  std::string first_error;
};

class Phases {
 public:
  Phases(int threads, bool progress)
      : threads_(threads), progress_(progress && ::isatty(STDERR_FILENO)) {}

  // fn(i) does operation i and returns its status; bytes_per_op counts the
  // payload of a successful operation.
  PhaseResult Run(const std::string& item, int n, uint64_t bytes_per_op,
                  const std::function<Status(int)>& fn) {
    PhaseResult r;
    r.item = item;
    r.ops = n;
    std::vector<double> lat(static_cast<size_t>(n), 0);
    std::atomic<int> next{0}, done{0}, failed{0};
    std::mutex mu;
    const auto t0 = Clock::now();
    auto worker = [&] {
      for (int i = next++; i < n; i = next++) {
        const auto s = Clock::now();
        Status st = fn(i);
        lat[static_cast<size_t>(i)] =
            std::chrono::duration<double, std::milli>(Clock::now() - s).count();
        if (!st.ok()) {
          ++failed;
          std::lock_guard l(mu);
          if (r.first_error.empty()) r.first_error = st.ToString();
        }
        ++done;
      }
    };
    std::vector<std::thread> ts;
    const int nt = std::max(1, std::min(threads_, n));
    for (int t = 0; t < nt; ++t) ts.emplace_back(worker);
    if (progress_) {
      // Drawn from this thread while the workers run.
      while (done.load() < n) {
        DrawBar(item, done.load(), n);
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    for (auto& t : ts) t.join();
    if (progress_) std::fputs("\r\033[K", stderr);
    r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    r.failed = failed.load();
    r.bytes = bytes_per_op * static_cast<uint64_t>(n - r.failed);
    if (n > 0) {
      double sum = 0;
      for (double v : lat) sum += v;
      r.avg_ms = sum / n;
      std::sort(lat.begin(), lat.end());
      r.p99_ms = lat[std::min<size_t>(lat.size() - 1,
                                      static_cast<size_t>(0.99 * static_cast<double>(lat.size())))];
    }
    return r;
  }

 private:
  static void DrawBar(const std::string& item, int done, int n) {
    const int width = 30;
    const int fill = n == 0 ? width : done * width / n;
    fmt::print(stderr, "\r{:<22} [{}{}] {}/{}", item, std::string(static_cast<size_t>(fill), '#'),
               std::string(static_cast<size_t>(width - fill), ' '), done, n);
    std::fflush(stderr);
  }

  int threads_;
  bool progress_;
};

// --- the functional check -------------------------------------------------

struct Check {
  std::string name;
  Status st;
};

Status Expect(bool cond, const std::string& what) {
  return cond ? Status::Ok() : Status::Corruption(what);
}

std::vector<Check> FunctionalChecks(ObjectStore& store, const std::string& prefix) {
  std::vector<Check> out;
  const std::string key = prefix + "functional/object";
  const std::string body = RandomBytes(10000, 7);
  auto add = [&](const std::string& name, Status st) { out.push_back({name, std::move(st)}); };

  add("put an object", store.PutBytes(key, body).status());
  {
    auto got = store.GetBytes(key);
    add("get the object",
        !got.ok() ? got.error()
                  : Expect(*got == body, "the bytes read differ from the bytes written"));
  }
  {
    objstore::ReadOptions ro;
    ro.offset = 1000;
    ro.length = 2345;
    auto got = store.GetBytes(key, ro);
    add("get a range",
        !got.ok() ? got.error()
                  : Expect(*got == body.substr(1000, 2345),
                           fmt::format("range 1000+2345 returned {} wrong bytes", got->size())));
  }
  {
    auto h = store.Head(key);
    add("head the object",
        !h.ok() ? h.error()
                : Expect(h->size == body.size(),
                         fmt::format("head says {} bytes, {} were written", h->size, body.size())));
  }
  {
    auto page = store.List(prefix + "functional/", "", "", 1000);
    bool found = false;
    if (page.ok())
      for (const auto& o : page->objects) found |= (o.key == key && o.size == body.size());
    add("list the object",
        !page.ok() ? page.error() : Expect(found, "the listing does not show the object"));
  }
  add("delete the object", store.Delete(key));
  {
    auto h = store.Head(key);
    add("head after delete", h.ok() ? Status::Corruption("the deleted object is still there")
                             : h.error().code() == StatusCode::kNotFound ? Status::Ok()
                                                                         : h.error());
  }
  add("delete a missing object", store.Delete(key));
  return out;
}

// Deletes everything under prefix; returns how many objects remain after.
Result<size_t> CleanUp(ObjectStore& store, const std::string& prefix) {
  std::vector<std::string> keys;
  STRATA_RETURN_IF_ERROR(store.ListAll(prefix, [&](const objstore::ObjectInfo& o) {
    keys.push_back(o.key);
    return Status::Ok();
  }));
  for (size_t i = 0; i < keys.size(); i += 1000) {
    std::vector<std::string> batch(
        keys.begin() + static_cast<long>(i),
        keys.begin() + static_cast<long>(std::min(keys.size(), i + 1000)));
    STRATA_ASSIGN_OR_RETURN(auto sts, store.DeleteMany(batch));
    for (const Status& s : sts) STRATA_RETURN_IF_ERROR(s);
  }
  size_t left = 0;
  STRATA_RETURN_IF_ERROR(store.ListAll(prefix, [&](const objstore::ObjectInfo&) {
    ++left;
    return Status::Ok();
  }));
  return left;
}

void PrintTable(const std::vector<PhaseResult>& rows) {
  fmt::print("{:<24} {:>8} {:>12} {:>12} {:>14} {:>14}\n", "ITEM", "OPS", "OPS/S", "MiB/S",
             "AVG MS/OP", "P99 MS/OP");
  for (const PhaseResult& r : rows) {
    const double ops_s = r.seconds > 0 ? (r.ops - r.failed) / r.seconds : 0;
    const std::string mib =
        r.bytes > 0 && r.seconds > 0
            ? fmt::format("{:.2f}", static_cast<double>(r.bytes) / (1 << 20) / r.seconds)
            : "-";
    fmt::print("{:<24} {:>8} {:>12.1f} {:>12} {:>14.2f} {:>14.2f}{}\n", r.item, r.ops, ops_s, mib,
               r.avg_ms, r.p99_ms,
               r.failed ? fmt::format("  ({} FAILED: {})", r.failed, r.first_error) : "");
  }
}

int CmdObjbench(const ObjbenchArgs& a) {
  auto fail = [](const Status& st) {
    fmt::print(stderr, "strata fs objbench: {}\n", st.ToString());
    return ExitCodeFor(st);
  };
  auto big = ParseByteSize(a.big_object_size);
  auto block = ParseByteSize(a.block_size);
  auto small = ParseByteSize(a.small_object_size);
  if (!big)
    return fail(
        Status::InvalidArgument("--big-object-size \"" + a.big_object_size + "\" is not a size"));
  if (!block || *block == 0)
    return fail(
        Status::InvalidArgument("--block-size \"" + a.block_size + "\" is not a positive size"));
  if (!small)
    return fail(Status::InvalidArgument("--small-object-size \"" + a.small_object_size +
                                        "\" is not a size"));
  if (*block > (1ull << 30))
    return fail(Status::InvalidArgument("--block-size must be at most 1GiB"));
  auto opened = objstore::OpenObjectStore(a.storage);
  if (!opened) return fail(opened.error().WithContext("opening " + a.storage));
  ObjectStore& store = **opened;

  std::random_device rd;
  const std::string prefix =
      fmt::format("__strata_objbench_{:016x}/", (static_cast<uint64_t>(rd()) << 32) ^ rd());
  fmt::print("Object store: {}\nPrefix: {} (removed at the end)\n", store.url(), prefix);
  int rc = 0;

  if (!a.skip_functional) {
    fmt::print("\nFunctional tests:\n");
    for (const Check& c : FunctionalChecks(store, prefix)) {
      fmt::print("  {:<26} {}\n", c.name, c.st.ok() ? "ok" : "FAILED: " + c.st.ToString());
      if (!c.st.ok()) rc = kExitSomeFailed;
    }
    if (rc != 0) {
      // The numbers of a store that fails these would mean nothing.
      fmt::print("\nA functional test failed: no benchmark.\n");
      auto left = CleanUp(store, prefix);
      if (left.ok() && *left == 0) fmt::print("Cleaned up: nothing left under {}\n", prefix);
      return rc;
    }
  }

  const int nblocks = static_cast<int>((*big + *block - 1) / *block);
  const uint64_t last_block = *big % *block == 0 ? *block : *big % *block;
  const int nsmall = std::max(0, a.small_objects);
  fmt::print("\nBenchmark: big object {} in {} blocks of {}, {} small objects of {}, {} threads\n",
             HumanSize(*big), nblocks, HumanSize(*block), nsmall, HumanSize(*small), a.threads);
  const std::string block_data = RandomBytes(*block, 1);
  const std::string small_data = RandomBytes(*small, 2);
  auto block_key = [&](int i) { return fmt::format("{}big/{:06d}", prefix, i); };
  auto small_key = [&](int i) { return fmt::format("{}small/{:06d}", prefix, i); };
  auto block_len = [&](int i) { return i == nblocks - 1 ? last_block : *block; };

  Phases ph(a.threads, !a.no_progress);
  std::vector<PhaseResult> rows;
  auto get_check = [&](const std::string& key, uint64_t want) -> Status {
    uint64_t got = 0;
    STRATA_RETURN_IF_ERROR(store.Get(key, {}, [&](const char*, size_t n) {
      got += n;
      return Status::Ok();
    }));
    return got == want ? Status::Ok()
                       : Status::Corruption(
                             fmt::format("{}: read {} bytes, {} were written", key, got, want));
  };
  if (nblocks > 0) {
    // The whole-block average: the last block may be short.
    const uint64_t per = *big / static_cast<uint64_t>(nblocks);
    rows.push_back(ph.Run("put big object", nblocks, per, [&](int i) {
      return store.PutBytes(block_key(i), std::string_view(block_data).substr(0, block_len(i)))
          .status();
    }));
    rows.push_back(ph.Run("get big object", nblocks, per,
                          [&](int i) { return get_check(block_key(i), block_len(i)); }));
  }
  if (nsmall > 0) {
    rows.push_back(ph.Run("put small objects", nsmall, *small, [&](int i) {
      return store.PutBytes(small_key(i), small_data).status();
    }));
    rows.push_back(ph.Run("get small objects", nsmall, *small,
                          [&](int i) { return get_check(small_key(i), *small); }));
    rows.push_back(ph.Run("head small objects", nsmall, 0, [&](int i) -> Status {
      STRATA_ASSIGN_OR_RETURN(auto h, store.Head(small_key(i)));
      return h.size == *small ? Status::Ok()
                              : Status::Corruption(fmt::format("head says {} bytes", h.size));
    }));
    // One listing of every small object, 100 keys a page, timed per page.
    const int pages = (nsmall + 99) / 100;
    std::vector<std::string> tokens(static_cast<size_t>(pages) + 1);
    std::atomic<int> listed{0};
    rows.push_back(
        Phases(1, !a.no_progress).Run("list objects (100/page)", pages, 0, [&](int i) -> Status {
          STRATA_ASSIGN_OR_RETURN(
              auto page, store.List(prefix + "small/", "", tokens[static_cast<size_t>(i)], 100));
          listed += static_cast<int>(page.objects.size());
          tokens[static_cast<size_t>(i) + 1] = page.next_token;
          if (i + 1 < pages && page.next_token.empty())
            return Status::Corruption("the listing ended early");
          return Status::Ok();
        }));
    if (listed.load() != nsmall) {
      rows.back().failed = std::max(rows.back().failed, 1);
      if (rows.back().first_error.empty())
        rows.back().first_error = fmt::format("listed {} of {} objects", listed.load(), nsmall);
    }
    rows.push_back(ph.Run("delete small objects", nsmall, 0,
                          [&](int i) { return store.Delete(small_key(i)); }));
  }
  if (nblocks > 0)
    rows.push_back(
        ph.Run("delete big object", nblocks, 0, [&](int i) { return store.Delete(block_key(i)); }));
  fmt::print("\n");
  PrintTable(rows);
  for (const PhaseResult& r : rows)
    if (r.failed) rc = kExitSomeFailed;

  auto left = CleanUp(store, prefix);
  if (!left.ok()) {
    fmt::print(stderr, "strata fs objbench: cleaning up {}: {}\n", prefix, left.error().ToString());
    return kExitSomeFailed;
  }
  if (*left != 0) {
    fmt::print(stderr, "strata fs objbench: {} objects under {} could not be removed\n", *left,
               prefix);
    return kExitSomeFailed;
  }
  fmt::print("\nCleaned up: nothing left under {}\n", prefix);
  return rc;
}

}  // namespace

void RegisterFsObjbench(CLI::App* fsc,
                        const std::function<std::function<void()>(std::function<int()>)>& wrap) {
  auto a = std::make_shared<ObjbenchArgs>();
  auto* o = fsc->add_subcommand("objbench",
                                "Measure the object store itself: functional check, big/small "
                                "object put/get/head/list/delete");
  o->add_option("storage", a->storage,
                "Storage URL, as format --storage takes it (file://, s3://, mem://)")
      ->required();
  o->add_option("--big-object-size", a->big_object_size,
                "Total size of the big object (written as --block-size blocks)")
      ->capture_default_str();
  o->add_option("--block-size", a->block_size, "Size of each block of the big object")
      ->capture_default_str();
  o->add_option("--small-object-size", a->small_object_size, "Size of each small object")
      ->capture_default_str();
  o->add_option("--small-objects", a->small_objects, "Number of small objects")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
  o->add_option("-p,--threads", a->threads, "Operations in flight at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  o->add_flag("--skip-functional-tests", a->skip_functional, "Skip the functional check");
  o->add_flag("--no-progress", a->no_progress,
              "No progress bar (it is shown only when stderr is a terminal)");
  o->footer(
      "\nExamples:\n"
      "  strata fs objbench 'file:///var/lib/strata/data?bucket=fs'\n"
      "  strata fs objbench 's3://fs?endpoint=http://127.0.0.1:9000' --threads 16 "
      "--big-object-size 1G\n"
      "Everything is written under a random prefix __strata_objbench_*/ and deleted at the end;\n"
      "exit 1 when a check or an operation failed or something could not be removed.");
  o->callback(wrap([a] { return CmdObjbench(*a); }));
}

}  // namespace strata::cli
