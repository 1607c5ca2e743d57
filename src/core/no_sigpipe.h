// Internal to core: run a call that may write to a socket through OpenSSL
// (which writes with write(2) and cannot pass MSG_NOSIGNAL) without letting a
// peer's hang-up kill the process with SIGPIPE, whatever the host program's
// signal disposition (unit tests, the Python module, embedders).
#pragma once

#include <pthread.h>
#include <signal.h>

#include <ctime>

namespace strata::core_internal {

// Runs fn with SIGPIPE blocked on this thread and discards a SIGPIPE it raised.
template <class Fn>
auto WithoutSigpipe(Fn&& fn) {
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  auto r = fn();
  sigset_t pending;
  sigpending(&pending);
  if (sigismember(&pending, SIGPIPE) && !sigismember(&old, SIGPIPE)) {
    timespec zero{0, 0};
    sigtimedwait(&block, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return r;
}

}  // namespace strata::core_internal
