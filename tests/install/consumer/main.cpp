// Uses the library through the umbrella header and checks one derivable figure.
#include <arenastat/arenastat.hpp>

#include <cstdio>

int main() {
  {
    arenastat::scope s{"consumer/task"};
    arenastat::arena_resource a{"node", {.initial_chunk = 4096}};
    (void)a.allocate(100, 8);
  }
  for (const arenastat::entry& e : arenastat::snapshot()) {
    if (e.name == "consumer/task" && e.peak_bytes == 4096) {
      std::puts("consumer: ok");
      return 0;
    }
  }
  std::puts("consumer: entry missing or wrong");
  return 1;
}
