// memory_manager: account sums at Start/Stop plus a scope for the exact peak.
#include "arenastat/bench/memory_manager.hpp"

#include <stdexcept>

#include "arenastat/table.hpp"

namespace arenastat::bench {

account_sums sum_accounts() {
  account_sums sums;
  for (const entry& e : snapshot()) {
    if (e.kind != entry_kind::account) continue;
    sums.allocations += e.allocations;
    sums.frees += e.frees;
    sums.allocated_bytes += e.allocated_bytes;
  }
  return sums;
}

memory_manager::memory_manager(std::string scope_name) : scope_name_(std::move(scope_name)) {
  if (scope_name_.empty()) throw std::invalid_argument("memory_manager: scope name must not be empty");
}

memory_manager::~memory_manager() {
  // A window left open can only be closed on its own thread.
  if (scope_ && owner_ != std::this_thread::get_id()) (void)scope_.release();
}

void memory_manager::Start() {
  if (scope_) throw std::logic_error("memory_manager::Start: a window is already open");
  at_start_ = sum_accounts();
  owner_ = std::this_thread::get_id();
  scope_ = std::make_unique<arenastat::scope>(scope_name_);
  window_open_.store(true, std::memory_order_release);
}

void memory_manager::Stop(Result& result) {
  if (!scope_) throw std::logic_error("memory_manager::Stop: no matching Start");
  if (owner_ != std::this_thread::get_id())
    throw std::logic_error("memory_manager::Stop: called on another thread than Start");
  memory_figures f;
  f.peak_bytes = static_cast<std::int64_t>(scope_->peak_bytes());
  f.net_bytes = scope_->net_bytes();
  scope_.reset();
  window_open_.store(false, std::memory_order_release);
  const account_sums now = sum_accounts();
  f.allocations = static_cast<std::int64_t>(now.allocations - at_start_.allocations);
  f.frees = static_cast<std::int64_t>(now.frees - at_start_.frees);
  f.allocated_bytes = static_cast<std::int64_t>(now.allocated_bytes - at_start_.allocated_bytes);
  last_ = f;
  result.num_allocs = f.allocations;
  result.max_bytes_used = f.peak_bytes;
  result.total_allocated_bytes = f.allocated_bytes;
  result.net_heap_growth = f.net_bytes;
}

void memory_manager::Stop(Result* result) {
  if (result == nullptr) throw std::invalid_argument("memory_manager::Stop: null result");
  Stop(*result);
}

}  // namespace arenastat::bench
