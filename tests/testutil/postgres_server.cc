#include "testutil/postgres_server.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

namespace strata::testing {

std::string PostgresServer::BinDir() {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/usr/lib/postgresql", ec)) {
    std::string bin = e.path().string() + "/bin";
    if (::access((bin + "/postgres").c_str(), X_OK) == 0 &&
        ::access((bin + "/initdb").c_str(), X_OK) == 0)
      found.push_back(bin);
  }
  if (found.empty()) return "";
  // Major versions are numbers: the longest, then the greatest, is newest.
  std::sort(found.begin(), found.end(), [](const std::string& a, const std::string& b) {
    return a.size() != b.size() ? a.size() < b.size() : a < b;
  });
  return found.back();
}

int PostgresServer::Run(const std::vector<std::string>& argv, bool wait) {
  pid_t pid = ::fork();
  if (pid == 0) {
    const int null_fd =
        ::open(dir_->Join("server.log").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    ::dup2(null_fd, 1);
    ::dup2(null_fd, 2);
    if (drop_ && (::setgroups(0, nullptr) != 0 || ::setgid(gid_) != 0 || ::setuid(uid_) != 0))
      ::_exit(126);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::string path = bin_ + "/" + argv[0];
    ::execv(path.c_str(), args.data());
    ::_exit(127);
  }
  if (!wait) return pid;
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

Status PostgresServer::Start() {
  bin_ = BinDir();
  if (bin_.empty()) return Status::NotFound("no /usr/lib/postgresql/*/bin (Debian's postgresql)");
  dir_ = std::make_unique<TempDir>("strata-pg");
  if (::geteuid() == 0) {
    const passwd* pw = ::getpwnam("postgres");
    if (!pw) return Status::NotFound("running as root and there is no postgres user");
    uid_ = pw->pw_uid;
    gid_ = pw->pw_gid;
    drop_ = true;
    if (::chown(dir_->path().c_str(), uid_, gid_) != 0)
      return Status::IOError("chown of the server's directory failed");
  }
  const std::string data = dir_->Join("data");
  if (Run({"initdb", "-D", data, "-U", "strata", "--auth=trust", "-E", "UTF8", "--no-sync",
           "--no-instructions"},
          true) != 0) {
    return Status::Unavailable("initdb failed: " + ReadFileOrEmpty(dir_->Join("server.log")));
  }
  port_ = FreePort();
  // fsync off: a test server lives in a temporary directory; durability
  // against power loss is PostgreSQL's business, not what these tests check.
  pid_ = Run({"postgres", "-D", data, "-p", std::to_string(port_), "-k", dir_->path(), "-c",
              "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=300", "-c",
              "shared_buffers=32MB"},
             false);
  for (int i = 0; i < 300; ++i) {
    if (Run({"pg_isready", "-q", "-h", "127.0.0.1", "-p", std::to_string(port_)}, true) == 0)
      return Status::Ok();
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return Status::Unavailable("postgres exited at start: " +
                                 ReadFileOrEmpty(dir_->Join("server.log")));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Status::Unavailable("postgres did not accept connections in 30 s");
}

Status PostgresServer::CreateDatabase(const std::string& name) {
  if (Run({"createdb", "-h", "127.0.0.1", "-p", std::to_string(port_), "-U", "strata", name},
          true) != 0)
    return Status::IOError("createdb " + name + " failed");
  return Status::Ok();
}

Status PostgresServer::Sql(const std::string& db, const std::string& sql) {
  if (Run({"psql", "-X", "-q", "-h", "127.0.0.1", "-p", std::to_string(port_), "-U", "strata", "-d",
           db, "-v", "ON_ERROR_STOP=1", "-c", sql},
          true) != 0)
    return Status::IOError("psql failed: " + sql);
  return Status::Ok();
}

std::string PostgresServer::Url(const std::string& db) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!databases_.count(db)) {
      if (!CreateDatabase(db).ok()) return "";
      databases_.insert(db);
    }
  }
  return "postgres://strata@127.0.0.1:" + std::to_string(port_) + "/" + db;
}

PostgresServer::~PostgresServer() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGINT);  // fast shutdown: ends client sessions, no waiting for them
  for (int i = 0; i < 200; ++i) {
    if (::waitpid(pid_, nullptr, WNOHANG) == pid_) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
}

PostgresServer* SharedPostgres(Status* why) {
  static Status status;
  static std::unique_ptr<PostgresServer> server = [] {
    auto s = std::make_unique<PostgresServer>();
    status = s->Start();
    return s;
  }();
  if (why) *why = status;
  return status.ok() ? server.get() : nullptr;
}

}  // namespace strata::testing
