// The global table of scope entries (accounts are read live from the registry).
#include "arenastat/table.hpp"

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>

#include <boost/unordered/unordered_flat_map.hpp>

#include "table_internal.hpp"

namespace arenastat::detail {
namespace {

struct tag_amount {
  tag_id tag;
  std::int64_t bytes;
};

// One eternal entry per scope name. Kept compact: breakdown and counters hold
// only what is non-zero / used.
struct scope_record {
  std::string name;
  std::uint64_t count = 0;
  std::uint64_t last_peak = 0;
  std::uint64_t max_peak = 0;
  std::vector<tag_amount> at_peak;
  std::vector<counter_value> counters;
  double total_s = 0;
  double last_s = 0;
  std::uint64_t thread = 0;
  std::uint64_t oom_count = 0;
  std::uint64_t err_count = 0;
  run_result last_result = run_result::ok;
};

struct transparent_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};

struct scope_table {
  std::mutex mutex;
  std::deque<scope_record> records;  // stable addresses; keys view their names
  boost::unordered_flat_map<std::string_view, scope_record*, transparent_hash, std::equal_to<>> by_name;
  std::atomic<std::uint64_t> lost{0};

  static scope_table& get() {
    static scope_table* const t = new scope_table();  // never destroyed
    return *t;
  }
};

const char* result_name(run_result r) {
  switch (r) {
    case run_result::ok: return "ok";
    case run_result::oom: return "oom";
    case run_result::err: return "err";
  }
  return "ok";
}

std::vector<tag_bytes> named(const std::vector<tag_amount>& amounts) {
  std::vector<tag_bytes> out;
  out.reserve(amounts.size());
  for (const tag_amount& a : amounts) out.push_back({std::string(tag_name(a.tag)), a.bytes});
  return out;
}

}  // namespace

void fold_scope(const scope_run& run) noexcept {
  scope_table& t = scope_table::get();
  try {
    std::lock_guard lock(t.mutex);
    scope_record* r;
    if (auto it = t.by_name.find(run.name); it != t.by_name.end()) {
      r = it->second;
    } else {
      r = &t.records.emplace_back();
      r->name.assign(run.name);
      try {
        t.by_name.emplace(r->name, r);
      } catch (...) {
        t.records.pop_back();
        throw;
      }
    }
    if (run.peak >= r->max_peak) {
      // The new largest run: its breakdown and counters replace the old ones.
      std::vector<tag_amount> at_peak;
      for (std::uint32_t i = 0; i < run.tags_high; ++i)
        if (run.at_peak[i] != 0) at_peak.push_back({static_cast<tag_id>(i), run.at_peak[i]});
      std::vector<counter_value> counters = run.counters;
      r->at_peak = std::move(at_peak);
      r->counters = std::move(counters);
      r->max_peak = run.peak;
    }
    r->count += 1;
    r->last_peak = run.peak;
    r->total_s += run.seconds;
    r->last_s = run.seconds;
    r->thread = run.thread;
    r->last_result = run.result;
    r->oom_count += run.result == run_result::oom;
    r->err_count += run.result == run_result::err;
  } catch (...) {
    t.lost.fetch_add(1, std::memory_order_relaxed);
  }
}

std::uint64_t lost_folds() noexcept { return scope_table::get().lost.load(std::memory_order_relaxed); }

std::vector<entry> scope_entries() {
  scope_table& t = scope_table::get();
  std::vector<entry> out;
  std::lock_guard lock(t.mutex);
  out.reserve(t.records.size());
  for (const scope_record& r : t.records) {
    entry e;
    e.name = r.name;
    e.kind = entry_kind::scope;
    e.peak_bytes = r.max_peak;
    e.at_peak = named(r.at_peak);
    e.count = r.count;
    e.last_peak_bytes = r.last_peak;
    e.counters = r.counters;
    e.time_s = r.total_s;
    e.last_time_s = r.last_s;
    e.result = result_name(r.last_result);
    e.oom_count = r.oom_count;
    e.err_count = r.err_count;
    e.thread = r.thread;
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace arenastat::detail

namespace arenastat {

std::vector<entry> snapshot() {
  std::vector<entry> out = detail::scope_entries();
  const auto by_name = [](const entry& a, const entry& b) { return a.name < b.name; };
  std::sort(out.begin(), out.end(), by_name);
  const std::size_t scopes = out.size();
  for (account* a : detail::all_accounts()) {
    account_totals t = a->totals();
    entry e;
    e.name = std::string(a->name());
    e.kind = entry_kind::account;
    e.peak_bytes = t.peak_bytes;
    e.at_peak = std::move(t.at_peak);
    e.live_bytes = t.live_bytes;
    e.allocated_bytes = t.allocated_bytes;
    e.allocations = t.allocations;
    e.frees = t.frees;
    e.live_by_tag = std::move(t.live_by_tag);
    out.push_back(std::move(e));
  }
  std::sort(out.begin() + static_cast<std::ptrdiff_t>(scopes), out.end(), by_name);
  return out;
}

void reset_peaks() {
  for (account* a : detail::all_accounts()) a->reset_peak();
  detail::scope_table& t = detail::scope_table::get();
  std::lock_guard lock(t.mutex);
  for (detail::scope_record& r : t.records) {
    r.max_peak = 0;
    r.at_peak.clear();
    r.counters.clear();
  }
}

std::size_t scope_entry_count() {
  detail::scope_table& t = detail::scope_table::get();
  std::lock_guard lock(t.mutex);
  return t.records.size();
}

std::size_t account_entry_count() { return detail::all_accounts().size(); }

}  // namespace arenastat
