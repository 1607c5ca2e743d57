#include <algorithm>
#include <atomic>
#include <mutex>

#include <strata/core/fault_injection.h>

namespace strata::fault {
namespace {

std::atomic<bool> g_armed{false};
std::atomic<uint64_t> g_injected{0};
std::mutex g_mu;
WriteFault g_fault;  // guarded by g_mu

}  // namespace

void InjectWriteFault(WriteFault f) {
  std::lock_guard<std::mutex> l(g_mu);
  g_fault = std::move(f);
  g_armed.store(g_fault.times != 0, std::memory_order_release);
}

void ClearFaults() {
  std::lock_guard<std::mutex> l(g_mu);
  g_fault = WriteFault{};
  g_armed.store(false, std::memory_order_release);
}

uint64_t FaultsInjected() { return g_injected.load(std::memory_order_relaxed); }

namespace internal {

int OnWrite(std::string_view what, size_t n, size_t* written_first) {
  if (!g_armed.load(std::memory_order_relaxed)) return 0;
  std::lock_guard<std::mutex> l(g_mu);
  if (g_fault.times == 0) return 0;
  if (!g_fault.path_contains.empty() &&
      what.find(g_fault.path_contains) == std::string_view::npos) {
    return 0;
  }
  if (g_fault.skip > 0) {
    --g_fault.skip;
    return 0;
  }
  if (g_fault.times > 0 && --g_fault.times == 0) g_armed.store(false, std::memory_order_relaxed);
  g_injected.fetch_add(1, std::memory_order_relaxed);
  *written_first = std::min(n, g_fault.written_first);
  return g_fault.err;
}

}  // namespace internal
}  // namespace strata::fault
