// Leak checking: ARENASTAT_LEAKS, per-account resource counts and the check
// when the last resource goes, the ledger of arena chunks held, the at-exit list.
//
// Everything here is eternal (allocated once, never freed) and writes with
// write(2), so it works during static destruction and with threads running.
#include "arenastat/leaks.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "arenastat/scope.hpp"
#include "env.hpp"
#include "leaks_internal.hpp"
#include "quoted.hpp"
#include "text_escape.hpp"
#include "sys.hpp"
#include "table_internal.hpp"

namespace arenastat {

struct leak_access {
  static bool reported(const account& a) noexcept { return a.leak_reported_.load(std::memory_order_relaxed); }
  static void set_reported(account& a, bool v) noexcept { a.leak_reported_.store(v, std::memory_order_relaxed); }
};

namespace {

constexpr int mode_unread = -1;
std::atomic<int> mode_value{mode_unread};
std::atomic<pid_t> mode_pid{0};          // the process that read ARENASTAT_LEAKS
std::atomic<bool> exit_checked{false};   // the at-exit check ran: every later check is silent

leak_mode read_mode() noexcept {
  const char* v = detail::env_value("ARENASTAT_LEAKS");
  if (!v || !*v || std::strcmp(v, "off") == 0) return leak_mode::off;
  if (std::strcmp(v, "warn") == 0) return leak_mode::warn;
  if (std::strcmp(v, "abort") == 0) return leak_mode::abort;
  try {
    detail::warn("arenastat: ignoring ARENASTAT_LEAKS=" + detail::quoted(v) +
                 " (expected off, warn or abort); leak reports stay off\n");
  } catch (...) {
  }
  return leak_mode::off;
}

// Reports are made by the process that read the variable: a fork()ed copy
// exiting without exec would repeat its parent's leaks.
bool same_process() noexcept { return mode_pid.load(std::memory_order_relaxed) == ::getpid(); }

std::string plural(std::int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 || n == -1 ? one : many);
}

// The ledger of arena chunks held: eternal.
struct chunk_key {
  const void* owner;
  std::uint64_t scope_id;
  tag_id tag;
  auto operator<=>(const chunk_key&) const = default;
};
struct chunk_held {
  std::string scope;  // name of the stamped scope ("" = none)
  std::int64_t bytes = 0;
  std::int64_t chunks = 0;
};
struct ledger {
  std::mutex mu;
  std::map<chunk_key, chunk_held> held;
};
ledger& the_ledger() {
  static ledger* const l = new ledger;
  return *l;
}

}  // namespace

leak_mode leak_checking() noexcept {
  int v = mode_value.load(std::memory_order_acquire);
  if (v != mode_unread) [[likely]] return static_cast<leak_mode>(v);
  static std::once_flag once;
  try {
    std::call_once(once, [] {
      mode_pid.store(::getpid(), std::memory_order_relaxed);
      mode_value.store(static_cast<int>(read_mode()), std::memory_order_release);
    });
  } catch (...) {
    return leak_mode::off;
  }
  return static_cast<leak_mode>(mode_value.load(std::memory_order_acquire));
}

// Names and tags are user data: escaped as in every text output.
std::string describe_leak(const leak& l) {
  if (l.kind == leak::source::arena_chunks)
    return "arena chunks of tag '" + detail::escape_text(l.tag) + "' taken " +
           (l.name.empty() ? std::string("outside any scope") : "in scope '" + detail::escape_text(l.name) + "'") +
           " hold " + plural(l.live_bytes, "byte", "bytes") + " in " + plural(l.blocks, "chunk", "chunks");
  std::string s = "account '" + detail::escape_text(l.name) + "' holds " + plural(l.live_bytes, "byte", "bytes") + " in " +
                  plural(l.blocks, "block", "blocks") + " (peak " + plural(static_cast<std::int64_t>(l.peak_bytes), "byte", "bytes");
  const char* sep = "; ";
  for (const tag_bytes& t : l.live_by_tag) {
    s += sep + detail::escape_text(t.tag) + " " + std::to_string(t.bytes);
    sep = ", ";
  }
  return s + ")";
}

namespace {

leak account_leak(const account& a, const account_totals& t) {
  leak l;
  l.kind = leak::source::account;
  l.name = std::string(a.name());
  l.live_bytes = t.live_bytes;
  l.blocks = static_cast<std::int64_t>(t.allocations - t.frees);
  l.peak_bytes = t.peak_bytes;
  l.live_by_tag = t.live_by_tag;
  return l;
}

}  // namespace

std::vector<leak> outstanding_leaks() {
  std::vector<leak> out;
  std::vector<account*> accounts = detail::all_accounts();
  std::sort(accounts.begin(), accounts.end(),
            [](const account* x, const account* y) { return x->name() < y->name(); });
  for (account* a : accounts) {
    if (leak_access::reported(*a) && a->resource_count() == 0) continue;
    const account_totals t = a->totals();
    if (t.live_bytes > 0) out.push_back(account_leak(*a, t));
  }
  std::map<std::pair<std::string, std::string>, leak> chunks;  // (tag, scope)
  {
    ledger& l = the_ledger();
    std::lock_guard lock(l.mu);
    for (const auto& [key, held] : l.held) {
      if (held.bytes <= 0) continue;
      leak& c = chunks[{std::string(tag_name(key.tag)), held.scope}];
      c.kind = leak::source::arena_chunks;
      c.tag = std::string(tag_name(key.tag));
      c.name = held.scope;
      c.live_bytes += held.bytes;
      c.blocks += held.chunks;
    }
  }
  for (auto& [key, c] : chunks) out.push_back(std::move(c));
  return out;
}

void account::attach_resource() noexcept {
  resources_.fetch_add((std::uint64_t{1} << 32) + 1, std::memory_order_acq_rel);
  leak_access::set_reported(*this, false);
}

void account::detach_resource() noexcept {
  const std::uint64_t before = resources_.fetch_sub(1, std::memory_order_acq_rel);
  if ((before & 0xffffffffu) != 1) return;
  const leak_mode mode = leak_checking();
  if (mode == leak_mode::off || exit_checked.load(std::memory_order_acquire) || !same_process()) return;
  try {
    const account_totals t = totals();
    // Another resource attached since the count reached 0 (it may have
    // allocated, even freed and gone, meanwhile): the totals are not this
    // resource's leak. The last of those resources to go checks again.
    if (resources_.load(std::memory_order_acquire) != before - 1) return;
    if (t.live_bytes <= 0) return;
    leak_access::set_reported(*this, true);
    detail::warn("arenastat: leak: " + describe_leak(account_leak(*this, t)) +
                 " after its last resource was destroyed\n");
  } catch (...) {
    detail::warn("arenastat: leak: the leak report failed\n");
  }
  if (mode == leak_mode::abort) detail::abort_for_leaks(1);
}

namespace detail {

void ledger_chunk_taken(const charge_stamp& stamp, std::size_t bytes) noexcept {
  if (leak_checking() == leak_mode::off) return;
  try {
    std::string name;
    for (std::uint32_t i = tls_scopes.depth; stamp.scope_id != 0 && i-- > 0;)  // the innermost scope charged
      if (tls_scopes.frames[i] && tls_scopes.frames[i]->id() == stamp.scope_id) {
        name = std::string(tls_scopes.frames[i]->name());
        break;
      }
    ledger& l = the_ledger();
    std::lock_guard lock(l.mu);
    chunk_held& h = l.held[{stamp.owner, stamp.scope_id, stamp.tag}];
    if (h.chunks == 0) h.scope = std::move(name);
    h.bytes += static_cast<std::int64_t>(bytes);
    ++h.chunks;
  } catch (...) {
    // Out of memory: this chunk goes unrecorded (and its release is then ignored).
  }
}

void ledger_chunk_given_back(const charge_stamp& stamp, std::size_t bytes) noexcept {
  if (leak_checking() == leak_mode::off) return;
  ledger& l = the_ledger();
  std::lock_guard lock(l.mu);
  const auto it = l.held.find({stamp.owner, stamp.scope_id, stamp.tag});
  if (it == l.held.end()) return;
  it->second.bytes -= static_cast<std::int64_t>(bytes);
  if (--it->second.chunks <= 0) l.held.erase(it);
}

std::vector<leak> leaks_at_exit() noexcept {
  if (leak_checking() == leak_mode::off || !same_process()) return {};
  if (exit_checked.exchange(true, std::memory_order_acq_rel)) return {};
  try {
    return outstanding_leaks();
  } catch (...) {
    warn("arenastat: leak: the leak report failed\n");
    return {};
  }
}

void abort_for_leaks(std::size_t count) noexcept {
  try {
    warn("arenastat: ARENASTAT_LEAKS=abort: aborting after " + plural(static_cast<std::int64_t>(count), "leak", "leaks") +
         "\n");
  } catch (...) {
  }
  std::fflush(nullptr);
  std::abort();
}

}  // namespace detail
}  // namespace arenastat
