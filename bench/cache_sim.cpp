// cache_sim: replays cache traces through this project's policies (basic_cache
// with lru and tinylfu) and reference policies (sim/reference_policies.hpp),
// capacities in entries, every miss admitted; prints the hit rate per policy
// and size (docs/cache.md, "Trace-driven simulation").
//
//   cache_sim [options] TRACE... with options before the traces they apply to:
//     --sizes=N,N,...      capacities in entries (required before the first trace)
//     --policies=P,P,...   default: ref_lru,arc,lirs,opt,lru,tinylfu (also opt_bypass, caffeine,
//                          caffeine_fixed, caffeine_doorkeeper, tinylfu_fixed, tinylfu_w20,
//                          tinylfu_w50, tinylfu_w99)
//     --csv-column=N --csv-delimiter=C --csv-header   for csv traces
//     --max-requests=N     read at most N requests of each trace
//     --json               one JSON object on stdout (the table goes to stderr)
//     --check-lru          exit 1 unless lru and ref_lru hit exactly alike
//   TRACE: FORMAT:PATH (lirs, plain, csv, arc, longs; .gz/.xz decompressed) or
//          GENERATOR[:name=value,...] (loop, zipf, zipf-phase, scan, recency).
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "args.hpp"
#include "json_writer.hpp"
#include "sys.hpp"
#include "text_escape.hpp"
#include "arenastat/cache/cache.hpp"
#include "sim/reference_policies.hpp"
#include "sim/synthetic.hpp"
#include "sim/trace.hpp"

namespace {

using namespace arenastat;
using sim::trace;

constexpr std::string_view program = "cache_sim";
constexpr std::string_view usage =
    "cache_sim [--sizes=N,...] [--policies=P,...] [--csv-column=N] [--csv-delimiter=C] [--csv-header] "
    "[--max-requests=N] [--json] [--check-lru] TRACE...\n"
    "  TRACE: FORMAT:PATH (FORMAT lirs, plain, csv, arc or longs; .gz/.xz decompressed)\n"
    "         or GENERATOR[:name=value,...] (loop, zipf, zipf-phase, scan, recency)";

// Trace names and error messages are user data (paths, lines of a trace):
// printed for people through the one text escaper, so that a name cannot end
// a line or move a terminal's cursor.
std::string shown(std::string_view text) { return detail::escape_text(text); }

[[noreturn]] void fail(const std::string& msg) { bench::usage_error(program, usage, msg); }  // escapes msg

// Replays t through a policy object with access(key, position) -> hit.
template <class P>
std::uint64_t replay(P& p, const trace& t) {
  std::uint64_t hits = 0;
  for (std::size_t i = 0; i < t.keys.size(); ++i) hits += p.access(t.keys[i], i);
  return hits;
}

// This project's cache with policy Policy: get_or_load, so a miss is counted
// once and its key stored.
template <class Policy>
std::uint64_t replay_cache(const trace& t, std::size_t size) {
  basic_cache<std::uint64_t, std::uint64_t, Policy> c{"cache_sim", {.max_entries = size, .track = false}};
  std::uint64_t misses = 0;
  for (const std::uint32_t k : t.keys) c.get_or_load(k, [&](std::uint64_t) { ++misses; return std::uint64_t{0}; });
  return t.keys.size() - misses;
}

struct policy_entry {
  std::string_view name;
  std::function<std::uint64_t(const trace&, std::size_t, const std::vector<std::uint32_t>&)> run;
};

const std::vector<policy_entry>& registry() {
  static const std::vector<policy_entry> r = {
      {"ref_lru",
       [](const trace& t, std::size_t n, const auto&) { sim::reference_lru p(n, t.distinct); return replay(p, t); }},
      {"arc", [](const trace& t, std::size_t n, const auto&) { sim::arc p(n, t.distinct); return replay(p, t); }},
      {"lirs", [](const trace& t, std::size_t n, const auto&) { sim::lirs p(n, t.distinct); return replay(p, t); }},
      {"opt", [](const trace& t, std::size_t n, const auto& next) { sim::opt p(n, next, false); return replay(p, t); }},
      {"opt_bypass",
       [](const trace& t, std::size_t n, const auto& next) { sim::opt p(n, next, true); return replay(p, t); }},
      {"lru", [](const trace& t, std::size_t n, const auto&) { return replay_cache<lru>(t, n); }},
      {"tinylfu", [](const trace& t, std::size_t n, const auto&) { return replay_cache<tinylfu>(t, n); }},
      {"caffeine",  // Caffeine-style W-TinyLFU (reference_policies.hpp): climber and jitter
       [](const trace& t, std::size_t n, const auto&) { sim::caffeine_tinylfu p(n, t.distinct); return replay(p, t); }},
      {"caffeine_fixed",  // the same with the window fixed at 1%
       [](const trace& t, std::size_t n, const auto&) {
         sim::caffeine_tinylfu p(n, t.distinct, {.climb = false});
         return replay(p, t);
       }},
      {"caffeine_doorkeeper",  // the same with the climber and a doorkeeper
       [](const trace& t, std::size_t n, const auto&) {
         sim::caffeine_tinylfu p(n, t.distinct, {.doorkeeper = true});
         return replay(p, t);
       }},
      {"tinylfu_fixed",  // tinylfu with the window fixed at 1% (no window tuner)
       [](const trace& t, std::size_t n, const auto&) {
         return replay_cache<basic_tinylfu<1, 20, true, 8, true, true, false>>(t, n);
       }},
      {"tinylfu_w20",  // tinylfu with the window fixed at 20%
       [](const trace& t, std::size_t n, const auto&) {
         return replay_cache<basic_tinylfu<20, 20, true, 8, true, true, false>>(t, n);
       }},
      {"tinylfu_w50",  // tinylfu with the window fixed at 50%
       [](const trace& t, std::size_t n, const auto&) {
         return replay_cache<basic_tinylfu<50, 20, true, 8, true, true, false>>(t, n);
       }},
      {"tinylfu_w99",  // tinylfu with the window fixed at 99%
       [](const trace& t, std::size_t n, const auto&) {
         return replay_cache<basic_tinylfu<99, 20, true, 8, true, true, false>>(t, n);
       }},
  };
  return r;
}

const policy_entry* find_policy(std::string_view name) {
  for (const auto& p : registry())
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    const std::size_t cut = s.find(sep);
    out.push_back(s.substr(0, cut));
    if (cut == std::string_view::npos) return out;
    s.remove_prefix(cut + 1);
  }
}

// A trace of the command line, checked before any trace is read: a file's
// format and path, or a generator with its parameters.
struct trace_source {
  std::string spec;
  std::optional<sim::generator_spec> generator;
  sim::trace_format format{};
  std::string path;
};

trace_source check_trace(std::string_view spec) {
  const std::size_t colon = spec.find(':');
  const std::string head(spec.substr(0, colon));
  const std::string_view rest = colon == std::string_view::npos ? std::string_view{} : spec.substr(colon + 1);
  trace_source t{std::string(spec), std::nullopt, {}, {}};
  if (sim::is_synthetic(head)) {
    try {
      t.generator = sim::parse_generator(head, rest);
    } catch (const sim::trace_error& e) {
      fail(e.message());
    }
    return t;
  }
  if (colon == std::string_view::npos || !sim::parse_format(head, t.format))
    fail("bad trace '" + std::string(spec) +
         "' (expected FORMAT:PATH with FORMAT lirs, plain, csv, arc or longs, or a generator: loop, zipf, "
         "zipf-phase, scan, recency)");
  if (rest.empty()) fail("bad trace '" + std::string(spec) + "': no path after '" + head + ":'");
  t.path = std::string(rest);
  // A file that cannot be read is said before the first trace is simulated.
  if (const std::string why = sim::detail::unreadable(t.path); !why.empty()) {
    std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(program.size()), program.data(), shown(why).c_str());
    std::exit(1);
  }
  return t;
}

trace load(const trace_source& source, const sim::trace_options& opt) {
  if (source.generator) return sim::generate(*source.generator, opt.max_requests);
  sim::trace t = sim::read_trace(source.format, source.path, opt);
  t.name = source.spec;
  return t;
}

struct row {
  std::string trace;
  std::size_t requests, distinct, size;
  std::string_view policy;
  std::uint64_t hits;
};


}  // namespace

// Options apply to the traces after them: one after the last trace would
// apply to none (--json, --check-lru and --help apply to the whole run).
void check_no_option_after_last_trace(int argc, char** argv) {
  int last_trace = 0;
  for (int a = 1; a < argc; ++a)
    if (!std::string_view(argv[a]).starts_with("-")) last_trace = a;
  if (last_trace == 0) return;  // no trace: said later
  for (int a = last_trace + 1; a < argc; ++a) {
    const std::string_view arg = argv[a];
    if (arg == "--json" || arg == "--check-lru" || arg == "--help" || arg == "-h") continue;
    fail("option '" + std::string(arg) + "' comes after the last trace: options apply to the traces after them");
  }
}

// One trace of the run with the options that apply to it.
struct job {
  trace_source source;
  std::vector<std::size_t> sizes;
  std::vector<const policy_entry*> policies;
  sim::trace_options options;
};

// Every option and trace of the command line, checked before anything runs.
struct command_line {
  bool help = false, json = false, check_lru = false;
  std::vector<job> jobs;
};

command_line parse_command_line(int argc, char** argv) {
  command_line c;
  // --help, --json and --check-lru apply to the whole run wherever they stand.
  for (int a = 1; a < argc; ++a) {
    const std::string_view arg = argv[a];
    c.help |= arg == "--help" || arg == "-h";
    c.json |= arg == "--json";
    c.check_lru |= arg == "--check-lru";
  }
  if (c.help) return c;
  check_no_option_after_last_trace(argc, argv);
  std::vector<std::size_t> sizes;
  std::vector<const policy_entry*> policies;
  for (const char* n : {"ref_lru", "arc", "lirs", "opt", "lru", "tinylfu"}) policies.push_back(find_policy(n));
  sim::trace_options topt;
  for (int a = 1; a < argc; ++a) {
    const std::string_view arg = argv[a];
    if (arg == "--json" || arg == "--check-lru") continue;
    if (arg == "--csv-header") {
      topt.csv_header = true;
      continue;
    }
    if (arg.starts_with("--")) {
      const std::size_t eq = arg.find('=');
      const std::string_view opt = arg.substr(0, eq);
      if (eq == std::string_view::npos) {
        for (const std::string_view o : {"--sizes", "--policies", "--csv-column", "--csv-delimiter", "--max-requests"})
          if (arg == o) fail("option '" + std::string(arg) + "' needs a value: " + std::string(arg) + "=...");
        fail("unknown option '" + std::string(arg) + "'");
      }
      const std::string_view value = arg.substr(eq + 1);
      if (opt == "--sizes") {
        sizes.clear();
        for (std::string_view s : split(value, ',')) {
          sizes.push_back(bench::parse_count(program, usage, "--sizes", s, 2, 16'777'215));
          // A size given twice would print the same rows twice.
          if (std::count(sizes.begin(), sizes.end(), sizes.back()) > 1)
            fail("bad value for --sizes: " + std::to_string(sizes.back()) + " is given twice");
        }
      } else if (opt == "--policies") {
        policies.clear();
        for (std::string_view s : split(value, ',')) {
          const policy_entry* p = find_policy(s);
          if (!p) {
            std::string known;
            for (const auto& e : registry()) known += (known.empty() ? "" : ", ") + std::string(e.name);
            fail("bad value for --policies: unknown policy '" + std::string(s) + "' (known: " + known + ")");
          }
          if (std::find(policies.begin(), policies.end(), p) != policies.end())
            fail("bad value for --policies: '" + std::string(s) + "' is given twice");
          policies.push_back(p);
        }
      } else if (opt == "--csv-column") {
        topt.csv_column = static_cast<unsigned>(bench::parse_count(program, usage, opt, value, 1, 1000));
      } else if (opt == "--csv-delimiter") {
        if (value.size() != 1) fail("bad value for --csv-delimiter: '" + std::string(value) + "' (expected one character)");
        // A double quote starts a quoted field (trace.hpp, csv_field); a line
        // ending cannot be inside a line.
        if (value == "\"" || value == "\n" || value == "\r")
          fail("bad value for --csv-delimiter: a double quote or a line ending cannot separate fields");
        topt.csv_delimiter = value[0];
      } else if (opt == "--max-requests") {
        topt.max_requests = bench::parse_count(program, usage, opt, value, 1, UINT64_MAX);
      } else {
        fail("unknown option '" + std::string(arg) + "'");
      }
      continue;
    }
    if (sizes.empty()) fail("no --sizes before the trace '" + std::string(arg) + "'");
    if (c.check_lru) {
      // Without both there is nothing to compare (a missing one's hits were
      // UINT64_MAX: equal when both were missing, a difference when one was).
      bool lru = false, ref_lru = false;
      std::string names;
      for (const auto* p : policies) {
        lru |= p->name == "lru";
        ref_lru |= p->name == "ref_lru";
        if (!names.empty()) names += ',';
        names += p->name;
      }
      if (!lru || !ref_lru)
        fail("--check-lru compares lru with ref_lru: give both in --policies (the policies for '" + std::string(arg) +
             "' are " + names + ")");
    }
    c.jobs.push_back({check_trace(arg), sizes, policies, topt});
  }
  if (c.jobs.empty()) fail("no trace given");
  return c;
}

// Whether everything written to `f` so far reached it; says what failed if not.
bool written(std::FILE* f, std::string_view what) {
  errno = 0;
  if (std::fflush(f) == 0 && !std::ferror(f)) return true;
  std::fprintf(stderr, "%.*s: cannot write %.*s: %s\n", static_cast<int>(program.size()), program.data(),
               static_cast<int>(what.size()), what.data(), errno != 0 ? std::strerror(errno) : "write error");
  return false;
}

// What the run is doing (escaped already: the handler for running out of
// memory must not allocate to print it), and whether a table row is half
// written on `table` (the message then starts a line).
struct progress {
  std::string work = "reading the command line";  // escaped, for stderr
  std::string work_raw = work;                      // as it is, for the JSON
  bool mid_row = false;
  std::FILE* table = stdout;
  bool json = false;
  std::vector<row> rows;  // every row done, in order
};
progress now;

// --json: every row done and, for a run that stopped early (a trace that
// turned out bad, or too large for memory), why: "error" is that message (the
// one printed on stderr, without the program's name), null when the run ran
// to its end. So the traces simulated before a failure are not lost.
bool print_json(const std::string* error) {
  // The project's one JSON writer: valid JSON whatever bytes a trace's
  // path holds (bytes outside UTF-8 marked, distinct paths kept distinct).
  std::string out;
  detail::json_writer w(out);
  w.begin_object().field("version", 1).key("results").begin_array();
  for (const row& r : now.rows) {
    w.begin_object().field("trace", r.trace).field("requests", std::uint64_t{r.requests});
    w.field("distinct", std::uint64_t{r.distinct}).field("size", std::uint64_t{r.size}).field("policy", r.policy);
    w.field("hits", r.hits).field("hit_rate", static_cast<double>(r.hits) / static_cast<double>(r.requests));
    w.end_object();
  }
  w.end_array().key("error");
  if (error != nullptr) {
    w.value(std::string_view(*error));
  } else {
    w.null();
  }
  w.end_object();
  std::printf("%s\n", out.c_str());
  return written(stdout, "the JSON to standard output");
}

// Ends a run that cannot go on: the message on stderr (escaped for people)
// and, under --json, in the JSON with the rows done (as it is: the writer
// makes any bytes valid JSON). Returns the exit status, 1.
int stopped(const std::string& message) {
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(program.size()), program.data(), shown(message).c_str());
  if (now.json) print_json(&message);
  return 1;
}

int run(int argc, char** argv) {
  const command_line c = parse_command_line(argc, argv);
  if (c.help) {
    std::printf("usage: %.*s\n", static_cast<int>(usage.size()), usage.data());
    return written(stdout, "the usage to standard output") ? 0 : 1;
  }
  bool lru_differs = false;
  std::vector<row>& rows = now.rows;
  std::FILE* table = c.json ? stderr : stdout;
  now.table = table;
  now.json = c.json;
  for (const job& j : c.jobs) {
    trace t;
    now.work_raw = "reading the trace '" + j.source.spec + "' (--max-requests=N reads fewer of its requests)";
    now.work = shown(now.work_raw);
    try {
      t = load(j.source, j.options);
    } catch (const sim::trace_error& e) {
      return stopped(e.message());
    }
    if (t.keys.empty()) return stopped(t.name + ": no requests");
    std::vector<std::uint32_t> next;
    for (const auto* p : j.policies)
      if (p->name.starts_with("opt") && next.empty()) next = sim::next_uses(t.keys, t.distinct);
    // A column is as wide as its policy's name, and at least 10.
    std::vector<int> width;
    for (const auto* p : j.policies) width.push_back(std::max(10, static_cast<int>(p->name.size())));
    std::fprintf(table, "%s: %zu requests, %u distinct keys; hit rate %%\n%10s", shown(t.name).c_str(), t.keys.size(),
                 t.distinct, "size");
    for (std::size_t k = 0; k < j.policies.size(); ++k)
      std::fprintf(table, " %*.*s", width[k], static_cast<int>(j.policies[k]->name.size()), j.policies[k]->name.data());
    std::fprintf(table, "\n");
    for (const std::size_t n : j.sizes) {
      std::fprintf(table, "%10zu", n);
      now.mid_row = true;
      std::uint64_t lru_hits = UINT64_MAX, ref_hits = UINT64_MAX;
      for (std::size_t k = 0; k < j.policies.size(); ++k) {
        const policy_entry* const p = j.policies[k];
        now.work_raw = "running " + std::string(p->name) + " at size " + std::to_string(n) + " on '" + t.name +
                       "' (a policy's state grows with the size: smaller --sizes need less)";
        now.work = shown(now.work_raw);
        const std::uint64_t hits = p->run(t, n, next);
        if (p->name == "lru") lru_hits = hits;
        if (p->name == "ref_lru") ref_hits = hits;
        rows.push_back({t.name, t.keys.size(), t.distinct, n, p->name, hits});
        std::fprintf(table, " %*.2f", width[k], 100.0 * static_cast<double>(hits) / static_cast<double>(t.keys.size()));
        std::fflush(table);
      }
      std::fprintf(table, "\n");
      now.mid_row = false;
      if (c.check_lru && lru_hits != ref_hits) {
        std::fprintf(stderr, "cache_sim: %s size %zu: lru hits %llu, ref_lru hits %llu\n", shown(t.name).c_str(), n,
                     static_cast<unsigned long long>(lru_hits), static_cast<unsigned long long>(ref_hits));
        lru_differs = true;
      }
    }
    // The table on stdout: a failed write ends the run (its rows are lost).
    if (!c.json && !written(stdout, "the table to standard output")) return 1;
  }
  if (c.json && !print_json(nullptr)) return 1;
  if (c.check_lru && !lru_differs) {
    std::fprintf(table, "lru == ref_lru on every trace and size\n");
    if (!c.json && !written(stdout, "the table to standard output")) return 1;
  }
  return lru_differs ? 1 : 0;
}

// With the kernel's default overcommit a trace larger than memory (a
// decompression bomb, random longs) gets the process killed before malloc
// fails; an address-space limit of what the process maps at the start plus
// the memory available then (MemAvailable and free swap, and no more than
// its cgroup's memory.max leaves) makes that an "out of memory" message
// instead. A limit the user set is kept; a sanitizer's build, whose shadow
// memory is mapped address space, gets none. The limit counts address space
// reserved, not used (a thread's stack, a malloc arena), and a decompressor
// started afterwards inherits it.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool sanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
constexpr bool sanitized = true;
#else
constexpr bool sanitized = false;
#endif
#else
constexpr bool sanitized = false;
#endif

// A "Key: N kB" field of a /proc file, in bytes; 0 when absent.
unsigned long long kb_field(const char* path, std::string_view key) {
  char buf[8192];
  return detail::kb_field(std::string_view(buf, detail::read_small_file(path, buf, sizeof buf)), key);
}

// What the process's cgroup (v2) still lets it use, or ULLONG_MAX.
unsigned long long cgroup_room() {
  std::FILE* f = std::fopen("/proc/self/cgroup", "re");
  if (f == nullptr) return ULLONG_MAX;
  char line[4096];
  std::string path;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    std::string_view l(line);
    if (!l.starts_with("0::")) continue;
    l.remove_prefix(3);
    while (!l.empty() && l.back() == '\n') l.remove_suffix(1);
    path = "/sys/fs/cgroup" + std::string(l);
  }
  std::fclose(f);
  if (path.empty()) return ULLONG_MAX;
  const auto read_number = [](const std::string& file) -> unsigned long long {
    std::FILE* g = std::fopen(file.c_str(), "re");
    if (g == nullptr) return ULLONG_MAX;
    unsigned long long v = ULLONG_MAX;
    if (std::fscanf(g, "%llu", &v) != 1) v = ULLONG_MAX;  // "max": no limit
    std::fclose(g);
    return v;
  };
  const unsigned long long max = read_number(path + "/memory.max"), current = read_number(path + "/memory.current");
  if (max == ULLONG_MAX || current == ULLONG_MAX) return ULLONG_MAX;
  return max > current ? max - current : 0;
}

void bound_memory_to_what_is_available() {
  if constexpr (sanitized) return;
  rlimit r{};
  if (::getrlimit(RLIMIT_AS, &r) != 0 || r.rlim_cur != RLIM_INFINITY) return;
  const unsigned long long available = kb_field("/proc/meminfo", "MemAvailable");
  if (available == 0) return;
  const unsigned long long room =
      std::min(available + kb_field("/proc/meminfo", "SwapFree"), cgroup_room());
  const unsigned long long bytes = kb_field("/proc/self/status", "VmSize") + room;
  if (bytes < r.rlim_max) r.rlim_cur = bytes;
  ::setrlimit(RLIMIT_AS, &r);
}

int main(int argc, char** argv) {
  bound_memory_to_what_is_available();
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc&) {
    // A trace or its replay too large for this machine's memory: the row
    // under way is left unfinished on a line of its own, and the message
    // says what was running.
    if (now.mid_row) {
      std::fprintf(now.table, " (out of memory)\n");
      std::fflush(now.table);
    }
    std::fprintf(stderr, "%.*s: out of memory while %s\n", static_cast<int>(program.size()), program.data(),
                 now.work.c_str());
    if (now.json) {
      // The trace under way is freed by now; writing the JSON needs little.
      try {
        const std::string message = "out of memory while " + now.work_raw;
        print_json(&message);
      } catch (const std::bad_alloc&) {
        std::fprintf(stderr, "%.*s: out of memory writing the JSON of the rows done\n",
                     static_cast<int>(program.size()), program.data());
      }
    }
    return 1;
  }
}
