// The charging core: where tracked bytes go on the calling thread.
//
// Every tracked byte is charged to (1) an optional account, a long-lived
// component keyed by name, and (2) every scope active on the calling thread.
// Memory resources (alloc/) call these functions; applications use scope and
// account directly.
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
// inline fast paths cost one TLS load when no scope is active.
struct thread_scopes {
  std::uint32_t depth = 0;
  thread_state* state = nullptr;
  scope* frames[max_scope_depth] = {};
};
inline thread_local constinit thread_scopes tls_scopes{};

// Out of line: charge/credit every active scope on this thread.
// charge_scopes throws limit_exceeded (and then charges nothing).
void charge_scopes(tag_id tag, std::size_t bytes);
void credit_scopes(tag_id tag, std::size_t bytes) noexcept;

}  // namespace detail

// What a chunk remembers about whom it was charged to, so that giving it back
// credits the same contexts later, elsewhere, or after its scope ended.
struct charge_stamp {
  detail::thread_state* owner = nullptr;  // thread whose scopes were charged
  std::uint64_t scope_id = 0;             // innermost active scope then; 0 = none
  account* acct = nullptr;                // account charged, if any
  tag_id tag = 0;
};

// Charges `bytes` of `tag` to the active scopes and to `acct` (may be null).
// Throws limit_exceeded, with nothing charged, if a scope's limit would be passed.
charge_stamp charge_chunk(tag_id tag, std::size_t bytes, account* acct);

// Credits a chunk back to the contexts in its stamp. Scopes of the stamping
// thread that are still active are credited (from another thread the credit is
// queued and applied by the owner at its next tracked event); ended scopes
// are not; the account always is.
void credit_chunk(const charge_stamp& stamp, std::size_t bytes) noexcept;

}  // namespace arenastat
