// arenastat demo: a "compiler-like" workload, as a user would write it.
//
// Two compiler threads compile many named methods. Each compilation is a
// scope; its IR lives in an arena tagged "node" and its side tables in an
// arena tagged "resource"; the node count is a scope counter. Some methods
// are compiled again (the table counts them); one pathological method hits its
// memory limit and is recorded as "oom". A long-lived symbol table is an
// account fed by a tracking_resource. At the end the demo prints the report,
// the tree and the process lines. With --linger=S it stays alive S seconds
// (recompiling now and then, its symbol table trimmed every 10 s) so
// `arenastat <pid> ...` can query it live.
#include <arenastat/arenastat.hpp>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory_resource>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

struct options {
  int methods = 400;
  int threads = 2;
  int linger_s = 0;
};

// A bad command line (the usage follows its message).
struct bad_option : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

int parse_int(std::string_view arg, std::string_view name, int lo, int hi) {
  const std::string_view text = arg.substr(name.size());
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi)
    throw bad_option("bad value in '" + std::string(arg) + "': expected an integer from " +
                                std::to_string(lo) + " to " + std::to_string(hi));
  return v;
}

constexpr const char* usage =
    "usage: arenastat_demo [--methods=N] [--threads=N] [--linger=SECONDS]\n"
    "  --methods=N        methods to compile (1..1000000, default 400)\n"
    "  --threads=N        compiler threads (1..64, default 2)\n"
    "  --linger=SECONDS   stay alive this long afterwards, recompiling now and then, so that\n"
    "                     `arenastat <pid> ...` can query it (0..86400, default 0)\n"
    "Prints the memory report, its tree and the process lines when it ends.\n";

struct help_asked {};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--help" || a == "-h") throw help_asked{};
    if (a.starts_with("--methods=")) o.methods = parse_int(a, "--methods=", 1, 1000000);
    else if (a.starts_with("--threads=")) o.threads = parse_int(a, "--threads=", 1, 64);
    else if (a.starts_with("--linger=")) o.linger_s = parse_int(a, "--linger=", 0, 86400);
    else throw bad_option("unknown option '" + std::string(a) + "'");
  }
  return o;
}

// An IR node as a compiler would keep it: inputs point into the same arena.
struct node {
  int opcode;
  std::pmr::vector<node*> inputs;
  explicit node(int op, std::pmr::memory_resource* mr) : opcode(op), inputs(mr) {}
};

// The CLI as the hint should name it: the build tree's copy beside this
// program (build/release/bench/arenastat_demo -> build/release/stats/control/
// cli/arenastat) when it is there, else `arenastat` from PATH.
std::string cli_path() {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const std::filesystem::path cli = self.parent_path().parent_path() / "stats" / "control" / "cli" / "arenastat";
    if (std::filesystem::is_regular_file(cli, ec)) return cli.string();
  }
  return "arenastat";
}

// A long-lived component: interned symbols, freed piecemeal, tracked exactly.
class symbol_table {
 public:
  symbol_table() : memory_("symbol-table"), map_(&memory_) {}
  void intern(const std::string& name) {
    std::lock_guard lock(mutex_);
    map_.try_emplace(std::pmr::string(name, &memory_), static_cast<int>(map_.size()));
  }
  void forget_some(std::size_t keep) {
    std::lock_guard lock(mutex_);
    for (auto it = map_.begin(); it != map_.end() && map_.size() > keep;) it = map_.erase(it);
  }

 private:
  arenastat::tracking_resource memory_;
  std::mutex mutex_;
  std::pmr::unordered_map<std::pmr::string, int> map_;
};

std::string method_name(int i) {
  static const char* const classes[] = {"java.lang.String", "java.util.HashMap", "java.util.ArrayList",
                                        "demo.Parser", "demo.Lexer", "demo.Optimizer"};
  static const char* const methods[] = {"hashCode", "equals", "get", "put", "resize", "parse", "next", "fold"};
  return std::string("compile/") + classes[i % 6] + "/" + methods[(i / 6) % 8];  // 48 names
}

// One compilation: build a graph whose size depends on the method, then "optimize" it.
void compile(int method, std::mt19937& rng, symbol_table& symbols) {
  const std::string name = method_name(method);
  const bool pathological = method == 97;  // java.util.HashMap/hashCode, run 3 of 9
  arenastat::scope s{name, {.limit_bytes = pathological ? 4u << 20 : 0u}};
  try {
    arenastat::arena_resource nodes{"node", {.initial_chunk = 16 << 10, .growth_factor = 2.0, .max_chunk = 1 << 20}};
    arenastat::arena_resource resources{"resource", {.initial_chunk = 8 << 10, .growth_factor = 2.0, .max_chunk = 256 << 10}};
    const int size = pathological ? 200000 : 200 + static_cast<int>(rng() % 6000);
    std::pmr::polymorphic_allocator<node> alloc{&nodes};
    std::pmr::vector<node*> graph{&nodes};
    for (int i = 0; i < size; ++i) {
      node* n = alloc.new_object<node>(static_cast<int>(rng() % 64), &nodes);
      if (!graph.empty()) n->inputs.push_back(graph[rng() % graph.size()]);
      graph.push_back(n);
      if (i % 512 == 0) s.set_counter("nodes", static_cast<std::int64_t>(graph.size()));
    }
    s.set_counter("nodes", static_cast<std::int64_t>(graph.size()));
    // Register allocation: side tables proportional to the graph.
    std::pmr::vector<int> live_ranges{graph.size() * 2, &resources};
    std::pmr::unordered_map<int, int> interference{&resources};
    for (std::size_t i = 0; i < graph.size() / 4; ++i) interference[static_cast<int>(i)] = static_cast<int>(i * 7);
    for (int i = 0; i < 64; ++i) symbols.intern(name + "$local" + std::to_string(rng() % 4096));
  } catch (const arenastat::limit_exceeded& e) {
    // Expected: one method is too large for its 4 MiB limit, on purpose.
    std::fprintf(stderr, "demo: compilation bailed out: %s (expected: the demo's limit at work; the report counts "
                 "the run in its result column: (1 oom))\n", e.what());
  }
}

void compiler_thread(int id, int first, int count, int stride, symbol_table& symbols) {
  std::mt19937 rng(1802 + id);
  for (int i = first; i < count; i += stride) {
    compile(i, rng, symbols);
    if (i % 10 == 0) compile(i, rng, symbols);  // recompilation of a hot method
  }
}

}  // namespace

int main(int argc, char** argv) try {
  options o;
  try {
    o = parse(argc, argv);
  } catch (const help_asked&) {
    std::fputs(usage, stdout);
    return 0;
  }
  symbol_table symbols;
  std::printf("arenastat demo: pid %d compiling %d methods on %d threads\n", static_cast<int>(getpid()),
              o.methods, o.threads);
  std::fflush(stdout);
  std::vector<std::thread> pool;
  for (int t = 0; t < o.threads; ++t)
    pool.emplace_back(compiler_thread, t, t, o.methods, o.threads, std::ref(symbols));
  for (auto& t : pool) t.join();
  symbols.forget_some(static_cast<std::size_t>(o.methods) / 2);

  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(o.linger_s);
  if (o.linger_s > 0) {
    std::printf("lingering %d s: try `%s %d stats -H --top=10`\n", o.linger_s, cli_path().c_str(),
                static_cast<int>(getpid()));
    std::fflush(stdout);
  }
  // A recompilation now and then; every 10 s the symbol table forgets half
  // of its symbols again, as after the first pass (a cache of bounded size,
  // not a leak: its live bytes rise and fall).
  std::mt19937 rng(7);
  for (int round = 1; std::chrono::steady_clock::now() < until; ++round) {
    compile(static_cast<int>(rng() % static_cast<unsigned>(o.methods)), rng, symbols);
    if (round % 100 == 0) symbols.forget_some(static_cast<std::size_t>(o.methods) / 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }

  std::puts(arenastat::report("-H").c_str());
  std::puts(arenastat::report("-H --tree").c_str());
  return 0;
} catch (const bad_option& e) {
  std::fprintf(stderr, "arenastat_demo: %s\n%s", e.what(), usage);
  return 2;
} catch (const std::exception& e) {
  std::fprintf(stderr, "arenastat_demo: %s\n", e.what());
  return 2;
}
