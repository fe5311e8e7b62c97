// The charging core: where tracked bytes go on the calling thread.
//
// Every tracked byte is charged to (1) an optional account, a long-lived
// component keyed by name, and (2) every scope active on the calling thread,
// once (the counting rule below). Memory resources (alloc/) call these
// functions; applications use scope and account directly.
#pragma once
#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <string_view>

#include "arenastat/tags.hpp"

namespace arenastat {

class account;
class scope;

// Thrown by the allocation that would take a scope's net bytes above its limit.
class limit_exceeded : public std::bad_alloc {
 public:
  limit_exceeded(std::string_view scope_name, std::uint64_t limit, std::int64_t net,
                 std::uint64_t requested);
  const char* what() const noexcept override { return message_.c_str(); }
  const std::string& scope_name() const noexcept { return scope_; }
  std::uint64_t limit() const noexcept { return limit_; }
  std::int64_t net_bytes() const noexcept { return net_; }       // before the request
  std::uint64_t requested() const noexcept { return requested_; }

 private:
  std::string scope_;
  std::uint64_t limit_;
  std::int64_t net_;
  std::uint64_t requested_;
  std::string message_;
};

namespace detail {

struct thread_state;  // eternal per-thread record (recycled, never freed)

inline constexpr std::size_t max_scope_depth = 64;

// Plain, constant-initialised thread-local view of the scope stack so the
// inline fast paths cost one TLS load when no scope is charged.
// frames[0, depth) are the active scopes, outermost first; only
// frames[base, depth) are charged: the ones below base are hidden while a
// tracked resource calls its upstream (see upstream_call). visible == depth - base.
struct thread_scopes {
  std::uint32_t visible = 0;
  std::uint32_t depth = 0;
  std::uint32_t base = 0;
  thread_state* state = nullptr;
  scope* frames[max_scope_depth] = {};
};
inline thread_local constinit thread_scopes tls_scopes{};

}  // namespace detail

// ---- The charging interface of memory resources ---------------------------
//
// The counting rule: every byte a program takes through a stack of tracked
// resources is charged to each scope once, by the outermost tracked resource
// (the one the program called), in the units that resource takes from its
// upstream (an arena: whole chunks; tracking_resource: the bytes requested).
// While a tracked resource calls its upstream it holds an upstream_call, which
// hides the thread's scopes, so tracked resources below charge only their own
// accounts. Each account is charged with what passes through its resources.

// True when a tracked resource on this thread must charge scopes now.
inline bool scopes_charged() noexcept { return detail::tls_scopes.visible != 0; }

// Throws limit_exceeded, charging nothing, when `bytes` more would take a
// charged scope above its limit (innermost first). Resources call it before
// asking their upstream, so a request that cannot fit is refused without
// being made.
void check_scope_limits(std::size_t bytes);

// Charges / credits `bytes` of `tag` to every charged scope on this thread.
// charge_scopes checks the limits first (throws limit_exceeded, nothing charged).
void charge_scopes(tag_id tag, std::size_t bytes);
void credit_scopes(tag_id tag, std::size_t bytes) noexcept;

// Hides this thread's scopes from tracked resources while a tracked resource
// calls its upstream (RAII; nests; scopes entered meanwhile are charged).
class upstream_call {
 public:
  upstream_call() noexcept : saved_base_(detail::tls_scopes.base) {
    detail::thread_scopes& t = detail::tls_scopes;
    t.base = t.depth;
    t.visible = 0;
  }
  ~upstream_call() {
    detail::thread_scopes& t = detail::tls_scopes;
    t.base = saved_base_ < t.depth ? saved_base_ : t.depth;
    t.visible = t.depth - t.base;
  }
  upstream_call(const upstream_call&) = delete;
  upstream_call& operator=(const upstream_call&) = delete;

 private:
  std::uint32_t saved_base_;
};

// What a chunk remembers about whom it was charged to, so that giving it back
// credits the same contexts later, elsewhere, or after its scope ended.
struct charge_stamp {
  detail::thread_state* owner = nullptr;  // thread whose scopes were charged
  std::uint64_t first_scope_id = 0;       // outermost scope charged
  std::uint64_t scope_id = 0;             // innermost scope charged; 0 = none
  account* acct = nullptr;                // account charged, if any
  tag_id tag = 0;
};

// Charges `bytes` of `tag` to the charged scopes and to `acct` (may be null).
// Throws limit_exceeded, with nothing charged, if a scope's limit would be passed.
charge_stamp charge_chunk(tag_id tag, std::size_t bytes, account* acct);

// Credits a chunk back to the contexts in its stamp. Scopes of the stamping
// thread that are still active are credited (from another thread the credit is
// queued and applied by the owner at its next tracked event); ended scopes
// are not; the account always is.
void credit_chunk(const charge_stamp& stamp, std::size_t bytes) noexcept;

}  // namespace arenastat
