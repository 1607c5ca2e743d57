// A real `strata server` for the S3 client tests: started (fork/exec) on a
// free loopback port with a fresh data directory and fixed root credentials
// (STRATA_ROOT_USER/STRATA_ROOT_PASSWORD), stopped (SIGTERM, then SIGKILL) and
// its directory removed at destruction. The child dies with the test process
// (PR_SET_PDEATHSIG), so a crashed test leaves no server behind.
//
// The binary: $STRATA_BINARY, else `strata` next to the test binary's
// directory (build/strata for build/tests/strata_objstore_test).
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "testutil/testutil.h"

namespace strata::testing {

class StrataServer {
 public:
  static constexpr const char* kUser = "strataroot";
  static constexpr const char* kPassword = "strata-root-secret-0123456789";

  static std::string FindBinary() {
    if (const char* env = std::getenv("STRATA_BINARY"); env != nullptr && *env) return env;
    char buf[4096];
    ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n <= 0) return "";
    std::string self(buf, static_cast<size_t>(n));
    std::string dir = self.substr(0, self.rfind('/'));
    for (const std::string& c : {dir + "/../strata", dir + "/strata"}) {
      if (::access(c.c_str(), X_OK) == 0) return c;
    }
    return "";
  }

  static int FreePort() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    socklen_t len = sizeof(a);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    ::close(fd);
    return ntohs(a.sin_port);
  }

  // Starts the server; error() says why when it could not.
  StrataServer() : dir_("strata-s3client") {
    binary_ = FindBinary();
    if (binary_.empty()) {
      error_ = "the strata binary was not found next to the test binary; build the `strata` "
               "target or set STRATA_BINARY";
      return;
    }
    for (int tries = 0; tries < 3 && pid_ <= 0; ++tries) {
      port_ = FreePort();
      Spawn();
      if (WaitReady()) return;
      Stop();
    }
    if (error_.empty()) error_ = "strata server did not start; log:\n" + Log();
  }
  ~StrataServer() { Stop(); }

  const std::string& error() const { return error_; }
  bool ok() const { return error_.empty() && pid_ > 0; }
  int port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string Log() const { return ReadFileOrEmpty(dir_.Join("server.log")); }

 private:
  void Spawn() {
    const std::string data = dir_.Join("data");
    const std::string log = dir_.Join("server.log");
    const std::string addr = "127.0.0.1:" + std::to_string(port_);
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(1);
      int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      ::setenv("STRATA_ROOT_USER", kUser, 1);
      ::setenv("STRATA_ROOT_PASSWORD", kPassword, 1);
      std::vector<std::string> args = {binary_,       "server",     "--data",
                                       data,          "--s3-address", addr,
                                       "--no-admin",  "--no-fsync", "--threads",
                                       "16",          "--log-level", "warn"};
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(binary_.c_str(), argv.data());
      ::_exit(127);
    }
  }

  bool WaitReady() {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_port = htons(static_cast<uint16_t>(port_));
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      bool up = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
      ::close(fd);
      if (up) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  void Stop() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    for (int i = 0; i < 200; ++i) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }

  TempDir dir_;
  std::string binary_;
  std::string error_;
  int port_ = 0;
  pid_t pid_ = -1;
};

// One server for the whole test binary, started on first use.
inline StrataServer& SharedServer() {
  static StrataServer* server = new StrataServer();  // stopped by the atexit below
  static bool registered = [] {
    std::atexit([] { delete server; });
    return true;
  }();
  (void)registered;
  return *server;
}

}  // namespace strata::testing
