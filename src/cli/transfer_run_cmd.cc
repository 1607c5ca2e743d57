// strata run FILE | run -: s5cmd's batch mode. Each line is one strata
// command (cp, mv, rm, sync, ...), run as a child process of this binary,
// --concurrency lines at a time; a line's output is printed whole when it
// ends (its stderr prefixed with its line number), so lines never interleave.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <strata/core/strings.h>

#include "cli/exit_codes.h"
#include "cli/transfer_session.h"

extern char** environ;

namespace strata::cli::transfer {
namespace {

struct RunArgs {
  std::string file;  // "-" = stdin
};

struct Line {
  int number = 0;
  std::vector<std::string> args;  // the command and its arguments
};

// Shell-like words: blanks separate, '...' is literal, "..." keeps \" \\ \$
// escapes, a backslash outside quotes escapes the next character.
Result<std::vector<std::string>> SplitWords(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char ch = s[i];
    if (ch == ' ' || ch == '\t' || ch == '\r') {
      if (in_word) out.push_back(std::exchange(cur, {}));
      in_word = false;
      continue;
    }
    in_word = true;
    if (ch == '\'') {
      const size_t end = s.find('\'', i + 1);
      if (end == std::string_view::npos) return Status::InvalidArgument("unterminated ' quote");
      cur.append(s.substr(i + 1, end - i - 1));
      i = end;
    } else if (ch == '"') {
      size_t j = i + 1;
      for (; j < s.size() && s[j] != '"'; ++j) {
        if (s[j] == '\\' && j + 1 < s.size() &&
            (s[j + 1] == '"' || s[j + 1] == '\\' || s[j + 1] == '$')) {
          ++j;
        }
        cur += s[j];
      }
      if (j >= s.size()) return Status::InvalidArgument("unterminated \" quote");
      i = j;
    } else if (ch == '\\' && i + 1 < s.size()) {
      cur += s[++i];
    } else {
      cur += ch;
    }
  }
  if (in_word) out.push_back(std::move(cur));
  return out;
}

constexpr std::string_view kCommands[] = {"cp", "mv", "rm", "sync", "ls", "du", "mb", "rb", "head"};

// All lines, checked before any runs: a bad line runs nothing (exit 2).
Result<std::vector<Line>> ReadLines(std::istream& in) {
  std::vector<Line> lines;
  std::string text;
  for (int n = 1; std::getline(in, text); ++n) {
    std::string_view t = Trim(text);
    if (t.empty() || t[0] == '#') continue;
    auto words = SplitWords(t);
    if (!words.ok()) return words.error().WithContext(fmt::format("line {}", n));
    if (!words->empty() && (*words)[0] == "strata") words->erase(words->begin());
    if (words->empty()) continue;
    const std::string& cmd = (*words)[0];
    if (std::find(std::begin(kCommands), std::end(kCommands), cmd) == std::end(kCommands)) {
      return Status::InvalidArgument(fmt::format(
          "line {}: \"{}\" cannot be run in a batch (cp, mv, rm, sync, ls, du, mb, rb, head)", n,
          cmd));
    }
    lines.push_back({n, std::move(*words)});
  }
  if (in.bad()) return Status::IOError("read the batch");
  return lines;
}

// The connection flags given to run, for each line that does not give its own.
std::vector<std::string> InheritedFlags(const Common& c, const std::vector<std::string>& line) {
  auto has = [&](std::string_view flag) {
    return std::any_of(line.begin(), line.end(), [&](const std::string& w) {
      return w == flag || StartsWith(w, std::string(flag) + "=");
    });
  };
  std::vector<std::string> out;
  auto add = [&](std::string_view flag, const std::string& value) {
    if (!value.empty() && !has(flag)) {
      out.emplace_back(flag);
      out.push_back(value);
    }
  };
  add("--endpoint-url", c.endpoint_url);
  add("--profile", c.profile);
  add("--region", c.region);
  add("--ca-bundle", c.ca_bundle);
  if (c.no_verify_ssl && !has("--no-verify-ssl")) out.emplace_back("--no-verify-ssl");
  for (const std::string& kv : c.s3_options) {
    out.emplace_back("--s3-option");
    out.push_back(kv);
  }
  if (c.quiet && !has("-q") && !has("--quiet")) out.emplace_back("--quiet");
  if (!has("--no-progress")) out.emplace_back("--no-progress");
  return out;
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[65536];
  ::lseek(fd, 0, SEEK_SET);
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

struct Outcome {
  int rc = 0;
  std::string out, err;
};

// Runs one line as a child of this binary; its stdout and stderr go to
// memory files read back when it ends.
Outcome RunLine(const std::string& self, const Common& c, const Line& line) {
  std::vector<std::string> argv{self, line.args[0]};
  for (std::string& f : InheritedFlags(c, line.args)) argv.push_back(std::move(f));
  argv.insert(argv.end(), line.args.begin() + 1, line.args.end());
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  Outcome o;
  const int out_fd = ::memfd_create("strata-run-out", MFD_CLOEXEC);
  const int err_fd = ::memfd_create("strata-run-err", MFD_CLOEXEC);
  if (out_fd < 0 || err_fd < 0) {
    o.rc = kExitSomeFailed;
    o.err = "cannot create an output buffer";
    if (out_fd >= 0) ::close(out_fd);
    if (err_fd >= 0) ::close(err_fd);
    return o;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, err_fd, STDERR_FILENO);
  // The parent blocks SIGINT/SIGTERM for its sigwait thread: children start
  // with them unblocked so they handle them themselves.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = 0;
  const int e = ::posix_spawn(&pid, self.c_str(), &fa, &attr, cargv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (e != 0) {
    o.rc = kExitSomeFailed;
    o.err = fmt::format("cannot start {}: {}", self, std::strerror(e));
  } else {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    o.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    o.out = ReadAll(out_fd);
    o.err = ReadAll(err_fd);
  }
  ::close(out_fd);
  ::close(err_fd);
  return o;
}

int CmdRun(Common& c, RunArgs& a) {
  Result<std::vector<Line>> lines = Status::Internal("unset");
  if (a.file == "-") {
    lines = ReadLines(std::cin);
  } else {
    std::ifstream in(a.file);
    if (!in) return Fail(Status::NotFound("cannot read \"" + a.file + "\""), "run");
    lines = ReadLines(in);
  }
  if (!lines.ok()) return Usage("run", lines.error().message());
  char self_buf[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self_buf, sizeof(self_buf) - 1);
  if (n <= 0)
    return Fail(Status::Internal("cannot find the strata binary (/proc/self/exe)"), "run");
  const std::string self(self_buf, static_cast<size_t>(n));

  std::mutex mu;  // guards the terminal and the tallies
  std::atomic<size_t> next{0};
  int failed = 0, codes = 0, last_code = 0;
  auto worker = [&] {
    for (;;) {
      const size_t i = next.fetch_add(1);
      if (i >= lines->size()) return;
      const Line& line = (*lines)[i];
      Outcome o = RunLine(self, c, line);
      std::lock_guard l(mu);
      std::fwrite(o.out.data(), 1, o.out.size(), stdout);
      std::fflush(stdout);
      for (std::string_view e : Split(o.err, '\n')) {
        if (!e.empty()) fmt::print(stderr, "line {}: {}\n", line.number, e);
      }
      if (o.rc != 0) {
        ++failed;
        if (o.rc != last_code) ++codes;
        last_code = o.rc;
        fmt::print(stderr, "line {}: exit {}: {}\n", line.number, o.rc, fmt::join(line.args, " "));
      }
    }
  };
  const int workers = std::max(1, std::min<int>(c.concurrency, static_cast<int>(lines->size())));
  std::vector<std::thread> threads;
  for (int t = 0; t < workers; ++t) threads.emplace_back(worker);
  for (std::thread& t : threads) t.join();
  if (failed == 0) return kExitOk;
  fmt::print(stderr, "strata run: {} of {} commands failed\n", failed, lines->size());
  // Every failure of one kind, and nothing else: that kind's code.
  return codes == 1 && static_cast<size_t>(failed) == lines->size() ? last_code : kExitSomeFailed;
}

}  // namespace

void RegisterRunCommand(CLI::App& app, int* exit_code) {
  struct State {
    Common common;
    RunArgs run;
  };
  auto st = std::make_shared<State>();
  Common& c = st->common;
  auto* run =
      app.add_subcommand("run", "Run a batch of commands, one a line, in parallel (s5cmd's run)");
  run->add_option("file", st->run.file, "FILE of commands, or - for stdin")->required();
  run->add_option("--concurrency,--numworkers", c.concurrency, "Commands run at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  run->add_flag("-q,--quiet", c.quiet, "Each command prints errors only");
  AddConnectionOptions(run, c);
  run->footer(Footer(
      "  strata run batch.txt            lines such as: cp s3://b/a.bin ./a.bin\n"
      "  printf 'rm s3://b/x\\nmv s3://b/y s3://b/z\\n' | strata run -\n"
      "Each line is cp, mv, rm, sync, ls, du, mb, rb or head with its arguments (quotes as in\n"
      "the shell; # comments). The connection flags given to run apply to every line that\n"
      "does not give its own. A line's stderr is prefixed with its line number; run exits\n"
      "non-zero if any line failed, 2 (running nothing) if a line cannot be parsed."));
  run->callback(Wrap(st, exit_code, [st] { return CmdRun(st->common, st->run); }));
}

}  // namespace strata::cli::transfer
