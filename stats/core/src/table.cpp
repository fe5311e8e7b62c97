// The global table of scope entries (accounts are read live from the registry),
// bounded by table_max(): docs/report.md, "A bounded table".
#include "arenastat/table.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>
#include <tuple>

#include <boost/unordered/unordered_flat_set.hpp>

#include "arenastat/detail/short_mutex.hpp"

#include "env.hpp"
#include "quoted.hpp"
#include "short_bytes.hpp"
#include "sys.hpp"
#include "table_internal.hpp"
#include "table_records.hpp"

namespace arenastat {

const char* kind_name(entry_kind kind) noexcept {
  switch (kind) {
    case entry_kind::scope: return "scope";
    case entry_kind::account: return "account";
    case entry_kind::folded: return "folded";
  }
  return "scope";
}

}  // namespace arenastat

namespace arenastat::detail {
namespace {

constexpr std::uint8_t name_len_mask = 0x7f, at_peak_bit = 0x80;

// What a new largest run brings: its non-zero tags and its counters.
// Only ids[0, n_tags) and bytes[0, n_tags) are meaningful (not zeroed: a fold
// that does not set a new largest run never builds one).
struct breakdown {
  std::uint8_t n_tags = 0;
  tag_id ids[max_tags];
  std::int64_t bytes[max_tags];
  const run_counter* counters = nullptr;
  std::size_t counter_count = 0;

  std::size_t n_counters() const noexcept { return std::min(counter_count, std::size_t{15}); }
  // Bytes after the name's padding.
  std::size_t tail_size() const noexcept {
    std::size_t n = 9 * std::size_t{n_tags} + 16 * n_counters();
    for (std::size_t i = 0; i < n_counters(); ++i) n += 1 + std::min(counters[i].name.size(), std::size_t{127});
    return n;
  }
};

std::size_t tail_size_of(const scope_record& r) noexcept {
  std::size_t n = 9 * std::size_t{r.n_tags} + 16 * std::size_t{r.n_counters};
  const std::uint8_t* p = r.counter_names();
  for (std::size_t i = 0; i < r.n_counters; ++i) {
    const std::size_t len = *p & name_len_mask;
    n += 1 + len;
    p += 1 + len;
  }
  return n;
}

// Writes b's values, tag ids and counter names into r (whose layout fits b).
void write_breakdown(scope_record& r, const breakdown& b) noexcept {
  for (std::size_t i = 0; i < b.n_tags; ++i) r.set_value(i, b.bytes[i]);
  for (std::size_t i = 0; i < b.n_counters(); ++i) {
    r.set_value(b.n_tags + 2 * i, b.counters[i].value);
    r.set_value(b.n_tags + 2 * i + 1, b.counters[i].last);
  }
  std::uint8_t* p = r.tag_ids();
  for (std::size_t i = 0; i < b.n_tags; ++i) *p++ = b.ids[i];
  for (std::size_t i = 0; i < b.n_counters(); ++i) {
    const run_counter& c = b.counters[i];
    const std::size_t len = std::min(c.name.size(), std::size_t{127});
    *p++ = static_cast<std::uint8_t>(len | (c.at_peak ? at_peak_bit : 0u));
    std::memcpy(p, c.name.data(), len);
    p += len;
  }
}

// A record for `name` with `b` as its breakdown and the figures of `from` (if any).
scope_record* make_record(std::string_view name, const breakdown& b, const scope_record* from) {
  const std::size_t size = sizeof(scope_record) + scope_record::values_offset(name.size()) + b.tail_size();
  void* mem = ::operator new(size);
  auto* r = from ? new (mem) scope_record(*from) : new (mem) scope_record();
  r->name_len = static_cast<std::uint16_t>(name.size());
  std::memcpy(reinterpret_cast<char*>(r + 1), name.data(), name.size());
  r->n_tags = b.n_tags;
  r->n_counters = static_cast<std::uint8_t>(b.n_counters()) & 15u;
  write_breakdown(*r, b);
  return r;
}

void destroy(scope_record* r) noexcept { ::operator delete(static_cast<void*>(r)); }

constexpr std::string_view other_row = "(other)";

}  // namespace

std::size_t table_max_from_env() noexcept {
  const char* v = detail::env_value("ARENASTAT_TABLE_MAX");
  if (v == nullptr || *v == '\0') return default_table_max;
  std::size_t n = 0;
  bool ok = true;
  for (const char* p = v; *p; ++p) {
    const auto digit = static_cast<std::size_t>(*p - '0');
    if (*p < '0' || *p > '9' || n > (SIZE_MAX - digit) / 10) {  // n * 10 + digit would wrap
      ok = false;
      break;
    }
    n = n * 10 + digit;
  }
  if (ok) return n;
  const std::string_view text(v);
  warn("arenastat: ignoring ARENASTAT_TABLE_MAX=" + quoted(text) +
       " (expected a whole number, 0 for no cap); keeping " + std::to_string(default_table_max) + "\n");
  return default_table_max;
}

namespace {

std::string_view prefix_of(std::string_view name) noexcept {
  const std::size_t slash = name.find('/');
  return slash == std::string_view::npos ? other_row : name.substr(0, slash + 1);
}

// Folds one kept entry into its overflow row. Lock held.
void fold_into_row(scope_table& t, const scope_record& r) {
  std::string_view prefix = prefix_of(r.name());
  auto row = std::find_if(t.folded.begin(), t.folded.end(), [&](const folded_row& f) { return f.name == prefix; });
  if (row == t.folded.end()) {
    const std::size_t prefixes =
        t.folded.size() - static_cast<std::size_t>(std::any_of(t.folded.begin(), t.folded.end(),
                                                                [](const folded_row& f) { return f.name == other_row; }));
    if (prefix != other_row && prefixes >= max_folded_rows) {
      prefix = other_row;
      row = std::find_if(t.folded.begin(), t.folded.end(), [](const folded_row& f) { return f.name == other_row; });
    }
    if (row == t.folded.end()) {
      t.folded.push_back({std::string(prefix)});
      row = t.folded.end() - 1;
    }
  }
  row->entries += 1;
  row->runs += r.count;
  row->peak_sum += r.max_peak;
  row->peak_max = std::max(row->peak_max, r.max_peak);
  row->oom += r.oom_count;
  row->err += r.err_count;
  row->time_s += r.total_s;
  t.folded_entries += 1;
}

// Cheaper first: smaller largest peak, then fewer runs, then name order.
bool cheaper(const scope_record* a, const scope_record* b) noexcept {
  return std::make_tuple(a->max_peak, a->count, a->name()) < std::make_tuple(b->max_peak, b->count, b->name());
}

// Above the cap, folds the cheapest entries until max - max/8 remain (so a
// table at its cap pays one pass per max/8 new names). Lock held.
void compact(scope_table& t) {
  const std::size_t max = t.max.load(std::memory_order_relaxed);
  if (max == 0 || t.records.size() <= max) return;
  const std::size_t keep = max - max / 8;
  std::vector<scope_record*> all;
  all.reserve(t.records.size());
  for (const record_ref& x : t.records) all.push_back(x.r);
  const std::size_t n_fold = all.size() - keep;
  const auto cut = all.begin() + static_cast<std::ptrdiff_t>(n_fold);
  std::nth_element(all.begin(), cut, all.end(), cheaper);
  std::sort(all.begin(), cut, cheaper);  // rows are taken cheapest first: a deterministic "(other)"
  t.folded.reserve(max_folded_rows + 1);
  for (std::size_t i = 0; i < n_fold; ++i) {
    fold_into_row(t, *all[i]);
    t.records.erase(all[i]->name());
    destroy(all[i]);
  }
  ++t.generation;
}

const char* result_name(std::uint8_t r) {
  switch (static_cast<run_result>(r)) {
    case run_result::ok: return "ok";
    case run_result::oom: return "oom";
    case run_result::err: return "err";
  }
  return "ok";
}

// The fields of an account or a folded row, zero for a scope.
void clear_other_fields(entry& e) noexcept {
  e.live_bytes = 0;
  e.allocated_bytes = e.allocations = e.frees = 0;
  e.live_by_tag.clear();
  e.tags_used.clear();
  e.folded_entries = e.peak_sum_bytes = 0;
}

// The table's figures. Lock held.
table_status status_of(const scope_table& t) noexcept {
  table_status s;
  s.max = t.max.load(std::memory_order_relaxed);
  s.scope_entries = t.records.size();
  s.folded_rows = t.folded.size();
  s.folded_entries = t.folded_entries;
  s.lost_folds = t.lost.load(std::memory_order_relaxed);
  return s;
}

// Record r as an entry in `e`, reusing e's strings and vectors.
void read_scope(const scope_record& r, entry& e) {
  e.name.assign(r.name());
  e.kind = entry_kind::scope;
  e.peak_bytes = r.max_peak;
  e.at_peak.resize(r.n_tags);
  for (std::size_t i = 0; i < r.n_tags; ++i) {
    e.at_peak[i].tag.assign(tag_name(r.tag_ids()[i]));
    e.at_peak[i].bytes = r.value(i);
  }
  e.count = r.count;
  e.last_peak_bytes = r.last_peak;
  e.counters.resize(r.n_counters);
  const std::uint8_t* p = r.counter_names();
  for (std::size_t i = 0; i < r.n_counters; ++i) {
    const std::size_t len = *p & name_len_mask;
    counter_value& c = e.counters[i];
    c.name.assign(reinterpret_cast<const char*>(p + 1), len);
    c.value = r.value(r.n_tags + 2 * i);
    c.last = r.value(r.n_tags + 2 * i + 1);
    c.at_peak = (*p & at_peak_bit) != 0;
    p += 1 + len;
  }
  e.time_s = r.total_s;
  e.last_time_s = r.last_s;
  e.result = result_name(r.result);
  e.oom_count = r.oom_count;
  e.err_count = r.err_count;
  e.thread = r.thread;
  clear_other_fields(e);
}

// Bytes of r: header, name and tail.
std::size_t record_size(const scope_record& r) noexcept {
  return sizeof(scope_record) + scope_record::values_offset(r.name_len) + tail_size_of(r);
}

entry entry_of(const folded_row& f) {
  entry e;
  e.name = f.name;
  e.kind = entry_kind::folded;
  e.peak_bytes = f.peak_max;
  e.count = f.runs;
  e.time_s = f.time_s;
  e.oom_count = f.oom;
  e.err_count = f.err;
  e.folded_entries = f.entries;
  e.peak_sum_bytes = f.peak_sum;
  return e;
}

}  // namespace

void check_name(std::string_view name, std::string_view who) {
  if (name.empty()) throw std::invalid_argument(std::string(who) + ": empty name");
  if (name.size() > max_name_bytes)
    throw std::invalid_argument(std::string(who) + ": name of " + std::to_string(name.size()) +
                                " bytes is longer than the maximum of " + std::to_string(max_name_bytes) +
                                " bytes (arenastat::max_name_bytes)");
}

namespace {

// Every other fold: a lookup, a new record, a new largest run whose
// breakdown or counters replace the record's. `memo`: memo_hit's answer for
// this run (null: look the name up). Lock held.
[[gnu::noinline]] void fold_general(scope_table& t, const scope_run& run, scope_record* memo) noexcept {
  try {
    scope_record* r = memo;
    bool created = false;
    if (!r) {
      if (auto it = t.records.find(run.name); it != t.records.end()) {
        r = it->r;
      } else {
        if (run.name.size() > max_name_bytes) throw std::length_error("name too long");
        r = make_record(run.name, breakdown{}, nullptr);
        try {
          t.records.insert(record_ref{r});
        } catch (...) {
          destroy(r);
          throw;
        }
        created = true;
      }
    }
    if (run.peak >= r->max_peak) {
      // The new largest run (or as large as it): its breakdown and counters replace the old ones.
      breakdown b;
      for (std::uint32_t i = 0; i < run.tags_high && i < max_tags; ++i)
        if (run.at_peak[i] != 0) {
          b.ids[b.n_tags] = static_cast<tag_id>(i);
          b.bytes[b.n_tags++] = run.at_peak[i];
        }
      b.counters = run.counters;
      b.counter_count = run.counter_count;
      if (b.n_tags == 0 && b.n_counters() == 0 && r->n_tags == 0 && r->n_counters == 0) {
        // Nothing to replace: no tags and no counters, in the run and in the record.
      } else if (b.n_tags != r->n_tags || b.n_counters() != r->n_counters || b.tail_size() != tail_size_of(*r)) {
        scope_record* fresh = make_record(run.name, b, r);
        t.records.find(run.name)->r = fresh;
        destroy(r);
        ++t.generation;
        r = fresh;
      } else {
        write_breakdown(*r, b);
      }
      r->max_peak = run.peak;
    }
    add_run(*r, run);
    if (run.cache) *run.cache = {r, t.generation};
    if (created) {
      try {
        compact(t);  // may fold r itself out: compact moves the generation on, so the memo lapses
      } catch (...) {
        // Out of memory while folding: the table stays above its cap until the next new name.
      }
    }
  } catch (...) {
    t.lost.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace

void fold_scope(const scope_run& run) noexcept {
  scope_table& t = scope_table::get();
  table_lock lock(t);
  fold_general(t, run, memo_hit(t, run.cache, run.name));
}

std::uint64_t lost_folds() noexcept { return scope_table::get().lost.load(std::memory_order_relaxed); }

bool table_locked_by_this_thread() noexcept {
  std::atomic_signal_fence(std::memory_order_seq_cst);
  return tls_in_table_lock;
}

}  // namespace arenastat::detail

namespace arenastat {

table_copy table_copy::take() { return take(copy_bound{}); }

table_copy table_copy::take(const copy_bound& bound) {
  if (bound.top != 0 && bound.before == nullptr) throw std::invalid_argument("table_copy::take: top without an order");
  table_copy c;
  detail::scope_table& t = detail::scope_table::get();
  std::vector<entry> folded;
  {
    detail::table_lock lock(t);
    // The records to copy: every one, or those the bound lets through.
    std::vector<const detail::scope_record*> chosen;
    const auto key_of = [](const detail::scope_record* r) { return scope_key{r->max_peak, r->count, r->name()}; };
    if (bound.top == 0) {
      chosen.reserve(t.records.size());
      for (const detail::record_ref& x : t.records) {
        if (x.r->max_peak < bound.min_peak) ++c.below_min_;
        else chosen.push_back(x.r);
      }
    } else {
      // A heap of the best `top` so far, the last of them in order at its front.
      const auto heap_order = [&](const detail::scope_record* a, const detail::scope_record* b) {
        return bound.before(key_of(a), key_of(b), bound.context);
      };
      chosen.reserve(std::min(bound.top, t.records.size()));
      for (const detail::record_ref& x : t.records) {
        if (x.r->max_peak < bound.min_peak) {
          ++c.below_min_;
          continue;
        }
        if (chosen.size() < bound.top) {
          chosen.push_back(x.r);
          std::push_heap(chosen.begin(), chosen.end(), heap_order);
          continue;
        }
        ++c.beyond_top_;
        if (heap_order(x.r, chosen.front())) {
          std::pop_heap(chosen.begin(), chosen.end(), heap_order);
          chosen.back() = x.r;
          std::push_heap(chosen.begin(), chosen.end(), heap_order);
        }
      }
    }
    std::size_t words = 0;
    for (const detail::scope_record* r : chosen) words += (detail::record_size(*r) + 7) / 8;
    c.records_.resize(words);
    c.scopes_.reserve(chosen.size());
    std::size_t at = 0;
    for (const detail::scope_record* r : chosen) {
      const std::size_t size = detail::record_size(*r);
      std::memcpy(c.records_.data() + at, r, size);
      c.scopes_.push_back(at);
      at += (size + 7) / 8;
    }
    folded.reserve(t.folded.size());
    for (const detail::folded_row& f : t.folded) folded.push_back(detail::entry_of(f));
    c.status_ = detail::status_of(t);
  }
  const auto record_at = [&c](std::size_t offset) {
    return reinterpret_cast<const detail::scope_record*>(c.records_.data() + offset);
  };
  std::sort(c.scopes_.begin(), c.scopes_.end(),
            [&](std::size_t a, std::size_t b) { return record_at(a)->name() < record_at(b)->name(); });
  // Accounts in name order: their pointers are sorted, not the entries (whose
  // moves were a third of a 10,000-entry copy's time).
  std::vector<account*> accounts = detail::all_accounts();
  std::sort(accounts.begin(), accounts.end(), [](const account* a, const account* b) { return a->name() < b->name(); });
  c.others_.reserve(accounts.size() + folded.size());
  for (account* a : accounts) {
    account_totals totals = a->totals();
    entry e;
    e.name = std::string(a->name());
    e.kind = entry_kind::account;
    e.peak_bytes = totals.peak_bytes;
    e.at_peak = std::move(totals.at_peak);
    e.live_bytes = totals.live_bytes;
    e.allocated_bytes = totals.allocated_bytes;
    e.allocations = totals.allocations;
    e.frees = totals.frees;
    e.live_by_tag = std::move(totals.live_by_tag);
    e.tags_used = std::move(totals.tags_used);
    c.others_.push_back(std::move(e));
  }
  std::sort(folded.begin(), folded.end(), [](const entry& a, const entry& b) {
    const bool ao = a.name == detail::other_row, bo = b.name == detail::other_row;
    return ao != bo ? bo : a.name < b.name;
  });
  for (entry& e : folded) c.others_.push_back(std::move(e));
  return c;
}

table_copy table_copy::of(std::vector<entry> entries) {
  table_copy c;
  c.others_ = std::move(entries);
  return c;
}

void table_copy::read(std::size_t i, entry& out) const {
  if (i < scopes_.size()) {
    detail::read_scope(*reinterpret_cast<const detail::scope_record*>(records_.data() + scopes_[i]), out);
  } else {
    out = others_.at(i - scopes_.size());
  }
}

entry_kind table_copy::kind(std::size_t i) const noexcept {
  return i < scopes_.size() ? entry_kind::scope : others_[i - scopes_.size()].kind;
}

std::string_view table_copy::name(std::size_t i) const noexcept {
  if (i < scopes_.size()) return reinterpret_cast<const detail::scope_record*>(records_.data() + scopes_[i])->name();
  return others_[i - scopes_.size()].name;
}

std::size_t table_copy::bytes_held() const noexcept {
  std::size_t n = records_.capacity() * sizeof(std::uint64_t) + scopes_.capacity() * sizeof(std::size_t) +
                  others_.capacity() * sizeof(entry);
  for (const entry& e : others_)
    n += e.name.capacity() + (e.at_peak.size() + e.live_by_tag.size()) * sizeof(tag_bytes) +
         e.tags_used.size() * sizeof(std::string);
  return n;
}

std::vector<entry> snapshot() {
  const table_copy c = table_copy::take();
  std::vector<entry> out(c.size());
  for (std::size_t i = 0; i < c.size(); ++i) c.read(i, out[i]);
  return out;
}

void reset_peaks() {
  for (account* a : detail::all_accounts()) a->reset_peak();
  detail::scope_table& t = detail::scope_table::get();
  detail::table_lock lock(t);
  // Active scopes see this at their next charge, credit or end: their run's
  // peak starts again from its net bytes then (the reset's moment: nothing
  // changed them in between).
  detail::peak_resets.fetch_add(1, std::memory_order_relaxed);
  for (const detail::record_ref& x : t.records) {
    // The breakdown is forgotten in place (the name stays first; the slack is
    // reused or reallocated by the next largest run).
    x.r->max_peak = 0;
    x.r->n_tags = 0;
    x.r->n_counters = 0;
  }
  // The overflow rows forget their largest folded peak too (the next entry
  // folded sets it again); their counts, times and sum of peaks stay.
  for (detail::folded_row& row : t.folded) row.peak_max = 0;
}

std::size_t scope_entry_count() {
  detail::scope_table& t = detail::scope_table::get();
  detail::table_lock lock(t);
  return t.records.size();
}

std::size_t account_entry_count() { return detail::all_accounts().size(); }

void set_table_max(std::size_t max) {
  detail::scope_table& t = detail::scope_table::get();
  detail::table_lock lock(t);
  t.max.store(max, std::memory_order_relaxed);
  detail::compact(t);
}

std::size_t table_max() noexcept {
  return detail::scope_table::get().max.load(std::memory_order_relaxed);
}

table_status table_status_now() {
  detail::scope_table& t = detail::scope_table::get();
  detail::table_lock lock(t);
  return detail::status_of(t);
}

}  // namespace arenastat
