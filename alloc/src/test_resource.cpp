// test_resource, exception_test's check, default_resource_guard.
#include "arenastat/test_resource.hpp"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "arenastat/context.hpp"
#include "quoted.hpp"
#include "text_escape.hpp"
#include "stack_accounts.hpp"
#include "arenastat/tags.hpp"

namespace arenastat {

namespace {

constexpr unsigned char guard_fill = 0xB1;  // BDE's padding byte
constexpr unsigned char freed_fill = 0xA5;  // scribbled over a block given back

std::string plural(std::int64_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string pointer_text(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

// "offsets 16..18" / "offset -1": the changed guard bytes in [from, to) of the block.
std::string changed_range(const unsigned char* p, std::ptrdiff_t from, std::ptrdiff_t to) {
  std::ptrdiff_t first = 0, last = 0;
  bool any = false;
  for (std::ptrdiff_t i = from; i < to; ++i) {
    if (p[i] == guard_fill) continue;
    if (!any) first = i;
    last = i;
    any = true;
  }
  if (!any) return {};
  return first == last ? "offset " + std::to_string(first)
                       : "offsets " + std::to_string(first) + ".." + std::to_string(last);
}

// What was written over a block's guard bytes ("" when nothing):
// "written before the start: guard bytes at offset -1 changed; written past
// the end: guard bytes at offsets 8..9 changed".
std::string guard_damage(const unsigned char* user, std::size_t front, std::size_t bytes, std::size_t guard) {
  const auto n = static_cast<std::ptrdiff_t>(bytes);
  const std::string before = changed_range(user, -static_cast<std::ptrdiff_t>(front), 0);
  const std::string after = changed_range(user, n, n + static_cast<std::ptrdiff_t>(guard));
  std::string what;
  if (!before.empty()) what += "written before the start: guard bytes at " + before + " changed";
  if (!before.empty() && !after.empty()) what += "; ";
  if (!after.empty()) what += "written past the end: guard bytes at " + after + " changed";
  return what;
}

void write_stderr(const std::string& s) noexcept {
  std::size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = ::write(2, s.data() + done, s.size() - done);
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

struct block {
  std::uint64_t serial = 0;
  std::size_t bytes = 0;
  std::size_t alignment = 0;
  std::size_t front = 0;  // guard bytes before the block (a multiple of alignment)
};

}  // namespace

struct test_resource::state {
  std::string name;
  test_resource_options options;
  std::pmr::memory_resource* upstream;
  mutable std::mutex mu;
  std::unordered_map<void*, block> live;
  // Blocks given back, held before they go upstream (oldest first) so that
  // their addresses are not handed out again while a double free of them
  // can still be named; `freed` has their records.
  std::unordered_map<void*, block> freed;
  std::deque<void*> quarantine;
  std::size_t quarantine_bytes = 0;
  std::int64_t blocks = 0, bytes = 0, max_blocks = 0, max_bytes = 0, total_blocks = 0, total_bytes = 0;
  std::int64_t deallocations = 0, misuses = 0;
  std::int64_t limit_refusals = 0;  // allocations the allocation limit refused
  std::string last_misuse;  // the message of the latest misuse reported
  bool under_exception_test = false;
  std::uint64_t next_serial = 1;
  std::int64_t limit = -1;

  // The bytes asked of upstream for a block of `bytes` at `alignment`: the
  // front guard (guard_bytes rounded up to the alignment, so the block stays
  // aligned), the block and the back guard. False when that exceeds
  // PTRDIFF_MAX (the counters are signed; no upstream could give it).
  bool layout(std::size_t bytes, std::size_t alignment, std::size_t& front, std::size_t& total) const noexcept {
    const std::size_t g = options.guard_bytes;
    constexpr std::size_t most = PTRDIFF_MAX;
    if (g > most || alignment > most) return false;
    front = g == 0 ? 0 : (g + alignment - 1) / alignment * alignment;
    return front <= most && bytes <= most - front && g <= most - front - bytes &&
           (total = upstream_bytes(front + bytes + g), true);
  }
  // At least one byte is asked of the upstream: a zero-byte block without
  // guards gets an address of its own (an arena answers every zero-byte
  // request with one address, and blocks are known by their addresses).
  static std::size_t upstream_bytes(std::size_t n) noexcept { return n == 0 ? 1 : n; }
  std::size_t total_of(const block& b) const noexcept { return upstream_bytes(b.front + b.bytes + options.guard_bytes); }
  // Gives a block's memory (its guards included) back upstream, hiding the
  // scopes as every tracked resource does while it calls its upstream.
  void release(void* p, const block& b) noexcept {
    upstream_call below;
    upstream->deallocate(static_cast<unsigned char*>(p) - b.front, total_of(b), b.alignment);
  }
  // Holds a freed block (already filled with freed_fill) in the quarantine,
  // giving the oldest back while it holds more than its bounds. A block
  // larger than the byte bound on its own is given back at once: holding it
  // would give back every older block first, and then itself.
  void hold(void* p, const block& b) noexcept {
    if (total_of(b) > test_resource::quarantine_max_bytes) {
      release(p, b);
      return;
    }
    try {
      freed.insert_or_assign(p, b);
      quarantine.push_back(p);
    } catch (...) {  // no room for the record: give the block back at once
      freed.erase(p);
      release(p, b);
      return;
    }
    quarantine_bytes += total_of(b);
    while (quarantine.size() > options.quarantine_blocks || quarantine_bytes > test_resource::quarantine_max_bytes) {
      void* q = quarantine.front();
      quarantine.pop_front();
      const auto it = freed.find(q);
      quarantine_bytes -= total_of(it->second);
      release(q, it->second);
      freed.erase(it);
    }
  }
  std::string header() const { return "arenastat::test_resource '" + detail::escape_text(name) + "'"; }
  std::string list(std::uint64_t from) const {  // under mu
    std::vector<std::pair<std::uint64_t, std::size_t>> v;
    for (const auto& [p, b] : live)
      if (b.serial >= from) v.emplace_back(b.serial, b.bytes);
    std::sort(v.begin(), v.end());
    std::string s;
    for (std::size_t i = 0; i < v.size() && i < 10; ++i)
      s += (i ? ", #" : "#") + std::to_string(v[i].first) + " (" + plural(static_cast<std::int64_t>(v[i].second), "byte", "bytes") + ")";
    if (v.size() > 10) s += ", ... (" + std::to_string(v.size() - 10) + " more)";
    return s;
  }
  // Each block in use whose guard bytes were written, in serial order (at
  // most 10, then a line "  ... and N more blocks whose guard bytes
  // changed"): "  block #3 (8 bytes): written past the end: ...". Under mu.
  std::vector<std::pair<std::uint64_t, std::string>> damaged_blocks() const {
    std::vector<std::pair<std::uint64_t, std::string>> v;
    for (const auto& [p, b] : live) {
      const std::string d =
          guard_damage(static_cast<const unsigned char*>(p), b.front, b.bytes, options.guard_bytes);
      if (!d.empty())
        v.emplace_back(b.serial, "  block #" + std::to_string(b.serial) + " (" +
                                     plural(static_cast<std::int64_t>(b.bytes), "byte", "bytes") + "): " + d);
    }
    std::sort(v.begin(), v.end());
    if (v.size() > 10) {
      const std::size_t more = v.size() - 10;
      v.resize(10);
      v.emplace_back(UINT64_MAX, "  ... and " + std::to_string(more) + (more == 1 ? " more block" : " more blocks") +
                                     " whose guard bytes changed");
    }
    return v;
  }
  std::string in_use(const char* verb) const {  // under mu
    return header() + " " + verb + " " + plural(blocks, "block", "blocks") + " (" + plural(bytes, "byte", "bytes") +
           ") in use: " + list(0);
  }
};

test_resource::test_resource(std::string_view name, std::pmr::memory_resource* upstream)
    : test_resource(name, test_resource_options{}, upstream) {}

namespace {

// Checks the arguments before the account is made (a refused resource leaves
// none behind), then returns it.
account& checked_account(std::string_view name, const std::pmr::memory_resource* upstream) {
  if (!upstream) throw std::invalid_argument("arenastat::test_resource: upstream resource is null");
  account::check_name(name);
  detail::refuse_double_charge("arenastat::test_resource " + detail::quoted(name), upstream, name);
  return account::get(name);
}

}  // namespace

test_resource::test_resource(std::string_view name, const test_resource_options& options,
                             std::pmr::memory_resource* upstream)
    : state_(std::make_unique<state>()), account_(&checked_account(name, upstream)), tag_(register_tag("heap")) {
  state_->name = std::string(name);
  state_->options = options;
  state_->upstream = upstream;
  account_->use_tag(tag_);
  account_->attach_resource();
}

std::pmr::memory_resource* test_resource::upstream() const noexcept { return state_->upstream; }

test_resource::~test_resource() {
  std::unique_lock lock(state_->mu);
  if (state_->blocks != 0) {
    if (!state_->options.quiet) {
      try {
        std::string text = state_->in_use("destroyed with") + "\n";
        for (const auto& [serial, line] : state_->damaged_blocks()) text += line + "\n";
        write_stderr(text);
      } catch (...) {
      }
      if (state_->options.on_misuse == misuse_action::abort) {
        std::fflush(nullptr);
        std::abort();
      }
    }
    // Given back as deallocate would: the account and the active scopes credited.
    const bool scopes = state_->options.charge_scopes && scopes_charged();
    for (auto& [p, b] : state_->live) {
      account_->on_deallocate(b.bytes, tag_);
      if (scopes) credit_scopes(tag_, b.bytes);
      state_->release(p, b);
    }
  }
  for (void* q : state_->quarantine) state_->release(q, state_->freed.at(q));
  lock.unlock();
  account_->detach_resource();
}

std::string_view test_resource::name() const noexcept { return state_->name; }

std::string test_resource::description() const { return state_->header(); }

#define ARENASTAT_COUNTER(fn, field)                     \
  std::int64_t test_resource::fn() const noexcept {      \
    std::lock_guard lock(state_->mu);                    \
    return state_->field;                                \
  }
ARENASTAT_COUNTER(blocks_in_use, blocks)
ARENASTAT_COUNTER(bytes_in_use, bytes)
ARENASTAT_COUNTER(max_blocks, max_blocks)
ARENASTAT_COUNTER(max_bytes, max_bytes)
ARENASTAT_COUNTER(total_blocks, total_blocks)
ARENASTAT_COUNTER(total_bytes, total_bytes)
ARENASTAT_COUNTER(deallocations, deallocations)
ARENASTAT_COUNTER(misuses, misuses)
ARENASTAT_COUNTER(allocation_limit, limit)
ARENASTAT_COUNTER(limit_refusals, limit_refusals)
#undef ARENASTAT_COUNTER

std::uint64_t test_resource::next_serial() const noexcept {
  std::lock_guard lock(state_->mu);
  return state_->next_serial;
}

void test_resource::set_allocation_limit(std::int64_t n) noexcept {
  std::lock_guard lock(state_->mu);
  state_->limit = n < 0 ? -1 : n;
}

void test_resource::set_quiet(bool quiet) noexcept {
  std::lock_guard lock(state_->mu);
  state_->options.quiet = quiet;
}

std::string test_resource::leak_report() const {
  std::lock_guard lock(state_->mu);
  return state_->blocks == 0 ? std::string() : state_->in_use("has");
}

std::string test_resource::damage_report() const {
  std::lock_guard lock(state_->mu);
  std::string text;
  for (const auto& [serial, line] : state_->damaged_blocks()) text += (text.empty() ? "" : "\n") + line;
  return text;
}

std::string test_resource::blocks_since(std::uint64_t serial) const {
  std::lock_guard lock(state_->mu);
  return state_->list(serial);
}

std::string test_resource::last_misuse() const {
  std::lock_guard lock(state_->mu);
  return state_->last_misuse;
}

// Every misuse ends here: counted, and its message kept, under one lock.
void test_resource::fail(const std::string& message) {
  {
    std::lock_guard lock(state_->mu);
    ++state_->misuses;
    try {
      state_->last_misuse = message;
    } catch (...) {  // no memory for a copy: the count still says it
    }
  }
  if (state_->options.on_misuse == misuse_action::abort) {
    write_stderr(message + "\n");
    std::fflush(nullptr);
    std::abort();
  }
  throw test_resource_error(message);
}

void* test_resource::do_allocate(std::size_t bytes, std::size_t alignment) {
  state& s = *state_;
  std::unique_lock lock(s.mu);
  // A refused request (bad alignment, too large) counts nothing, the limit included.
  if (!std::has_single_bit(alignment)) {
    const std::string message = s.header() + ": allocate(" + std::to_string(bytes) + ", " + std::to_string(alignment) +
                                "): alignment " + std::to_string(alignment) + " is not a power of two";
    lock.unlock();
    fail(message);
  }
  std::size_t front = 0, total = 0;
  if (!s.layout(bytes, alignment, front, total)) throw std::bad_alloc();
  // The limit counts allocations made: a request refused below (a scope's
  // limit, the upstream's bad_alloc) leaves it as it was.
  if (s.limit == 0) {
    s.limit = -1;
    ++s.limit_refusals;
    throw allocation_limit_reached(s.header() + ": allocation limit reached (allocation #" +
                                   std::to_string(s.next_serial) + " of " + plural(static_cast<std::int64_t>(bytes), "byte", "bytes") +
                                   " refused)",
                                   this);
  }
  const bool scopes = s.options.charge_scopes && scopes_charged();
  if (scopes) check_scope_limits(bytes);  // a request that cannot fit is never made
  unsigned char* base;
  {
    upstream_call below;  // the scopes are charged here, once
    base = static_cast<unsigned char*>(s.upstream->allocate(total, alignment));
  }
  unsigned char* p = base + front;
  if (scopes) {
    try {
      charge_scopes(tag_, bytes);
    } catch (...) {
      upstream_call below;
      s.upstream->deallocate(base, total, alignment);
      throw;
    }
  }
  // An upstream handing out a block in use, or one held back after its free,
  // again is broken: the memory is that block's, not ours to give back.
  const auto in_use = s.live.find(p);
  const auto held = s.freed.find(p);
  if (in_use != s.live.end() || held != s.freed.end()) {
    if (scopes) credit_scopes(tag_, bytes);
    const bool used = in_use != s.live.end();
    const std::string message = s.header() + ": allocate(" + std::to_string(bytes) + ", " +
                                std::to_string(alignment) + "): the upstream returned " + pointer_text(base) +
                                " again while block #" +
                                std::to_string(used ? in_use->second.serial : held->second.serial) +
                                (used ? " there is in use" : " there is held back after its free") +
                                " (a broken upstream)";
    lock.unlock();
    fail(message);
  }
  try {
    s.live.emplace(p, block{s.next_serial, bytes, alignment, front});
  } catch (...) {
    if (scopes) credit_scopes(tag_, bytes);
    upstream_call below;
    s.upstream->deallocate(base, total, alignment);
    throw;
  }
  account_->on_allocate(bytes, tag_);
  std::memset(base, guard_fill, front);
  std::memset(p + bytes, guard_fill, s.options.guard_bytes);
  if (s.limit > 0) --s.limit;
  ++s.next_serial;
  ++s.blocks;
  s.bytes += static_cast<std::int64_t>(bytes);
  ++s.total_blocks;
  s.total_bytes += static_cast<std::int64_t>(bytes);
  s.max_blocks = std::max(s.max_blocks, s.blocks);
  s.max_bytes = std::max(s.max_bytes, s.bytes);
  return p;
}

void test_resource::do_deallocate(void* p, std::size_t bytes, std::size_t alignment) {
  state& s = *state_;
  std::unique_lock lock(s.mu);
  const std::string call =
      s.header() + ": deallocate(" + pointer_text(p) + ", " + std::to_string(bytes) + ", " + std::to_string(alignment) + ")";
  const auto it = s.live.find(p);
  if (it == s.live.end()) {
    const auto f = s.freed.find(p);
    const std::string message =
        f == s.freed.end()
            ? call + " of a pointer it did not allocate"
            : call + " of block #" + std::to_string(f->second.serial) + " (" +
                  plural(static_cast<std::int64_t>(f->second.bytes), "byte", "bytes") + "), already deallocated (double free)";
    lock.unlock();
    fail(message);
  }
  const block b = it->second;
  const std::string of_block = call + " of block #" + std::to_string(b.serial);
  std::string wrong;
  if (bytes != b.bytes)
    wrong = "size " + std::to_string(bytes) + " differs from the allocation's " + std::to_string(b.bytes);
  if (alignment != b.alignment)
    wrong += (wrong.empty() ? "" : "; ") + std::string("alignment ") + std::to_string(alignment) +
             " differs from the allocation's " + std::to_string(b.alignment);
  if (!wrong.empty()) {  // the block stays in use: the caller's figures cannot be trusted
    lock.unlock();
    fail(of_block + ": " + wrong);
  }
  auto* user = static_cast<unsigned char*>(p);
  const auto n = static_cast<std::ptrdiff_t>(b.bytes);
  const std::string damage = guard_damage(user, b.front, b.bytes, s.options.guard_bytes);
  // Given back in any case: the size and alignment match.
  account_->on_deallocate(b.bytes, tag_);
  if (s.options.charge_scopes && scopes_charged()) credit_scopes(tag_, b.bytes);
  s.live.erase(it);
  --s.blocks;
  s.bytes -= n;
  ++s.deallocations;
  std::memset(user - b.front, freed_fill, s.total_of(b));
  s.hold(p, b);
  if (!damage.empty()) {
    lock.unlock();
    fail(of_block + " (" + plural(n, "byte", "bytes") + "): " + damage);
  }
}

namespace detail {

namespace {
// How exception_test's messages name the resource.
std::string exception_test_prefix(const test_resource& r) {
  return "arenastat::exception_test: test_resource '" + detail::escape_text(r.name()) + "'";
}
}  // namespace

void check_exception_run(const test_resource& r, std::int64_t limit, std::int64_t blocks, std::int64_t bytes,
                         std::uint64_t first_serial, refusal how) {
  const std::int64_t now_blocks = r.blocks_in_use();
  const std::int64_t now_bytes = r.bytes_in_use();
  const std::string left = r.blocks_since(first_serial);
  if (now_blocks == blocks && now_bytes == bytes && left.empty()) return;
  const std::string run = " of the run (limit " + std::to_string(limit) + ")";
  const std::string after =
      how == refusal::thrown   ? ": after the exception at allocation " + std::to_string(limit + 1) + run + ", "
      : how == refusal::caught ? ": after the refusal of allocation " + std::to_string(limit + 1) + run + ", which the run caught, "
                               : ": after another test_resource's refusal ended the run (limit " + std::to_string(limit) + "), ";
  throw exception_test_failure(
      exception_test_prefix(r) + after +
      plural(now_blocks, "block", "blocks") + " (" + plural(now_bytes, "byte", "bytes") + ") in use, " +
      plural(blocks, "block", "blocks") + " (" + plural(bytes, "byte", "bytes") + ") before the run" +
      (left.empty() ? std::string() : "; left by the run: " + left) +
      (now_blocks == blocks && now_bytes == bytes
           ? " (the run also freed blocks allocated before it, so the totals alone match)"
           : ""));
}

exception_test_mark::exception_test_mark(test_resource& r) : r_(r) {
  test_resource::state& s = *r.state_;
  std::unique_lock lock(s.mu);
  const std::int64_t limit = s.limit;
  const bool nested = s.under_exception_test;
  if (!nested && limit < 0) {
    s.under_exception_test = true;
    return;
  }
  lock.unlock();
  const std::string who = exception_test_prefix(r);
  if (nested)
    throw std::logic_error(who + " is already under an exception_test: it does not nest on one resource");
  throw std::logic_error(who + " already has an allocation limit (" +
                         plural(limit, "more allocation", "more allocations") +
                         "): exception_test sets the limit itself; a limit set before it would be lost");
}

exception_test_mark::~exception_test_mark() {
  std::lock_guard lock(r_.state_->mu);
  r_.state_->under_exception_test = false;
}

}  // namespace detail

// ---- default_resource_guard -------------------------------------------------

struct default_resource_guard::counter final : std::pmr::memory_resource {
  std::pmr::memory_resource* upstream = nullptr;
  std::atomic<std::uint64_t> allocations{0};
  std::atomic<std::uint64_t> bytes{0};

  void* do_allocate(std::size_t n, std::size_t alignment) override {
    void* p = upstream->allocate(n, alignment);
    allocations.fetch_add(1, std::memory_order_relaxed);
    bytes.fetch_add(n, std::memory_order_relaxed);
    return p;
  }
  void do_deallocate(void* p, std::size_t n, std::size_t alignment) override { upstream->deallocate(p, n, alignment); }
  bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override { return this == &o; }
};

namespace {
// Every counter ever made: memory taken through one may be given back after
// its guard ended, so they are never destroyed (and stay reachable).
std::vector<void*>& all_counters() {
  static auto* v = new std::vector<void*>;
  return *v;
}
// The guards alive now, each with the resource it will restore (its
// previous_), under counters_mu.
std::vector<default_resource_guard*>& live_guards() {
  static auto* v = new std::vector<default_resource_guard*>;
  return *v;
}
std::mutex counters_mu;
}  // namespace

default_resource_guard::default_resource_guard() : counter_(new counter) {
  std::lock_guard lock(counters_mu);
  all_counters().push_back(counter_);
  live_guards().reserve(live_guards().size() + 1);  // so the push_back below, after the default is set, cannot throw
  counter_->upstream = std::pmr::get_default_resource();
  previous_ = std::pmr::set_default_resource(counter_);
  live_guards().push_back(this);
}

// Guards may end in any order. The one whose counter is the default hands the
// default back to what it replaced; one that ended under another guard hands
// what it replaced to the guard installed on top of it, which restores that
// in turn (its counter still forwards through this one's, which is eternal).
// A default set since by something other than a guard is left as it is.
default_resource_guard::~default_resource_guard() {
  std::lock_guard lock(counters_mu);
  auto& live = live_guards();
  std::erase(live, this);
  if (std::pmr::get_default_resource() == counter_) {
    std::pmr::set_default_resource(previous_);
    return;
  }
  for (default_resource_guard* g : live)
    if (g->previous_ == counter_) g->previous_ = previous_;
}
std::uint64_t default_resource_guard::allocations() const noexcept {
  return counter_->allocations.load(std::memory_order_relaxed);
}
std::uint64_t default_resource_guard::bytes() const noexcept { return counter_->bytes.load(std::memory_order_relaxed); }

std::string default_resource_guard::message() const {
  const std::uint64_t n = allocations();
  if (n == 0) return {};
  return "arenastat::default_resource_guard: " + plural(static_cast<std::int64_t>(n), "allocation", "allocations") +
         " (" + plural(static_cast<std::int64_t>(bytes()), "byte", "bytes") +
         ") went through the default resource while it was guarded";
}

void default_resource_guard::check() const {
  if (std::string m = message(); !m.empty()) throw default_resource_used(m);
}

}  // namespace arenastat
