#include "testutil/testutil.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include <strata/core/redis.h>

namespace strata::testing {

TempDir::TempDir(std::string_view prefix) {
  const char* base = std::getenv("TEST_TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + std::string(prefix) +
                     "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    throw std::runtime_error("mkdtemp " + tmpl + " failed");
  }
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string TempDir::Join(std::string_view name) const {
  return path_ + "/" + std::string(name);
}

std::string ReadFileOrEmpty(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool WriteFile(const std::string& path, std::string_view data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return false;
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  return static_cast<bool>(out);
}

int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

Status RedisServer::Start() {
  dir_ = std::make_unique<TempDir>("strata-redis");
  port_ = FreePort();
  pid_ = ::fork();
  if (pid_ == 0) {
    const std::string port = std::to_string(port_);
    const int null_fd = ::open("/dev/null", O_WRONLY);
    ::dup2(null_fd, 1);
    ::execlp("redis-server", "redis-server", "--port", port.c_str(), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", dir_->path().c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  redis::Endpoint ep;
  ep.port = port_;
  ep.connect_timeout_ms = 1000;
  Status last = Status::Unavailable("redis-server did not start");
  for (int i = 0; i < 200; ++i) {
    auto c = redis::Connection::Open(ep);
    if (c.has_value()) {
      auto pong = (*c)->Command(std::vector<std::string_view>{"PING"});
      if (pong.has_value() && pong->type == redis::Reply::kStatus) return Status::Ok();
    } else {
      last = c.error();
    }
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return Status::Unavailable("redis-server exited at start (is it installed? scripts/install-deps.sh test)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return last.WithContext("redis-server did not answer PING in 10 s");
}

void RedisServer::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

RedisServer::~RedisServer() {
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
}

}  // namespace strata::testing
