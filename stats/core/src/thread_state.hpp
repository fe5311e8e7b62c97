// Internal: the eternal per-thread record behind scopes and chunk stamps.
#pragma once
#include <atomic>
#include <cassert>
#include <cstdint>
#include <exception>
#include <mutex>
#include <vector>
#if defined(__GLIBCXX__)
#include <cxxabi.h>
#endif

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
  std::uint64_t os_tid = 0;         // owner only (set again in a fork's child)
  // Written by the owner, read by threads posting credits: the id of the
  // bottom scope of the owner's stack, no_scope when the stack is empty or
  // the record has no owner. Ids grow, so once it is above a credit's last
  // id every scope the credit was for has ended, now and forever: the credit
  // is dropped instead of queued (post_credit).
  static constexpr std::uint64_t no_scope = UINT64_MAX;
  std::atomic<std::uint64_t> bottom_scope_id{no_scope};
  // The process's fork generation when the owner took the record (context.cpp:
  // a fork's child starts a new one, in which the parent's other threads, and
  // so their records' owners, do not exist): credits for an older one are dropped.
  std::atomic<std::uint32_t> fork_generation{0};
  std::atomic<bool> has_pending{false};
  std::mutex pending_mutex;
  std::vector<pending_credit> pending;  // guarded by pending_mutex
  thread_state* next_free = nullptr;
  fold_cache fold_memo;  // owner only: the record this thread folded last (table.cpp)
  // Owner only: the C++ runtime's exception globals of the owning thread
  // (__cxa_get_globals(), set when the record is taken), or null where the
  // runtime is not known to follow the Itanium C++ ABI.
  const void* eh_globals = nullptr;
};

// The calling thread's exception globals as the Itanium C++ ABI lays them
// out (section 2.2.2 of its exception-handling specification).
struct itanium_eh_globals {
  void* caught_exceptions;
  unsigned int uncaught_exceptions;
};

inline const void* this_thread_eh_globals() noexcept {
#if defined(__GLIBCXX__)
  return abi::__cxa_get_globals();
#else
  return nullptr;
#endif
}

// std::uncaught_exceptions() of the thread that owns `s` (null: no record),
// called by that thread: one load through the pointer taken with the record,
// where std::uncaught_exceptions() is a call into the shared C++ runtime and
// a thread-local lookup there (7.5 ns against well under 1 ns on the AMD EPYC
// CI machine; a scope reads it twice). Debug builds (the ASan+UBSan step of
// scripts/test.sh) check the read against std::uncaught_exceptions().
inline int uncaught_exceptions(const thread_state* s) noexcept {
  if (s && s->eh_globals) [[likely]] {
    const int n = static_cast<int>(static_cast<const itanium_eh_globals*>(s->eh_globals)->uncaught_exceptions);
    assert(n == std::uncaught_exceptions());
    return n;
  }
  return std::uncaught_exceptions();
}

// Acquires a record for this thread (a recycled one, else a new one).
thread_state& acquire_thread_state();

// This thread's record, acquired on first use (not before a scope is entered).
inline thread_state& current_thread_state() {
  if (thread_state* s = tls_scopes.state) [[likely]] return *s;
  return acquire_thread_state();
}

// Queues a credit for the owner's scopes (called from another thread).
void post_credit(thread_state& owner, const pending_credit& credit) noexcept;

// Takes the queued credits of this thread (owner only).
std::vector<pending_credit> take_pending(thread_state& self) noexcept;

std::uint64_t os_thread_id() noexcept;

}  // namespace arenastat::detail
