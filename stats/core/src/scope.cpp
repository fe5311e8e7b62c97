// Scopes: the per-thread stack of named extents, and the charging of tracked
// bytes to them (eager: every active scope is charged; depth is small).
#include "arenastat/scope.hpp"

#include <algorithm>
#include <exception>
#include <stdexcept>

#include "leaks_internal.hpp"
#include "table_internal.hpp"
#include "thread_state.hpp"

namespace arenastat {

limit_exceeded::limit_exceeded(std::string_view scope_name, std::uint64_t limit, std::int64_t net,
                               std::uint64_t requested)
    : scope_(scope_name), limit_(limit), net_(net), requested_(requested) {
  message_ = "arenastat: scope '" + scope_ + "' exceeded its limit of " + std::to_string(limit) +
             " bytes: " + std::to_string(net) + " bytes in use + " + std::to_string(requested) +
             " requested";
}

// Everything that touches a scope's private state lives here.
struct scope_access {
  static void charge(scope& s, tag_id tag, std::int64_t n) noexcept {
    s.net_ += n;
    s.live_by_tag_[tag] += n;
    if (tag >= s.tags_high_) s.tags_high_ = tag + 1u;
    if (s.net_ > s.peak_) {
      s.peak_ = s.net_;
      std::copy_n(s.live_by_tag_, s.tags_high_, s.at_peak_);
      for (std::uint32_t i = 0; i < s.counter_count_; ++i) {
        s.counters_[i].at_peak = s.counters_[i].value;
        s.counters_[i].set_at_peak = true;
      }
    }
  }
  static void credit(scope& s, tag_id tag, std::int64_t n) noexcept {
    s.net_ -= n;
    s.live_by_tag_[tag] -= n;
  }
  static void check_limit(scope& s, std::uint64_t bytes) {
    if (s.limit_ != 0 && s.net_ + static_cast<std::int64_t>(bytes) > static_cast<std::int64_t>(s.limit_)) {
      s.limit_hit_ = true;
      throw limit_exceeded(s.name_, s.limit_, s.net_, bytes);
    }
  }
  static std::uint64_t id(const scope& s) noexcept { return s.id_; }
};

namespace detail {
namespace {

// Credits a stamped chunk: only the scopes it was charged to (ids in
// [first_id, last_id]: ids grow along the stack) that are still active.
void credit_stamped(std::uint64_t first_id, std::uint64_t last_id, tag_id tag, std::size_t bytes) noexcept {
  thread_scopes& t = tls_scopes;
  for (std::uint32_t i = 0; i < t.depth && scope_access::id(*t.frames[i]) <= last_id; ++i)
    if (scope_access::id(*t.frames[i]) >= first_id)
      scope_access::credit(*t.frames[i], tag, static_cast<std::int64_t>(bytes));
}

void drain_pending() noexcept {
  thread_state* st = tls_scopes.state;
  if (!st || !st->has_pending.load(std::memory_order_relaxed)) return;
  for (const pending_credit& c : take_pending(*st)) credit_stamped(c.first_scope_id, c.scope_id, c.tag, c.bytes);
}

}  // namespace

}  // namespace detail

void check_scope_limits(std::size_t bytes) {
  detail::drain_pending();
  detail::thread_scopes& t = detail::tls_scopes;
  for (std::uint32_t i = t.depth; i-- > t.base;) scope_access::check_limit(*t.frames[i], bytes);  // innermost first
}

void charge_scopes(tag_id tag, std::size_t bytes) {
  check_scope_limits(bytes);
  detail::thread_scopes& t = detail::tls_scopes;
  for (std::uint32_t i = t.base; i < t.depth; ++i)
    scope_access::charge(*t.frames[i], tag, static_cast<std::int64_t>(bytes));
}

void credit_scopes(tag_id tag, std::size_t bytes) noexcept {
  detail::thread_scopes& t = detail::tls_scopes;
  for (std::uint32_t i = t.base; i < t.depth; ++i)
    scope_access::credit(*t.frames[i], tag, static_cast<std::int64_t>(bytes));
}

charge_stamp charge_chunk(tag_id tag, std::size_t bytes, account* acct) {
  charge_stamp stamp;
  stamp.tag = tag;
  stamp.acct = acct;
  detail::thread_scopes& t = detail::tls_scopes;
  if (t.visible != 0) {
    charge_scopes(tag, bytes);
    stamp.owner = t.state;
    stamp.first_scope_id = scope_access::id(*t.frames[t.base]);
    stamp.scope_id = scope_access::id(*t.frames[t.depth - 1]);
  }
  if (acct) {
    acct->use_tag(tag);
    acct->on_allocate(bytes, tag);
  }
  detail::ledger_chunk_taken(stamp, bytes);  // ARENASTAT_LEAKS: chunks held at exit
  return stamp;
}

void credit_chunk(const charge_stamp& stamp, std::size_t bytes) noexcept {
  detail::ledger_chunk_given_back(stamp, bytes);
  if (stamp.acct) stamp.acct->on_deallocate(bytes, stamp.tag);
  if (stamp.scope_id == 0) return;
  if (stamp.owner == detail::tls_scopes.state)
    detail::credit_stamped(stamp.first_scope_id, stamp.scope_id, stamp.tag, bytes);
  else
    detail::post_credit(*stamp.owner, {stamp.first_scope_id, stamp.scope_id, stamp.tag, bytes});
}

scope::scope(std::string_view name, scope_options options) : limit_(options.limit_bytes) {
  detail::check_name(name, "arenastat::scope");
  detail::thread_scopes& t = detail::tls_scopes;
  if (t.depth >= detail::max_scope_depth)
    throw std::length_error("arenastat::scope '" + std::string(name) + "': more than " +
                            std::to_string(detail::max_scope_depth) + " nested scopes on one thread");
  name_.assign(name);
  detail::thread_state& st = detail::current_thread_state();
  detail::drain_pending();
  id_ = st.next_scope_id++;
  uncaught_at_entry_ = std::uncaught_exceptions();
  start_ = std::chrono::steady_clock::now();
  t.frames[t.depth++] = this;
  t.visible = t.depth - t.base;
}

scope::~scope() {
  const auto end = std::chrono::steady_clock::now();
  detail::drain_pending();
  detail::thread_scopes& t = detail::tls_scopes;
  // Scopes end in reverse order; tolerate an out-of-order end by closing the gap.
  scope** top = t.frames + t.depth;
  scope** me = std::find(t.frames, top, this);
  if (me != top) {
    if (static_cast<std::uint32_t>(me - t.frames) < t.base) --t.base;  // it was hidden
    std::copy(me + 1, top, me);
    --t.depth;
    t.visible = t.depth - t.base;
  }

  detail::scope_run run;
  run.name = name_;
  run.peak = static_cast<std::uint64_t>(peak_);
  run.at_peak = at_peak_;
  run.tags_high = tags_high_;
  run.seconds = std::chrono::duration<double>(end - start_).count();
  run.result = limit_hit_ ? detail::run_result::oom
               : std::uncaught_exceptions() > uncaught_at_entry_ ? detail::run_result::err
                                                                 : detail::run_result::ok;
  run.thread = t.state ? t.state->os_tid : detail::os_thread_id();
  try {
    run.counters.reserve(counter_count_);
    for (std::uint32_t i = 0; i < counter_count_; ++i)
      run.counters.push_back(
          {counters_[i].name, counters_[i].at_peak, counters_[i].value, counters_[i].set_at_peak});
  } catch (...) {
    run.counters.clear();  // out of memory: fold without counters
  }
  detail::fold_scope(run);
}

void scope::set_counter(std::string_view name, std::int64_t value) {
  for (std::uint32_t i = 0; i < counter_count_; ++i) {
    if (name == counters_[i].name) {
      counters_[i].value = value;
      return;
    }
  }
  if (name.empty() || name.size() > max_counter_name)
    throw std::invalid_argument("arenastat::scope::set_counter: counter name '" + std::string(name) +
                                "' must have 1 to " + std::to_string(max_counter_name) + " characters");
  if (counter_count_ == max_counters)
    throw std::length_error("arenastat::scope::set_counter: scope '" + name_ + "' already has " +
                            std::to_string(max_counters) + " counters; cannot add '" + std::string(name) + "'");
  counter& c = counters_[counter_count_++];
  std::copy(name.begin(), name.end(), c.name);
  c.value = value;  // no value at the peak until a peak is reached after this
}

}  // namespace arenastat
