// Thread records for scopes and chunk stamps.
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "thread_state.hpp"

namespace arenastat::detail {
namespace {

struct free_list {
  std::mutex mutex;
  thread_state* head = nullptr;
};

free_list& states() {
  static free_list* const f = new free_list();  // never destroyed
  return *f;
}

// Hands the record back when the thread exits.
struct state_holder {
  thread_state* state = nullptr;
  ~state_holder() {
    if (!state) return;
    tls_scopes.state = nullptr;
    state->bottom_scope_id.store(thread_state::no_scope, std::memory_order_relaxed);  // later credits are dropped
    take_pending(*state);  // credits for this thread's scopes no longer matter
    free_list& f = states();
    std::lock_guard lock(f.mutex);
    state->next_free = f.head;
    f.head = state;
  }
};
thread_local state_holder holder;

// Counts the forks this process descends from (written in a fork's child,
// while it has one thread).
std::atomic<std::uint32_t> fork_generation{0};

// A fork's child is one thread, the one that called fork: its record (if it
// has one) names that thread by the child's id, not the parent's, and is the
// only one of the new generation (the parent's other threads are not in the
// child: credits for their records would wait for them for ever).
void refresh_thread_id_in_child() noexcept {
  const std::uint32_t now = fork_generation.load(std::memory_order_relaxed) + 1;
  fork_generation.store(now, std::memory_order_relaxed);
  if (thread_state* s = tls_scopes.state) {
    s->os_tid = os_thread_id();
    s->fork_generation.store(now, std::memory_order_relaxed);
  }
}
[[maybe_unused]] const int fork_handler_registered = ::pthread_atfork(nullptr, nullptr, &refresh_thread_id_in_child);

}  // namespace

std::uint64_t os_thread_id() noexcept { return static_cast<std::uint64_t>(::syscall(SYS_gettid)); }

thread_state& acquire_thread_state() {
  thread_state* s = nullptr;
  {
    free_list& f = states();
    std::lock_guard lock(f.mutex);
    if (f.head) {
      s = f.head;
      f.head = s->next_free;
      s->next_free = nullptr;
    }
  }
  if (!s) s = new thread_state();
  s->os_tid = os_thread_id();
  s->fork_generation.store(fork_generation.load(std::memory_order_relaxed), std::memory_order_relaxed);
  s->eh_globals = this_thread_eh_globals();
  take_pending(*s);
  tls_scopes.state = s;
  holder.state = s;
  return *s;
}

void post_credit(thread_state& owner, const pending_credit& credit) noexcept {
  // Every scope it was for has ended (or the owner has exited): nothing to
  // credit, and nothing kept for an owner that may never look again. A stale
  // read errs on the side of queueing: the bottom id only grows past a
  // credit's scopes once they have all ended.
  if (owner.bottom_scope_id.load(std::memory_order_relaxed) > credit.scope_id) return;
  // An owner left in the parent of a fork (a thread this child does not have).
  if (owner.fork_generation.load(std::memory_order_relaxed) != fork_generation.load(std::memory_order_relaxed)) return;
  std::lock_guard lock(owner.pending_mutex);
  try {
    owner.pending.push_back(credit);
  } catch (...) {
    return;  // out of memory: the owner's scope keeps the bytes as net (documented)
  }
  owner.has_pending.store(true, std::memory_order_release);
}

std::vector<pending_credit> take_pending(thread_state& self) noexcept {
  std::vector<pending_credit> out;
  if (!self.has_pending.load(std::memory_order_acquire)) return out;
  std::lock_guard lock(self.pending_mutex);
  out.swap(self.pending);
  self.has_pending.store(false, std::memory_order_relaxed);
  return out;
}

}  // namespace arenastat::detail
