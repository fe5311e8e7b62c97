// Internal: the eternal per-thread record behind scopes and chunk stamps.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "arenastat/context.hpp"
#include "table_internal.hpp"

namespace arenastat::detail {

// A credit for a chunk stamped on this thread but released on another one.
struct pending_credit {
  std::uint64_t first_scope_id;
  std::uint64_t scope_id;
  tag_id tag;
  std::size_t bytes;
};

// Records are recycled across threads and never freed, so a stamp's owner
// pointer stays valid forever. Scope ids keep increasing across owners.
struct thread_state {
  std::uint64_t next_scope_id = 1;  // owner only
  std::uint64_t os_tid = 0;         // owner only
  std::atomic<bool> has_pending{false};
  std::mutex pending_mutex;
  std::vector<pending_credit> pending;  // guarded by pending_mutex
  thread_state* next_free = nullptr;
  fold_cache fold_memo;  // owner only: the record this thread folded last (table.cpp)
};

// This thread's record, acquired on first use (not before a scope is entered).
thread_state& current_thread_state();

// Queues a credit for the owner's scopes (called from another thread).
void post_credit(thread_state& owner, const pending_credit& credit) noexcept;

// Takes the queued credits of this thread (owner only).
std::vector<pending_credit> take_pending(thread_state& self) noexcept;

std::uint64_t os_thread_id() noexcept;

}  // namespace arenastat::detail
