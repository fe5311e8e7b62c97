// bench_truth: one realistic multi-component workload whose every tracked
// figure is checked against sources that do not depend on arenastat
// (side by side, on one workload; docs/truth.md).
//
// Components (each with a shape the workload knows):
//   compiler  two worker threads compile tasks; each task is a scope
//             "compile/<method>" with a nested scope ".../regalloc"; the IR
//             lives in arena_resources (account "compiler") whose upstream is
//             a tracking_resource "compiler/chunks/w<k>" (a stacked layer);
//             one task in 101 is pathological and hits its 4 MiB limit;
//   symbols   a std::pmr::unordered_map of interned names over a
//             tracking_resource "symbols", filled and thinned on its thread;
//   cache     an arenastat tinylfu cache ("cache") warmed with a Zipfian
//             read-through load on its thread;
//   queue     a producer/consumer queue of messages allocated through a
//             tracking_resource "queue" over a jemalloc_resource (a jemalloc
//             arena of its own); the consumer frees them on its thread and
//             retains every 4th message up to a byte budget.
//
// Below every tracked layer sits a counting_resource of the workload's own:
// it counts bytes, peak and (for the jemalloc arena) jemalloc's size classes
// with atomics, and per thread a stack of `window`s (one opened beside each
// scope) records net bytes and the peak since the window opened. Under the
// counting rule (docs/concepts.md) a scope is charged once per byte, by the
// outermost tracked resource, and an account with what passes through it, so:
//   scope peak        == its window's peak          (exact)
//   account peak/live == its counting layer's       (exact with one thread;
//                        accounts fed by two threads: live exact at rest,
//                        peak within the documented lag).
// The bottom of each heap component is a distinct noinline function
// (compiler_heap_alloc, symbols_heap_alloc, cache_heap_alloc) so that
// heaptrack attributes each component to its own allocation site
// (scripts/truth.sh compares).
//
// Usage: bench_truth [--scale=F] [--quick] [--mode=tracked|plain]
//                    [--only=all|compiler|symbols|cache|queue] [--json[=FILE]]
// Exit status: 0 all checks met (or not applicable), 1 a check failed,
// 2 usage or environment error (e.g. an unreadable /proc file).
#include <arenastat/arenastat.hpp>
#include <arenastat/cache/cache.hpp>
#include <arenastat/jemalloc_resource.hpp>

#include <jemalloc/jemalloc.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <memory_resource>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "args.hpp"
#include "zipf.hpp"

namespace {

constexpr std::string_view program = "bench_truth";
constexpr std::string_view usage =
    "bench_truth [--scale=F] [--quick] [--mode=tracked|plain] [--only=all|compiler|symbols|cache|queue] [--json[=FILE]]";

// ---------------------------------------------------------------------------
// Allocation sites: one distinct function per heap component, never inlined,
// never tail-called (the asm after the call), never folded with its twins (each
// bumps its own counter), so heaptrack's backtraces name the component.

std::atomic<std::uint64_t> compiler_site_calls{0}, symbols_site_calls{0}, cache_site_calls{0};

// malloc, not operator new: Debian's libjemalloc also defines operator new,
// which does not go through malloc, so heaptrack (which intercepts malloc,
// aligned_alloc, free, ...) would not see it.
inline void* heap_new(std::size_t n, std::size_t a) {
  void* p = a > alignof(std::max_align_t) ? std::aligned_alloc(a, (n + a - 1) / a * a) : std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
inline void heap_delete(void* p, std::size_t, std::size_t) noexcept { std::free(p); }

[[gnu::noinline]] void* compiler_heap_alloc(std::size_t n, std::size_t a) {
  void* p = heap_new(n, a);
  compiler_site_calls.fetch_add(1, std::memory_order_relaxed);
  asm volatile("" : : "r"(p) : "memory");
  return p;
}
[[gnu::noinline]] void* symbols_heap_alloc(std::size_t n, std::size_t a) {
  void* p = heap_new(n, a);
  symbols_site_calls.fetch_add(1, std::memory_order_relaxed);
  asm volatile("" : : "r"(p) : "memory");
  return p;
}
[[gnu::noinline]] void* cache_heap_alloc(std::size_t n, std::size_t a) {
  void* p = heap_new(n, a);
  cache_site_calls.fetch_add(1, std::memory_order_relaxed);
  asm volatile("" : : "r"(p) : "memory");
  return p;
}

using alloc_fn = void* (*)(std::size_t, std::size_t);

// A memory_resource that allocates through one site function.
class site_resource final : public std::pmr::memory_resource {
 public:
  explicit site_resource(alloc_fn f) : alloc_(f) {}

 private:
  void* do_allocate(std::size_t n, std::size_t a) override { return alloc_(n, a); }
  void do_deallocate(void* p, std::size_t n, std::size_t a) override { heap_delete(p, n, a); }
  bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override { return this == &o; }
  alloc_fn alloc_;
};

// ---------------------------------------------------------------------------
// The workload's own count.

// Net bytes passing through the window-noting counting layers on this thread
// since the window opened, and the highest such value (never below 0): what
// a scope opened at the same moment must show under the counting rule.
struct window {
  std::int64_t net = 0;
  std::int64_t peak = 0;
  window* outer;
  window();
  ~window();
  window(const window&) = delete;
  window& operator=(const window&) = delete;
};
thread_local window* tls_window = nullptr;
window::window() : outer(tls_window) { tls_window = this; }
window::~window() { tls_window = outer; }

inline void note_windows(std::int64_t d) noexcept {
  for (window* w = tls_window; w != nullptr; w = w->outer) {
    w->net += d;
    if (w->net > w->peak) w->peak = w->net;
  }
}

// How the blocks below a counting layer are sized by jemalloc (jemalloc is
// the process's malloc here: Debian's jemalloc is unprefixed).
enum class sizing {
  malloc,          // heap_new: malloc(n) -> nallocx(n, 0); aligned_alloc -> with the alignment
  jemalloc_arena,  // jemalloc_resource: mallocx(max(n, 1), MALLOCX_ALIGN(a))
};

// Counts what passes through it: live bytes, peak, calls, and the bytes
// jemalloc really reserves for the live blocks (nallocx: jemalloc's own answer).
class counting_resource final : public std::pmr::memory_resource {
 public:
  counting_resource(std::pmr::memory_resource* upstream, bool note_windows, sizing how = sizing::malloc)
      : up_(upstream), windows_(note_windows), how_(how) {}

  std::int64_t live() const noexcept { return live_.load(); }
  std::int64_t peak() const noexcept { return peak_.load(); }
  std::uint64_t allocations() const noexcept { return allocs_.load(); }
  std::int64_t class_live() const noexcept { return class_live_.load(); }
  std::int64_t largest_block() const noexcept { return largest_.load(); }

 private:
  std::int64_t je_class(std::size_t n, std::size_t a) const {
    // The arena flag does not change the size; the alignment may.
    if (how_ == sizing::jemalloc_arena) return static_cast<std::int64_t>(nallocx(n == 0 ? 1 : n, MALLOCX_ALIGN(a)));
    if (a > alignof(std::max_align_t)) return static_cast<std::int64_t>(nallocx((n + a - 1) / a * a, MALLOCX_ALIGN(a)));
    return static_cast<std::int64_t>(nallocx(n == 0 ? 1 : n, 0));
  }
  void* do_allocate(std::size_t n, std::size_t a) override {
    void* p = up_->allocate(n, a);
    const auto b = static_cast<std::int64_t>(n);
    const std::int64_t now = live_.fetch_add(b, std::memory_order_relaxed) + b;
    std::int64_t old = peak_.load(std::memory_order_relaxed);
    while (now > old && !peak_.compare_exchange_weak(old, now, std::memory_order_relaxed)) {
    }
    std::int64_t big = largest_.load(std::memory_order_relaxed);
    while (b > big && !largest_.compare_exchange_weak(big, b, std::memory_order_relaxed)) {
    }
    allocs_.fetch_add(1, std::memory_order_relaxed);
    class_live_.fetch_add(je_class(n, a), std::memory_order_relaxed);
    if (windows_) note_windows(b);
    return p;
  }
  void do_deallocate(void* p, std::size_t n, std::size_t a) override {
    const auto b = static_cast<std::int64_t>(n);
    live_.fetch_sub(b, std::memory_order_relaxed);
    class_live_.fetch_sub(je_class(n, a), std::memory_order_relaxed);
    if (windows_) note_windows(-b);
    up_->deallocate(p, n, a);
  }
  bool do_is_equal(const std::pmr::memory_resource& o) const noexcept override { return this == &o; }

  std::pmr::memory_resource* up_;
  bool windows_;
  sizing how_;
  std::atomic<std::int64_t> live_{0}, peak_{0}, class_live_{0}, largest_{0};
  std::atomic<std::uint64_t> allocs_{0};
};

// The plain run's arenas: a hook that charges nothing, but refuses a chunk
// past the task's limit as the tracked run's scope does, so that both runs do
// the same work (a pathological task stops at its limit in both).
thread_local std::int64_t plain_limit = 0;  // 0: none
thread_local std::int64_t plain_used = 0;   // chunk bytes the task's arenas hold
class null_hook final : public arenastat::grow_hook {
 public:
  void admit(arenastat::tag_id, std::size_t bytes) override {
    if (plain_limit != 0 && plain_used + static_cast<std::int64_t>(bytes) > plain_limit)
      throw arenastat::limit_exceeded("plain", static_cast<std::uint64_t>(plain_limit), plain_used, bytes);
  }
  void on_acquire(arenastat::charge_stamp&, arenastat::tag_id, std::size_t bytes, arenastat::account*) override {
    plain_used += static_cast<std::int64_t>(bytes);
  }
  void on_release(const arenastat::charge_stamp&, std::size_t bytes) noexcept override {
    plain_used -= static_cast<std::int64_t>(bytes);
  }
};
null_hook the_null_hook;

// ---------------------------------------------------------------------------
// Options and results.

struct options {
  double scale = 1.0;
  bool quick = false;
  bool tracked = true;
  bool json = false;
  std::string json_file;  // --json=FILE: the JSON goes there (stdout keeps the table)
  std::string only = "all";
  bool runs(std::string_view c) const { return only == "all" || only == c; }
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--quick") {
      o.quick = true;
      o.scale = 1.0 / 16;
    } else if (a == "--json") {
      o.json = true;
    } else if (a.starts_with("--json=")) {
      o.json_file = std::string(a.substr(7));
      if (o.json_file.empty()) arenastat::bench::usage_error(program, usage, "--json= needs a file name");
    } else if (a.starts_with("--scale=")) {
      const std::string v(a.substr(8));
      char* end = nullptr;
      errno = 0;
      const double s = std::strtod(v.c_str(), &end);
      if (v.empty() || *end != '\0' || errno != 0 || !(s >= 0.01 && s <= 16))
        arenastat::bench::usage_error(program, usage, "bad value for --scale: '" + v + "' (expected 0.01..16)");
      o.scale = s;
    } else if (a.starts_with("--mode=")) {
      const std::string_view m = a.substr(7);
      if (m == "tracked") o.tracked = true;
      else if (m == "plain") o.tracked = false;
      else arenastat::bench::usage_error(program, usage, "bad value for --mode: '" + std::string(m) + "'");
    } else if (a.starts_with("--only=")) {
      o.only = std::string(a.substr(7));
      if (o.only != "all" && o.only != "compiler" && o.only != "symbols" && o.only != "cache" && o.only != "queue")
        arenastat::bench::usage_error(program, usage, "bad value for --only: '" + o.only + "'");
    } else {
      arenastat::bench::usage_error(program, usage, "unknown option '" + std::string(a) + "'");
    }
  }
  return o;
}

// Per-run comparison of a scope's peak with its window's.
struct scope_tally {
  std::uint64_t runs = 0, exact = 0;
  std::int64_t max_abs_diff = 0;
  std::string first_miss;  // "name: measured M, expected E"
  void add(const std::string& name, std::int64_t measured, std::int64_t expected) {
    ++runs;
    if (measured == expected) {
      ++exact;
      return;
    }
    max_abs_diff = std::max(max_abs_diff, std::abs(measured - expected));
    if (first_miss.empty())
      first_miss = name + ": measured " + std::to_string(measured) + ", expected " + std::to_string(expected);
  }
  void merge(const scope_tally& o) {
    runs += o.runs;
    exact += o.exact;
    max_abs_diff = std::max(max_abs_diff, o.max_abs_diff);
    if (first_miss.empty()) first_miss = o.first_miss;
  }
};

// Per scope name: runs, the largest expected peak, expected limit hits.
struct name_expectation {
  std::uint64_t runs = 0;
  std::int64_t largest_peak = 0;
  std::uint64_t ooms = 0;
};

std::string with_commas(std::int64_t v) {
  const std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out = v < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

struct check_row {
  std::string check, measured, goal;
  std::optional<bool> met;  // nullopt: not applicable
  std::string note;
};

// ---------------------------------------------------------------------------
// Component: the compiler.

constexpr std::size_t compiler_workers = 2;
constexpr std::uint64_t patho_limit = 4u << 20;

struct ir_node {
  int opcode;
  std::pmr::vector<ir_node*> inputs;
  ir_node(int op, std::pmr::memory_resource* mr) : opcode(op), inputs(mr) {}
};

std::string method_name(std::uint64_t i) {
  static const char* const classes[] = {"java.lang.String", "java.util.HashMap", "demo.Parser", "demo.Optimizer"};
  static const char* const methods[] = {"hashCode", "equals", "put", "resize", "parse", "fold"};
  return std::string("compile/") + classes[i % 4] + "/" + methods[(i / 4) % 6];  // 24 names
}

struct compiler_component {
  bool tracked;
  site_resource site{compiler_heap_alloc};
  counting_resource all{&site, false};  // the whole component (both workers)
  std::optional<counting_resource> per_worker[compiler_workers];
  std::optional<arenastat::tracking_resource> chunks[compiler_workers];
  std::uint64_t tasks = 0;
  // Results, written by the workers.
  std::mutex mu;
  scope_tally outer, inner;
  std::map<std::string, name_expectation> names;
  std::uint64_t patho_runs = 0, patho_ooms = 0, patho_over_limit = 0;
  std::int64_t patho_max_window = 0;

  explicit compiler_component(bool t, std::uint64_t n) : tracked(t), tasks(n) {
    for (std::size_t w = 0; w < compiler_workers; ++w) {
      per_worker[w].emplace(&all, true);
      if (tracked) chunks[w].emplace("compiler/chunks/w" + std::to_string(w), &*per_worker[w]);
    }
  }
  std::pmr::memory_resource* upstream(std::size_t w) {
    return tracked ? static_cast<std::pmr::memory_resource*>(&*chunks[w]) : &*per_worker[w];
  }

  void task(std::size_t w, std::uint64_t t, std::mt19937_64& rng, scope_tally& outer_t, scope_tally& inner_t,
            std::map<std::string, name_expectation>& names_t) {
    const std::string name = method_name(t);
    const bool patho = t % 101 == 50;
    arenastat::arena_options node_opts{.initial_chunk = 16 << 10, .growth_factor = 2.0, .max_chunk = 1 << 20,
                                       .account = tracked ? "compiler" : "", .hook = tracked ? nullptr : &the_null_hook};
    arenastat::arena_options side_opts{.initial_chunk = 8 << 10, .growth_factor = 2.0, .max_chunk = 256 << 10,
                                       .account = tracked ? "compiler" : "", .hook = tracked ? nullptr : &the_null_hook};
    std::optional<arenastat::scope> s;
    if (tracked) s.emplace(name, arenastat::scope_options{.limit_bytes = patho ? patho_limit : 0});
    plain_limit = !tracked && patho ? static_cast<std::int64_t>(patho_limit) : 0;
    plain_used = 0;
    window win;
    bool oom = false;
    try {
      arenastat::arena_resource nodes{"node", node_opts, upstream(w)};
      const std::size_t size = patho ? 400000 : 2000 + static_cast<std::size_t>(rng() % 60000);
      std::pmr::polymorphic_allocator<ir_node> alloc{&nodes};
      std::pmr::vector<ir_node*> graph{&nodes};
      for (std::size_t i = 0; i < size; ++i) {
        ir_node* n = alloc.new_object<ir_node>(static_cast<int>(rng() % 64), &nodes);
        const std::size_t fan = graph.empty() ? 0 : 1 + rng() % 3;
        for (std::size_t k = 0; k < fan; ++k) n->inputs.push_back(graph[rng() % graph.size()]);
        graph.push_back(n);
      }
      if (s) s->set_counter("nodes", static_cast<std::int64_t>(graph.size()));
      {  // register allocation: side tables in an arena of their own, in a nested scope
        const std::string inner_name = name + "/regalloc";
        std::optional<arenastat::scope> r;
        if (tracked) r.emplace(inner_name);
        window rwin;
        std::int64_t r_peak = 0;
        {
          arenastat::arena_resource side{"resource", side_opts, upstream(w)};
          std::pmr::vector<int> live_ranges{graph.size() * 2, &side};
          std::pmr::unordered_map<const ir_node*, int> interference{&side};
          for (std::size_t i = 0; i < graph.size(); i += 3) interference[graph[i]] = graph[i]->opcode;
          for (std::size_t i = 0; i < live_ranges.size(); ++i) live_ranges[i] = static_cast<int>(i ^ rng());
        }
        if (r) {
          r_peak = static_cast<std::int64_t>(r->peak_bytes());
          inner_t.add(inner_name, r_peak, rwin.peak);
        }
        name_expectation& e = names_t[inner_name];
        ++e.runs;
        e.largest_peak = std::max(e.largest_peak, rwin.peak);
      }
    } catch (const arenastat::limit_exceeded&) {
      oom = true;
    }
    if (s) outer_t.add(name, static_cast<std::int64_t>(s->peak_bytes()), win.peak);
    name_expectation& e = names_t[name];
    ++e.runs;
    e.largest_peak = std::max(e.largest_peak, win.peak);
    if (patho) {
      std::lock_guard lock(mu);
      ++patho_runs;
      if (oom) ++patho_ooms, ++e.ooms;
      if (win.peak > static_cast<std::int64_t>(patho_limit)) ++patho_over_limit;
      patho_max_window = std::max(patho_max_window, win.peak);
    }
  }

  void worker(std::size_t w) {
    std::mt19937_64 rng(1802 + w);
    scope_tally o, i;
    std::map<std::string, name_expectation> n;
    for (std::uint64_t t = w; t < tasks; t += compiler_workers) task(w, t, rng, o, i, n);
    std::lock_guard lock(mu);
    outer.merge(o);
    inner.merge(i);
    for (auto& [k, v] : n) {
      name_expectation& e = names[k];
      e.runs += v.runs;
      e.largest_peak = std::max(e.largest_peak, v.largest_peak);
      e.ooms += v.ooms;
    }
  }
};

// ---------------------------------------------------------------------------
// Component: the symbol table.

struct symbols_component {
  bool tracked;
  std::uint64_t count;
  site_resource site{symbols_heap_alloc};
  counting_resource counting{&site, true};
  std::optional<arenastat::tracking_resource> tracking;
  std::optional<std::pmr::unordered_map<std::pmr::string, std::uint64_t>> table;
  scope_tally scope_check;
  std::int64_t window_peak = 0;

  symbols_component(bool t, std::uint64_t n) : tracked(t), count(n) {
    if (tracked) tracking.emplace("symbols", &counting);
    table.emplace(tracked ? static_cast<std::pmr::memory_resource*>(&*tracking) : &counting);
  }
  static std::string symbol(std::uint64_t i) {
    static const char* const ns[] = {"std::", "boost::container::", "arenastat::detail::", "app::"};
    std::string s = ns[i % 4];
    s += "Type" + std::to_string(i * 2654435761u % 100000) + "::member_" + std::to_string(i);
    s.append(i % 23, 'x');
    return s;
  }
  void run() {
    std::optional<arenastat::scope> s;
    if (tracked) s.emplace("symbols/load");
    window win;
    auto& m = *table;
    std::pmr::memory_resource* mr = m.get_allocator().resource();
    for (std::uint64_t i = 0; i < count; ++i) {
      m.try_emplace(std::pmr::string(symbol(i), mr), i);
      if (i % 4 == 3 && i >= 2000) m.erase(std::pmr::string(symbol(i - 2000), mr));
    }
    if (s) scope_check.add("symbols/load", static_cast<std::int64_t>(s->peak_bytes()), win.peak);
    window_peak = win.peak;
  }
};

// ---------------------------------------------------------------------------
// Component: the cache.

using truth_cache = arenastat::basic_cache<std::uint64_t, std::uint64_t, arenastat::tinylfu>;

struct cache_component {
  bool tracked;
  site_resource site{cache_heap_alloc};
  counting_resource counting{&site, true};
  truth_cache cache;
  std::optional<arenastat::bench::zipf_params> zipf;
  std::uint64_t ops = 0;
  std::uint64_t checksum = 0;
  scope_tally scope_check;
  std::int64_t window_peak = 0;

  cache_component(bool t, std::uint64_t max_bytes)
      : tracked(t), cache("cache", arenastat::cache_options{.max_bytes = max_bytes, .track = t}, &counting) {
    const std::uint64_t cap = cache.stats().capacity;  // workload sizing only
    zipf.emplace(cap * 4, 0.99);
    ops = cap * 3;
  }
  void run() {
    std::optional<arenastat::scope> s;
    if (tracked) s.emplace("cache/warm");
    window win;
    arenastat::bench::zipf_generator gen{*zipf, 1802};
    for (std::uint64_t i = 0; i < ops; ++i)
      checksum += cache.get_or_load(gen.next(), [](std::uint64_t k) { return k * 2 + 11; });
    if (s) scope_check.add("cache/warm", static_cast<std::int64_t>(s->peak_bytes()), win.peak);
    window_peak = win.peak;
  }
};

// ---------------------------------------------------------------------------
// Component: the queue on a jemalloc arena of its own.

struct message {
  std::uint64_t id;
  std::pmr::vector<std::uint32_t> payload;
  message(std::uint64_t i, std::pmr::memory_resource* mr) : id(i), payload(mr) {}
};

struct queue_component {
  bool tracked;
  std::uint64_t messages;
  std::int64_t retain_budget;
  arenastat::jemalloc_resource je;
  counting_resource counting{&je, true, sizing::jemalloc_arena};
  std::optional<arenastat::tracking_resource> tracking;
  std::pmr::memory_resource* mr;

  std::mutex mu;
  std::condition_variable cv_not_empty, cv_not_full;
  std::deque<message*> q;
  bool done = false;
  std::deque<message*> retained;  // handed from the consumer to main
  std::int64_t retained_bytes = 0;
  scope_tally produce_check, consume_check;
  std::int64_t produce_window_peak = 0, consume_window_peak = 0;
  std::uint64_t checksum = 0;

  queue_component(bool t, std::uint64_t n, std::int64_t budget) : tracked(t), messages(n), retain_budget(budget) {
    if (tracked) tracking.emplace("queue", &counting);
    mr = tracked ? static_cast<std::pmr::memory_resource*>(&*tracking) : &counting;
  }
  ~queue_component() { free_retained(); }

  // Built by appending, as messages assembled from parts are: the payload
  // grows geometrically.
  message* make_message(std::uint64_t id, std::mt19937_64& rng) {
    std::pmr::polymorphic_allocator<message> alloc{mr};
    message* m = alloc.new_object<message>(id, mr);
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    const auto n = static_cast<std::size_t>(16.0 * std::pow(512.0, u));  // log-uniform 16..8192
    for (std::size_t i = 0; i < n; ++i) m->payload.push_back(static_cast<std::uint32_t>(id * 31 + i));
    return m;
  }
  void destroy(message* m) {
    std::pmr::polymorphic_allocator<message> alloc{mr};
    alloc.delete_object(m);
  }
  static std::int64_t bytes_of(const message* m) {
    return static_cast<std::int64_t>(sizeof(message) + m->payload.capacity() * sizeof(std::uint32_t));
  }
  void producer() {
    std::optional<arenastat::scope> s;
    if (tracked) s.emplace("queue/produce");
    window win;
    std::mt19937_64 rng(77);
    for (std::uint64_t i = 0; i < messages; ++i) {
      message* m = make_message(i, rng);
      std::unique_lock lock(mu);
      cv_not_full.wait(lock, [&] { return q.size() < 256; });
      q.push_back(m);
      lock.unlock();
      cv_not_empty.notify_one();
    }
    {
      std::lock_guard lock(mu);
      done = true;
    }
    cv_not_empty.notify_one();
    if (s) produce_check.add("queue/produce", static_cast<std::int64_t>(s->peak_bytes()), win.peak);
    produce_window_peak = win.peak;
  }
  void consumer() {
    std::optional<arenastat::scope> s;
    if (tracked) s.emplace("queue/consume");
    window win;
    std::deque<message*> keep;
    std::int64_t kept = 0;
    std::uint64_t sum = 0;
    for (;;) {
      std::unique_lock lock(mu);
      cv_not_empty.wait(lock, [&] { return !q.empty() || done; });
      if (q.empty()) break;
      message* m = q.front();
      q.pop_front();
      lock.unlock();
      cv_not_full.notify_one();
      for (std::uint32_t v : m->payload) sum += v;
      if (m->id % 4 == 0) {
        keep.push_back(m);
        kept += bytes_of(m);
        while (kept > retain_budget) {
          kept -= bytes_of(keep.front());
          destroy(keep.front());
          keep.pop_front();
        }
      } else {
        destroy(m);
      }
    }
    if (s) consume_check.add("queue/consume", static_cast<std::int64_t>(s->peak_bytes()), win.peak);
    consume_window_peak = win.peak;
    std::lock_guard lock(mu);
    retained = std::move(keep);
    retained_bytes = kept;
    checksum = sum;
  }
  void free_retained() {
    for (message* m : retained) destroy(m);
    retained.clear();
    retained_bytes = 0;
  }
};

// ---------------------------------------------------------------------------
// Outside sources, read directly and validated.

[[noreturn]] void env_error(const std::string& msg) {
  std::fprintf(stderr, "bench_truth: %s\n", msg.c_str());
  std::exit(2);
}

// Resident bytes of this process: /proc/self/smaps_rollup "Rss:" (kB),
// or /proc/self/statm's second field (pages) where smaps_rollup is missing.
std::int64_t read_rss_bytes(std::string* source) {
  if (std::ifstream f{"/proc/self/smaps_rollup"}) {
    std::string line;
    while (std::getline(f, line)) {
      if (!line.starts_with("Rss:")) continue;
      std::istringstream in(line.substr(4));
      std::int64_t kb = -1;
      std::string unit;
      if (!(in >> kb >> unit) || kb < 0 || unit != "kB")
        env_error("cannot parse the Rss line of /proc/self/smaps_rollup: '" + line + "'");
      *source = "smaps_rollup";
      return kb * 1024;
    }
    env_error("/proc/self/smaps_rollup has no 'Rss:' line");
  }
  std::ifstream f{"/proc/self/statm"};
  std::int64_t size = -1, resident = -1;
  if (!f || !(f >> size >> resident) || resident < 0)
    env_error("cannot read /proc/self/smaps_rollup nor the resident field of /proc/self/statm");
  *source = "statm";
  return resident * static_cast<std::int64_t>(sysconf(_SC_PAGESIZE));
}

void je_ctl(const char* name, void* out, std::size_t* outlen, void* in, std::size_t inlen) {
  const int rc = mallctl(name, out, outlen, in, inlen);
  if (rc != 0)
    env_error(std::string("mallctl(\"") + name + "\") failed with errno " + std::to_string(rc) + ": " +
              std::strerror(rc));
}

// stats.arenas.<i>.small.allocated + large.allocated after an epoch refresh.
std::int64_t je_arena_allocated(unsigned arena) {
  std::uint64_t epoch = 1;
  std::size_t len = sizeof(epoch);
  je_ctl("epoch", &epoch, &len, &epoch, sizeof(epoch));
  std::int64_t total = 0;
  for (const char* part : {"small", "large"}) {
    const std::string name = "stats.arenas." + std::to_string(arena) + "." + part + ".allocated";
    std::size_t v = 0;
    std::size_t vlen = sizeof(v);
    je_ctl(name.c_str(), &v, &vlen, nullptr, 0);
    total += static_cast<std::int64_t>(v);
  }
  return total;
}

// A global jemalloc figure (stats.<name>) after an epoch refresh.
std::int64_t je_global(const char* name) {
  std::uint64_t epoch = 1;
  std::size_t len = sizeof(epoch);
  je_ctl("epoch", &epoch, &len, &epoch, sizeof(epoch));
  std::size_t v = 0;
  std::size_t vlen = sizeof(v);
  je_ctl((std::string("stats.") + name).c_str(), &v, &vlen, nullptr, 0);
  return static_cast<std::int64_t>(v);
}

struct je_figures {
  std::int64_t allocated, active, metadata, resident;
  static je_figures read() {
    return {je_global("allocated"), je_global("active"), je_global("metadata"), je_global("resident")};
  }
};

// Gives every unused page back to the kernel: glibc's malloc_trim (no effect
// when jemalloc is the malloc, as here) and jemalloc's purge of all arenas.
void trim_heaps() {
  malloc_trim(0);
  const std::string name = "arena." + std::to_string(MALLCTL_ARENAS_ALL) + ".purge";
  je_ctl(name.c_str(), nullptr, nullptr, nullptr, 0);
}

double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}

const arenastat::entry* find_entry(const std::vector<arenastat::entry>& all, std::string_view name,
                                   arenastat::entry_kind kind) {
  for (const auto& e : all)
    if (e.name == name && e.kind == kind) return &e;
  return nullptr;
}

std::string pct(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.3f%%", ratio * 100);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  const double sc = o.scale;
  const auto scaled = [&](double v) { return static_cast<std::uint64_t>(std::max(1.0, v * sc)); };

  // Components (constructed before the baseline: they hold nothing yet).
  std::optional<compiler_component> compiler;
  std::optional<symbols_component> symbols;
  std::optional<cache_component> cache;
  std::optional<queue_component> queue;
  if (o.runs("compiler")) compiler.emplace(o.tracked, scaled(1200));
  if (o.runs("symbols")) symbols.emplace(o.tracked, scaled(400000));
  if (o.runs("cache")) cache.emplace(o.tracked, scaled(128.0 * (1 << 20)));
  if (o.runs("queue"))
    queue.emplace(o.tracked, scaled(150000), static_cast<std::int64_t>(scaled(48.0 * (1 << 20))));

  trim_heaps();
  std::string rss_source;
  const std::int64_t rss_before = read_rss_bytes(&rss_source);
  const je_figures je_before = je_figures::read();

  const auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = cpu_seconds();
  {
    std::vector<std::jthread> threads;
    if (compiler)
      for (std::size_t w = 0; w < compiler_workers; ++w) threads.emplace_back([&, w] { compiler->worker(w); });
    if (symbols) threads.emplace_back([&] { symbols->run(); });
    if (cache) threads.emplace_back([&] { cache->run(); });
    if (queue) {
      threads.emplace_back([&] { queue->producer(); });
      threads.emplace_back([&] { queue->consumer(); });
    }
  }  // joined: every thread that used the jemalloc arena has exited (its caches destroyed)
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const double cpu = cpu_seconds() - cpu0;

  nlohmann::json j;
  j["mode"] = o.tracked ? "tracked" : "plain";
  j["only"] = o.only;
  j["scale"] = sc;
  j["workload_seconds"] = wall;
  j["cpu_seconds"] = cpu;
  j["checksum"] = (cache ? cache->checksum : 0) + (queue ? queue->checksum : 0);

  std::vector<check_row> rows;
  if (o.tracked) {
    const auto snap = arenastat::snapshot();
    const auto acct = [&](std::string_view name) { return arenastat::account::get(name).totals(); };
    const auto exact_row = [&](std::string check, std::int64_t measured, std::int64_t expected) {
      rows.push_back({std::move(check), with_commas(measured) + " vs " + with_commas(expected), "exact",
                      measured == expected, ""});
    };
    const auto tally_row = [&](std::string check, const scope_tally& t) {
      rows.push_back({std::move(check),
                      std::to_string(t.exact) + "/" + std::to_string(t.runs) + " runs exact" +
                          (t.exact == t.runs ? "" : ", max diff " + with_commas(t.max_abs_diff)),
                      "exact", t.runs > 0 && t.exact == t.runs, t.first_miss});
    };
    nlohmann::json comps;

    // 1. jemalloc's own per-arena statistics.
    if (queue) {
      const std::int64_t je_bytes = je_arena_allocated(queue->je.arena_index());
      const auto q = acct("queue");
      const double diff = je_bytes == 0 ? 0.0 : static_cast<double>(q.live_bytes - je_bytes) / static_cast<double>(je_bytes);
      rows.push_back({"jemalloc arena " + std::to_string(queue->je.arena_index()) +
                          ": account 'queue' live vs small+large.allocated",
                      with_commas(q.live_bytes) + " vs " + with_commas(je_bytes) + " (" + pct(diff) + ")",
                      "within 2%", std::abs(diff) <= 0.02,
                      "difference = size-class rounding of live blocks (row below)"});
      exact_row("jemalloc arena: size classes of live blocks (nallocx, self-count) vs allocated",
                queue->counting.class_live(), je_bytes);
      comps["queue"] = {{"je_allocated", je_bytes},
                        {"je_size_class_bytes", queue->counting.class_live()},
                        {"account_live", q.live_bytes},
                        {"account_peak", q.peak_bytes},
                        {"self_live", queue->counting.live()},
                        {"self_peak", queue->counting.peak()}};
    }

    // 2. RSS growth vs tracked live bytes (each component counted once: its top account).
    {
      std::int64_t tracked_live = 0, classes = 0;
      if (compiler) tracked_live += acct("compiler").live_bytes, classes += compiler->all.class_live();
      if (symbols) tracked_live += acct("symbols").live_bytes, classes += symbols->counting.class_live();
      if (cache) tracked_live += acct("cache").live_bytes, classes += cache->counting.class_live();
      if (queue) tracked_live += acct("queue").live_bytes, classes += queue->counting.class_live();
      trim_heaps();
      const std::int64_t rss_after = read_rss_bytes(&rss_source);
      const je_figures je_after = je_figures::read();
      const auto mb = [](std::int64_t v) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(v) / 1e6);
        return std::string(buf);
      };
      rows.push_back({"RSS growth explained (MB): requested -> size classes -> jemalloc allocated, active, "
                      "metadata, resident growth -> RSS growth",
                      mb(tracked_live) + " -> " + mb(classes) + " -> " + mb(je_after.allocated - je_before.allocated) +
                          ", " + mb(je_after.active - je_before.active) + ", " +
                          mb(je_after.metadata - je_before.metadata) + ", " +
                          mb(je_after.resident - je_before.resident) + " -> " + mb(rss_after - rss_before),
                      "information", std::nullopt, ""});
      j["jemalloc_growth"] = {{"size_classes_of_tracked", classes},
                              {"allocated", je_after.allocated - je_before.allocated},
                              {"active", je_after.active - je_before.active},
                              {"metadata", je_after.metadata - je_before.metadata},
                              {"resident", je_after.resident - je_before.resident}};
      const std::int64_t growth = rss_after - rss_before;
      const double diff = tracked_live == 0 ? 0.0
                                            : static_cast<double>(growth - tracked_live) / static_cast<double>(tracked_live);
      const bool applies = tracked_live >= 100'000'000;
      rows.push_back({"RSS growth (" + rss_source + ", after trim) vs tracked live total",
                      with_commas(growth) + " vs " + with_commas(tracked_live) + " (" + pct(diff) + ")",
                      "within 10% when tracked >= 100 MB",
                      applies ? std::optional<bool>(std::abs(diff) <= 0.10) : std::nullopt,
                      applies ? "" : "tracked total below 100 MB: not applicable"});
      j["rss"] = {{"before", rss_before}, {"after", rss_after}, {"growth", growth}, {"tracked_live", tracked_live},
                  {"source", rss_source}};
    }

    // 3. Self-count: scopes and accounts.
    if (compiler) {
      tally_row("compiler: scope 'compile/*' peak vs self-count", compiler->outer);
      tally_row("compiler: nested scope 'compile/*/regalloc' peak vs self-count", compiler->inner);
      std::uint64_t names_ok = 0;
      std::string miss;
      for (const auto& [name, e] : compiler->names) {
        const arenastat::entry* t = find_entry(snap, name, arenastat::entry_kind::scope);
        const bool ok = t != nullptr && t->count == e.runs && static_cast<std::int64_t>(t->peak_bytes) == e.largest_peak &&
                        t->oom_count == e.ooms;
        if (ok) ++names_ok;
        else if (miss.empty())
          miss = name + (t == nullptr ? ": no entry"
                                      : ": runs " + std::to_string(t->count) + "/" + std::to_string(e.runs) + ", peak " +
                                            with_commas(static_cast<std::int64_t>(t->peak_bytes)) + "/" +
                                            with_commas(e.largest_peak) + ", oom " + std::to_string(t->oom_count) + "/" +
                                            std::to_string(e.ooms));
      }
      rows.push_back({"compiler: table rows (runs, largest peak, oom count) vs self-count",
                      std::to_string(names_ok) + "/" + std::to_string(compiler->names.size()) + " names exact", "exact",
                      names_ok == compiler->names.size(), miss});
      rows.push_back({"compiler: limit runs refused before upstream (self-count peak <= 4 MiB, oom)",
                      std::to_string(compiler->patho_ooms) + "/" + std::to_string(compiler->patho_runs) + " oom, " +
                          std::to_string(compiler->patho_over_limit) + " over the limit upstream (max " +
                          with_commas(compiler->patho_max_window) + ")",
                      "all oom, none over", compiler->patho_runs > 0 && compiler->patho_ooms == compiler->patho_runs &&
                                               compiler->patho_over_limit == 0,
                      ""});
      for (std::size_t w = 0; w < compiler_workers; ++w) {
        const auto a = acct("compiler/chunks/w" + std::to_string(w));
        exact_row("compiler: account 'compiler/chunks/w" + std::to_string(w) + "' peak vs self-count (1 thread)",
                  static_cast<std::int64_t>(a.peak_bytes), compiler->per_worker[w]->peak());
        exact_row("compiler: account 'compiler/chunks/w" + std::to_string(w) + "' live at rest",
                  a.live_bytes, compiler->per_worker[w]->live());
      }
      const auto c = acct("compiler");
      // Two threads feed it: the peak may lag by what the other worker holds
      // back (half the flush threshold: docs/concepts.md, "Threads") plus a
      // chunk in flight (taken, not yet charged).
      const std::int64_t lag = arenastat::account::flush_threshold / 2 + compiler->all.largest_block();
      const std::int64_t expected = compiler->all.peak();
      const auto measured = static_cast<std::int64_t>(c.peak_bytes);
      rows.push_back({"compiler: account 'compiler' peak vs self-count (2 threads)",
                      with_commas(measured) + " vs " + with_commas(expected),
                      "<= and within " + with_commas(lag), measured <= expected && measured >= expected - lag,
                      "lag bound: 32 KiB + largest chunk"});
      exact_row("compiler: account 'compiler' live at rest", c.live_bytes, compiler->all.live());
      comps["compiler"] = {{"account_peak", c.peak_bytes}, {"self_peak", compiler->all.peak()},
                           {"tasks", compiler->tasks}, {"site_calls", compiler_site_calls.load()}};
    }
    if (symbols) {
      tally_row("symbols: scope 'symbols/load' peak vs self-count", symbols->scope_check);
      const auto a = acct("symbols");
      exact_row("symbols: account peak vs self-count (1 thread)", static_cast<std::int64_t>(a.peak_bytes),
                symbols->counting.peak());
      exact_row("symbols: account live at rest", a.live_bytes, symbols->counting.live());
      comps["symbols"] = {{"account_peak", a.peak_bytes}, {"self_peak", symbols->counting.peak()},
                          {"account_live", a.live_bytes}, {"entries", symbols->table->size()}};
    }
    if (cache) {
      tally_row("cache: scope 'cache/warm' peak vs self-count", cache->scope_check);
      const auto a = acct("cache");
      exact_row("cache: account peak vs self-count (1 thread)", static_cast<std::int64_t>(a.peak_bytes),
                cache->counting.peak());
      exact_row("cache: account live at rest", a.live_bytes, cache->counting.live());
      comps["cache"] = {{"account_peak", a.peak_bytes}, {"self_peak", cache->counting.peak()},
                        {"account_live", a.live_bytes}, {"entries", cache->cache.stats().size}};
    }
    if (queue) {
      tally_row("queue: scope 'queue/produce' peak vs self-count", queue->produce_check);
      tally_row("queue: scope 'queue/consume' (frees of the producer's blocks) vs self-count", queue->consume_check);
      const auto a = acct("queue");
      exact_row("queue: account live at rest (freed on another thread)", a.live_bytes, queue->counting.live());
      const std::int64_t lag = arenastat::account::flush_threshold / 2 + queue->counting.largest_block();
      const std::int64_t expected = queue->counting.peak();
      const auto measured = static_cast<std::int64_t>(a.peak_bytes);
      rows.push_back({"queue: account peak vs self-count (2 threads)",
                      with_commas(measured) + " vs " + with_commas(expected), "<= and within " + with_commas(lag),
                      measured <= expected && measured >= expected - lag,
                      "lag bound: 32 KiB + a block being freed"});
    }
    j["components"] = comps;
  }

  // Output.
  int failed = 0;
  nlohmann::json jrows = nlohmann::json::array();
  for (const auto& r : rows) {
    if (r.met == false) ++failed;
    jrows.push_back({{"check", r.check}, {"measured", r.measured}, {"goal", r.goal},
                     {"met", r.met ? nlohmann::json(*r.met) : nlohmann::json(nullptr)}, {"note", r.note}});
  }
  j["checks"] = jrows;
  j["failed"] = failed;
  if (!o.json_file.empty()) {
    std::ofstream f{o.json_file};
    f << j.dump(2) << '\n';
    if (!f.flush()) env_error("cannot write " + o.json_file);
  }
  if (o.json) {
    std::puts(j.dump(2).c_str());
  } else {
    std::printf("bench_truth: mode %s, scale %g, components %s: workload %.3f s wall, %.3f s CPU\n",
                o.tracked ? "tracked" : "plain", sc, o.only.c_str(), wall, cpu);
    if (!rows.empty()) {
      std::printf("| check | measured | goal | met |\n|---|---|---|---|\n");
      for (const auto& r : rows)
        std::printf("| %s | %s | %s | %s |\n", r.check.c_str(), r.measured.c_str(), r.goal.c_str(),
                    !r.met ? "n/a" : *r.met ? "yes" : "**no**");
      for (const auto& r : rows)
        if (r.met == false && !r.note.empty()) std::printf("  not met: %s: %s\n", r.check.c_str(), r.note.c_str());
    }
  }
  if (queue) queue->free_retained();
  return failed == 0 ? 0 : 1;
}
