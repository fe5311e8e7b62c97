// The README's example, compiled and run by ctest (tests/examples): a
// compile-like task per method in a scope with a limit, its IR in an arena
// tagged "node", a counter set at the end of the work, and the report.
#include <arenastat/arenastat.hpp>

#include <cstdio>
#include <memory_resource>
#include <string>
#include <vector>

struct Node {
  int op;
  int inputs[3];
};

struct Method {
  std::string name_;
  int size;
  const std::string& name() const { return name_; }
};

void compile(const Method& m) {
  arenastat::scope s{"compile/" + m.name(), {.limit_bytes = 64 << 20}};
  arenastat::arena_resource nodes{"node"};        // IR, tagged "node"
  std::pmr::vector<Node> graph{&nodes};
  for (int i = 0; i < m.size; ++i) graph.push_back({i % 7, {i, i + 1, i + 2}});
  s.set_counter("nodes", static_cast<std::int64_t>(graph.size()));
}   // folded into the table under its name: runs, peak, breakdown at peak, time, result

int main() {
  for (const Method& m : {Method{"Foo.bar", 1000}, Method{"Foo.baz", 20000}}) compile(m);
  std::puts(arenastat::report("-H --top=20").c_str());
}
