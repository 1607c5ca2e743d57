// strata warm | strata ckpt save|load|ls|rm — the training data path
// (cache/warmer.h, cache/checkpoint.h) from the command line.
#include "cli/datapath_cmds.h"
#include "cli/exit_codes.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <strata/cache/cached_object_store.h>
#include <strata/cache/checkpoint.h>
#include <strata/cache/warmer.h>
#include <strata/core/strings.h>
#include <strata/objstore/object_store.h>

namespace strata::cli {
namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }


int Fail(std::string_view cmd, const Status& st) {
  fmt::print(stderr, "strata {}: {}\n", cmd, st.ToString());
  return ExitCodeFor(st);
}

std::string Human(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

Result<std::vector<std::string>> ReadList(const std::string& path) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (path != "-") {
    file.open(path);
    if (!file) return Status::NotFound("cannot read the shard list " + path);
    in = &file;
  }
  std::vector<std::string> keys;
  std::string line;
  while (std::getline(*in, line)) {
    std::string_view t = Trim(line);
    if (t.empty() || t.front() == '#') continue;
    keys.emplace_back(t);
  }
  if (keys.empty()) return Status::InvalidArgument("the shard list " + path + " names no shards");
  return keys;
}

// ---------------------------------------------------------------------------
// strata warm

struct WarmArgs {
  std::string list;
  std::string store;
  std::string cache_dir;
  std::string cache_size = "100G";
  std::string ram_size = "256MiB";
  std::string block_size = "4MiB";
  std::string policy = "priority";
  std::string state;
  std::string progress;
  int progress_interval_ms = 1000;
  size_t lookahead = 3;
  int concurrency = 2;
  int epochs = 1;
  uint64_t shuffle_seed = 0;
  bool no_state = false;
  bool no_progress = false;
  bool quiet = false;
};

int CmdWarm(const WarmArgs& a) {
  auto keys = ReadList(a.list);
  if (!keys.ok()) return Fail("warm", keys.error());
  cache::CacheOptions co;
  auto cache_size = ParseByteSize(a.cache_size);
  auto ram_size = ParseByteSize(a.ram_size);
  auto block_size = ParseByteSize(a.block_size);
  for (const auto* r : {&cache_size, &ram_size, &block_size}) {
    if (!r->ok()) return Fail("warm", r->error());
  }
  if (!cache::ParseEvictionPolicy(a.policy, &co.policy)) {
    return Fail("warm", Status::InvalidArgument("--policy must be priority, sieve or lru"));
  }
  co.block_size = *block_size;
  co.ram_capacity_bytes = *ram_size;
  co.disk_tiers.push_back({a.cache_dir, *cache_size, 0.05, 0});
  co.name = "warm";
  auto base = objstore::OpenObjectStore(a.store);
  if (!base.ok()) return Fail("warm", base.error());
  auto cache = cache::CachedObjectStore::Open(std::move(*base), co);
  if (!cache.ok()) return Fail("warm", cache.error());
  const auto order = cache::EpochOrder(*keys, a.epochs, a.shuffle_seed);
  cache::WarmerOptions wo;
  wo.lookahead = a.lookahead;
  wo.concurrency = a.concurrency;
  if (!a.no_state) wo.state_file = a.state.empty() ? a.cache_dir + "/warm.state" : a.state;
  if (!a.no_progress)
    wo.progress_file = a.progress.empty() ? a.cache_dir + "/warm.progress.json" : a.progress;
  wo.progress_interval_ms = a.progress_interval_ms;
  wo.label = fmt::format("{} from {}", a.list == "-" ? "stdin" : a.list, a.store);
  auto warmer = cache::Warmer::Start(cache->get(), order, wo);
  if (!warmer.ok()) return Fail("warm", warmer.error());
  const auto start = Clock::now();
  uint64_t bytes = 0, shards = 0;
  int failures = 0;
  const uint64_t first = (*warmer)->position();
  if (first >= order.size()) {
    fmt::print("all {} shards were read by an earlier run ({}); remove it or pass --no-state to "
               "read them again\n",
               order.size(), wo.state_file);
  } else if (first > 0 && !a.quiet) {
    fmt::print("resuming at shard {} of {} ({})\n", first, order.size(), wo.state_file);
  }
  for (;;) {
    auto shard = (*warmer)->Next();
    if (!shard.ok()) {
      fmt::print(stderr, "strata warm: {}\n", shard.error().ToString());
      ++failures;
      continue;
    }
    if (!shard->has_value()) break;
    cache::WarmShard& s = **shard;
    uint64_t got = 0;
    Status st = s.reader->Read(0, s.info.size, [&](const char*, size_t n) {
      got += n;
      return Status::Ok();
    });
    if (!st.ok()) {
      fmt::print(stderr, "strata warm: reading {}: {}\n", s.info.key, st.ToString());
      ++failures;
      continue;
    }
    bytes += got;
    ++shards;
    if (!a.quiet) {
      fmt::print("[{}/{}] {}  {}  {}  waited {:.0f} ms\n", s.position + 1, order.size(), s.info.key,
                 Human(s.info.size),
                 s.was_cached ? "cached" : (s.cached ? "fetched" : "streamed (does not fit)"),
                 s.wait_seconds * 1000);
    }
  }
  const double secs = Since(start);
  const cache::WarmerStats ws = (*warmer)->stats();
  const cache::CacheStats cs = (*cache)->stats();
  fmt::print("{} shards, {} in {:.1f} s ({:.0f} MiB/s); {} already cached, {} fetched, {} did not fit; "
             "waited {:.1f} s in total\n",
             shards, Human(bytes), secs, secs > 0 ? bytes / secs / (1 << 20) : 0.0, ws.hits,
             ws.fetched, ws.uncached, ws.wait_seconds);
  for (const auto& t : cs.tiers) {
    fmt::print("  {}: {} of {} used, {} blocks, {} evictions\n", t.name, Human(t.used_bytes),
               Human(t.capacity_bytes), t.blocks, t.evictions);
  }
  fmt::print("  backend: {} GETs, {}\n", cs.backend_gets, Human(cs.backend_bytes));
  return failures ? kExitSomeFailed : 0;
}

// ---------------------------------------------------------------------------
// strata ckpt

struct CkptArgs {
  std::string dir;
  std::string store;
  std::string prefix;
  int keep_local = 2;
  int keep_remote = 0;
  int concurrency = 16;
  std::string part_size = "16MiB";
  bool no_fsync = false;
  // save
  std::string step;
  std::vector<std::string> paths;
  bool no_wait = false;
  // load
  std::string to;
  std::string source = "auto";
  // rm
  bool local = false;
  bool remote = false;
  bool force = false;
};

struct Opened {
  std::unique_ptr<objstore::ObjectStore> store;
  std::unique_ptr<cache::CheckpointManager> manager;
};

Result<Opened> OpenCkpt(const CkptArgs& a, bool resume) {
  Opened o;
  cache::CheckpointOptions co;
  co.local_dir = a.dir;
  co.prefix = a.prefix;
  co.keep_local = a.keep_local;
  co.keep_remote = a.keep_remote;
  co.upload_concurrency = a.concurrency;
  co.fsync = !a.no_fsync;
  co.resume = resume;
  STRATA_ASSIGN_OR_RETURN(co.part_size, ParseByteSize(a.part_size));
  co.multipart_threshold = co.part_size;
  if (!a.store.empty()) {
    STRATA_ASSIGN_OR_RETURN(o.store, objstore::OpenObjectStore(a.store));
    co.store = o.store.get();
  }
  STRATA_ASSIGN_OR_RETURN(o.manager, cache::CheckpointManager::Open(co));
  for (const auto& line : o.manager->recovery_report()) fmt::print(stderr, "strata ckpt: {}\n", line);
  return o;
}

Result<uint64_t> ResolveStep(cache::CheckpointManager& m, const std::string& step) {
  if (step == "latest" || step.empty()) {
    STRATA_ASSIGN_OR_RETURN(auto latest, m.Latest());
    if (!latest) return Status::NotFound("there is no checkpoint yet");
    return *latest;
  }
  auto n = ParseUint64(step);
  if (!n) return Status::InvalidArgument("--step must be a number or \"latest\", not \"" + step + "\"");
  return *n;
}

int CmdCkptSave(const CkptArgs& a) {
  auto step = ParseUint64(a.step);
  if (!step) return Fail("ckpt save", Status::InvalidArgument("--step must be a number"));
  std::vector<cache::CheckpointItem> items;
  uint64_t total = 0;
  for (const auto& p : a.paths) {
    std::error_code ec;
    const std::filesystem::path root(p);
    if (std::filesystem::is_directory(root, ec)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(root, ec)) {
        if (!e.is_regular_file()) continue;
        items.push_back(cache::CheckpointItem::File(
            std::filesystem::relative(e.path(), root).generic_string(), e.path().string()));
        total += e.file_size();
      }
    } else if (std::filesystem::is_regular_file(root, ec)) {
      items.push_back(cache::CheckpointItem::File(root.filename().string(), p));
      total += std::filesystem::file_size(root, ec);
    } else {
      return Fail("ckpt save", Status::NotFound(p + " is neither a file nor a directory"));
    }
  }
  auto o = OpenCkpt(a, /*resume=*/true);
  if (!o.ok()) return Fail("ckpt save", o.error());
  const auto start = Clock::now();
  Status st = o->manager->Save(*step, items);
  if (!st.ok()) return Fail("ckpt save", st);
  const double local_s = Since(start);
  fmt::print("step {} saved locally in {:.2f} s ({}, {} files, {:.0f} MiB/s): {}/{}\n", *step,
             local_s, Human(total), items.size(), local_s > 0 ? total / local_s / (1 << 20) : 0.0,
             a.dir, cache::CheckpointManager::StepName(*step));
  if (o->store && !a.no_wait) {
    st = o->manager->Wait();
    if (!st.ok()) {
      fmt::print(stderr, "strata ckpt save: upload failed (the local copy stays; the next run resumes it): {}\n",
                 st.ToString());
      return ExitCodeFor(st);
    }
    fmt::print("step {} uploaded and published in {:.2f} s more: {}/{}{}/MANIFEST.json\n", *step,
               Since(start) - local_s, o->store->url(), a.prefix,
               cache::CheckpointManager::StepName(*step));
  }
  return 0;
}

int CmdCkptLoad(const CkptArgs& a) {
  auto o = OpenCkpt(a, /*resume=*/false);
  if (!o.ok()) return Fail("ckpt load", o.error());
  auto step = ResolveStep(*o->manager, a.step);
  if (!step.ok()) return Fail("ckpt load", step.error());
  cache::LoadOptions lo;
  lo.download_concurrency = a.concurrency;
  if (a.source == "local") lo.source = cache::LoadOptions::Source::kLocal;
  else if (a.source == "remote") lo.source = cache::LoadOptions::Source::kRemote;
  else if (a.source != "auto") {
    return Fail("ckpt load", Status::InvalidArgument("--source must be auto, local or remote"));
  }
  const auto start = Clock::now();
  auto ck = o->manager->Load(*step, lo);
  if (!ck.ok()) return Fail("ckpt load", ck.error());
  uint64_t total = 0;
  for (const auto& f : ck->files) total += f.size;
  const double secs = Since(start);
  fmt::print("step {} loaded from {} copy in {:.2f} s ({}, checksums verified): {}\n", ck->step,
             ck->from_remote ? "the remote" : "the local", secs, Human(total), ck->dir);
  if (!a.to.empty()) {
    for (const auto& f : ck->files) {
      const std::filesystem::path dst = std::filesystem::path(a.to) / f.name;
      std::error_code ec;
      std::filesystem::create_directories(dst.parent_path(), ec);
      std::filesystem::copy_file(ck->PathOf(f.name), dst,
                                 std::filesystem::copy_options::overwrite_existing, ec);
      if (ec) return Fail("ckpt load", Status::IOError("copy to " + dst.string() + ": " + ec.message()));
    }
    fmt::print("copied {} files to {}\n", ck->files.size(), a.to);
  }
  return 0;
}

int CmdCkptLs(const CkptArgs& a) {
  auto o = OpenCkpt(a, /*resume=*/false);
  if (!o.ok()) return Fail("ckpt ls", o.error());
  auto list = o->manager->List();
  if (!list.ok()) return Fail("ckpt ls", list.error());
  fmt::print("{:>14}  {:>10}  {:>6}  {:<5}  {:<6}  {}\n", "STEP", "SIZE", "FILES", "LOCAL", "REMOTE",
             "");
  for (const auto& c : *list) {
    fmt::print("{:>14}  {:>10}  {:>6}  {:<5}  {:<6}  {}\n", c.step, Human(c.bytes), c.files.size(),
               c.local ? "yes" : "-", c.remote ? "yes" : "-",
               c.uploading ? "upload not finished" : "");
  }
  return 0;
}

int CmdCkptRm(const CkptArgs& a) {
  auto o = OpenCkpt(a, /*resume=*/false);
  if (!o.ok()) return Fail("ckpt rm", o.error());
  auto step = ResolveStep(*o->manager, a.step);
  if (!step.ok()) return Fail("ckpt rm", step.error());
  bool local = a.local, remote = a.remote;
  if (!local && !remote) {
    local = true;
    remote = o->store != nullptr;
  }
  Status st = o->manager->Remove(*step, local, remote, a.force);
  if (!st.ok()) return Fail("ckpt rm", st);
  fmt::print("step {} removed{}{}\n", *step, local ? " locally" : "", remote ? " and remotely" : "");
  return 0;
}

void AddCkptCommon(CLI::App* sub, CkptArgs& a) {
  sub->add_option("--dir", a.dir, "Local checkpoint directory")->required();
  sub->add_option("--store", a.store,
                  "Object store URL to upload to / load from (s3://BUCKET/PREFIX?endpoint=..., "
                  "file:///DIR?bucket=B); none: local only");
  sub->add_option("--prefix", a.prefix, "Key prefix inside the store (e.g. run-42/)");
  sub->add_option("--concurrency", a.concurrency, "Parallel requests (upload parts / ranged GETs)")
      ->capture_default_str();
  sub->add_option("--part-size", a.part_size, "Multipart part size and download range")
      ->capture_default_str();
}

}  // namespace

void RegisterDatapathCommands(CLI::App& app, int* exit_code) {
  auto warm = std::make_shared<WarmArgs>();
  auto ck = std::make_shared<CkptArgs>();
  auto wrap = [exit_code, warm, ck](std::function<int()> fn) {
    return [exit_code, fn = std::move(fn)] {
      try {
        *exit_code = fn();
      } catch (const std::exception& e) {
        fmt::print(stderr, "strata: internal error: {}\n", e.what());
        *exit_code = kExitSomeFailed;
      }
    };
  };

  auto* w = app.add_subcommand(
      "warm",
      "Read shards in a training run's order through a local cache, keeping the next ones warm "
      "(Belady eviction with the known order; resumable)");
  w->add_option("--list", warm->list, "File with one shard key per line, in read order (- = stdin)")
      ->required();
  w->add_option("--store", warm->store, "Object store URL the keys live in")->required();
  w->add_option("--cache-dir", warm->cache_dir, "Local cache directory")->required();
  w->add_option("--cache-size", warm->cache_size, "Disk cache limit (real on-disk bytes)")
      ->capture_default_str();
  w->add_option("--ram-size", warm->ram_size, "RAM tier in front of the disk")->capture_default_str();
  w->add_option("--block-size", warm->block_size, "Cache block size")->capture_default_str();
  w->add_option("--lookahead", warm->lookahead, "Shards kept warm ahead of the reader")
      ->capture_default_str();
  w->add_option("--concurrency", warm->concurrency, "Shards fetched at once")->capture_default_str();
  w->add_option("--epochs", warm->epochs, "Passes over the list")->capture_default_str();
  w->add_option("--shuffle-seed", warm->shuffle_seed,
                "Shuffle each epoch deterministically with this seed (0: list order)")
      ->capture_default_str();
  w->add_option("--policy", warm->policy, "Eviction: priority (Belady), sieve or lru")
      ->capture_default_str();
  w->add_option("--state", warm->state, "Position file (default: CACHE_DIR/warm.state)");
  w->add_flag("--no-state", warm->no_state, "Do not persist the position");
  w->add_option("--progress", warm->progress,
                "Progress file, rewritten atomically while warming (default: "
                "CACHE_DIR/warm.progress.json; the server's console reads it with --warm-dir)");
  w->add_option("--progress-interval-ms", warm->progress_interval_ms,
                "How often the progress file is rewritten")
      ->capture_default_str()
      ->check(CLI::Range(50, 3600000));
  w->add_flag("--no-progress", warm->no_progress, "Do not write a progress file");
  w->add_flag("-q,--quiet", warm->quiet, "Only the summary");
  w->footer(
      "\nExamples:\n"
      "  strata warm --list shards.txt --lookahead 3 --cache-dir /nvme/cache --cache-size 100G \\\n"
      "      --store 's3://data/imagenet?endpoint=http://10.0.0.5:9000'\n"
      "  strata warm --list shards.txt --epochs 3 --shuffle-seed 42 --cache-dir DIR --store URL\n"
      "Interrupted, it resumes at the shard it was reading (state in CACHE_DIR/warm.state).");
  w->callback(wrap([warm] { return CmdWarm(*warm); }));

  auto* c = app.add_subcommand("ckpt", "Training checkpoints: saved locally, uploaded in the background");
  c->require_subcommand(1);
  auto* save = c->add_subcommand("save", "Save files/directories as checkpoint STEP, then upload it");
  AddCkptCommon(save, *ck);
  save->add_option("--step", ck->step, "Step number")->required();
  save->add_option("paths", ck->paths, "Files or directories to save")->required()->expected(1, -1);
  save->add_option("--keep-local", ck->keep_local, "Keep the newest N local checkpoints (0: all)")
      ->capture_default_str();
  save->add_option("--keep-remote", ck->keep_remote, "Keep the newest N remote checkpoints (0: all)")
      ->capture_default_str();
  save->add_flag("--no-wait", ck->no_wait,
                 "Return once saved locally (the upload resumes at the next ckpt command)");
  save->add_flag("--no-fsync", ck->no_fsync, "Do not fsync the local copy");
  save->callback(wrap([ck] { return CmdCkptSave(*ck); }));

  auto* load = c->add_subcommand("load", "Load checkpoint STEP (local copy, else download), verified");
  AddCkptCommon(load, *ck);
  load->add_option("--step", ck->step, "Step number or \"latest\"")->capture_default_str();
  load->add_option("--to", ck->to, "Also copy the files to this directory");
  load->add_option("--source", ck->source, "auto, local or remote")->capture_default_str();
  load->callback(wrap([ck] { return CmdCkptLoad(*ck); }));

  auto* ls = c->add_subcommand("ls", "List local and remote checkpoints");
  AddCkptCommon(ls, *ck);
  ls->callback(wrap([ck] { return CmdCkptLs(*ck); }));

  auto* rm = c->add_subcommand("rm", "Delete a checkpoint (remote: manifest first)");
  AddCkptCommon(rm, *ck);
  rm->add_option("--step", ck->step, "Step number or \"latest\"")->required();
  rm->add_flag("--local", ck->local, "Only the local copy");
  rm->add_flag("--remote", ck->remote, "Only the remote copy");
  rm->add_flag("--force", ck->force, "Also a local copy whose upload has not finished");
  rm->callback(wrap([ck] { return CmdCkptRm(*ck); }));
}

}  // namespace strata::cli
