#include "cli/features_py.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

extern char** environ;

namespace strata::cli {

namespace {

namespace fs = std::filesystem;

bool HasPythonFiles(const fs::path& root) {
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(
           root, fs::directory_options::skip_permission_denied, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const std::string name = it->path().filename().string();
    std::error_code type_ec;
    if (it->is_directory(type_ec)) {
      if (name.starts_with(".") || name == "__pycache__" || name == "node_modules")
        it.disable_recursion_pending();
      continue;
    }
    if (it->path().extension() == ".py" && !name.starts_with(".")) return true;
  }
  return false;
}

// Where the strata package is: $STRATA_PYTHONPATH, else <dir of this binary>/python.
std::string PackagePath() {
  if (const char* p = std::getenv("STRATA_PYTHONPATH"); p && *p) return p;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path dir = exe.parent_path() / "python";
    if (fs::exists(dir / "strata" / "features" / "_collect.py", ec)) return dir.string();
  }
  return "";
}

std::string ReadAll(int fd) {
  std::string out;
  ::lseek(fd, 0, SEEK_SET);
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// Runs `python -m strata.features._collect dir`; its stdout comes back, its stderr is ours.
Result<std::string> RunCollector(const std::string& python, const std::string& dir) {
  std::vector<std::string> env;
  const std::string pkg = PackagePath();
  for (char** e = environ; *e; ++e) {
    if (!pkg.empty() && std::strncmp(*e, "PYTHONPATH=", 11) == 0) continue;
    env.emplace_back(*e);
  }
  if (!pkg.empty()) {
    const char* old = std::getenv("PYTHONPATH");
    env.push_back("PYTHONPATH=" + pkg + (old && *old ? std::string(":") + old : ""));
  }
  env.push_back("PYTHONDONTWRITEBYTECODE=1");
  std::vector<char*> cenv;
  for (std::string& s : env) cenv.push_back(s.data());
  cenv.push_back(nullptr);
  std::vector<std::string> argv{python, "-m", "strata.features._collect", dir};
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const int out_fd = ::memfd_create("strata-features-py", MFD_CLOEXEC);
  if (out_fd < 0)
    return Status::IOError(fmt::format("cannot create a buffer: {}", std::strerror(errno)));
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
  pid_t pid = 0;
  const int e = ::posix_spawn(&pid, python.c_str(), &fa, nullptr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  if (e != 0) {
    ::close(out_fd);
    return Status::NotFound(
        fmt::format("the repository has .py definitions but {} cannot be run ({}); "
                    "install python3 or set STRATA_PYTHON",
                    python, std::strerror(e)));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string out = ReadAll(out_fd);
  ::close(out_fd);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Status::InvalidArgument(fmt::format(
        "reading the repository's .py definitions failed ({} exited with {}; see above){}", python,
        WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
        pkg.empty() ? ": is the strata package importable? set STRATA_PYTHONPATH" : ""));
  }
  return out;
}

}  // namespace

Result<std::vector<features::DefinitionDocument>> CollectPythonDefinitions(
    const std::string& repo_dir) {
  std::error_code ec;
  const fs::path root = fs::absolute(repo_dir, ec);
  if (ec || !fs::is_directory(root, ec) || !HasPythonFiles(root))
    return std::vector<features::DefinitionDocument>{};
  const char* py = std::getenv("STRATA_PYTHON");
  const std::string python = py && *py ? py : "/usr/bin/python3";
  STRATA_ASSIGN_OR_RETURN(std::string out, RunCollector(python, root.string()));
  const nlohmann::json j = nlohmann::json::parse(out, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::Internal(
        fmt::format("{} gave no definitions document (output: {:.200})", python, out));
  }
  std::string errors;
  for (const auto& e : j.value("errors", nlohmann::json::array())) {
    errors += (errors.empty() ? "" : "\n") + e.get<std::string>();
  }
  if (!errors.empty()) return Status::InvalidArgument(errors);
  std::vector<features::DefinitionDocument> docs;
  for (const auto& d : j.value("documents", nlohmann::json::array())) {
    docs.push_back({d.at("file").get<std::string>(), d.at("text").get<std::string>()});
  }
  return docs;
}

}  // namespace strata::cli
