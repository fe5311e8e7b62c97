// Helper program for the leak-report tests (tests/leaks/leaks_test.cpp).
//
//   leaks_child clean     every byte given back: nothing to report
//   leaks_child destroy   account leaks/cache keeps 150 bytes in 2 blocks (peak
//                         4246) when its last resource, an arena, is destroyed;
//                         then prints "destroyed" on stdout
//   leaks_child exit      held at exit: account leaks/registry 64 bytes in 1
//                         block; an arena chunk of 4096 bytes (tag node) taken
//                         in scope leaks/parse; one of 1024 bytes (tag
//                         resource) taken outside any scope
//   leaks_child names     held at exit, under hostile names: account
//                         "leaks/a\nb" 64 bytes in 1 block; an arena chunk of
//                         4096 bytes (tag node) taken in scope "leaks/\x1b[2J"
//   leaks_child html_names  as names, under names that are HTML markup
//   leaks_child threads   a thread still allocating and freeing 64-byte blocks
//                         through account leaks/busy while the process exits
//   leaks_child churn     two threads each make 200,000 short-lived
//                         tracking_resources of account leaks/churn, each
//                         allocating and freeing 64 bytes: nothing leaks
//   leaks_child static    an arena kept by a static object built before the
//                         tracking hook's first use, holding a chunk when the
//                         process exits (its destructor gives it back during
//                         static destruction, after the hook's first use)
//   leaks_child globals   a program's own globals, built before the library's
//                         statics (this file is linked first): a
//                         tracking_resource leaks/global with a pmr vector of
//                         1000 ints, and an arena of account leaks/global-arena
//                         holding a chunk; each gives everything back in its
//                         destructor, during static destruction
//
// Every block left held stays reachable from a global (LeakSanitizer quiet).
#include <arenastat/arenastat.hpp>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory_resource>
#include <thread>
#include <vector>

namespace {

void* volatile kept[4];
arenastat::tracking_resource* volatile registry;
arenastat::arena_resource* volatile arenas[2];

void destroy() {
  {
    arenastat::arena_resource arena{"node", {.account = "leaks/cache"}};
    {
      arenastat::tracking_resource cache{"leaks/cache"};
      kept[0] = cache.allocate(100);
      void* p = cache.allocate(200);
      kept[1] = cache.allocate(50);
      cache.deallocate(p, 200);
    }  // not the account's last resource: the arena still feeds it
    (void)arena.allocate(10);  // a 4096-byte chunk: peak 150 + 4096
  }    // the last one: the chunk is given back, 150 bytes stay
  std::puts("destroyed");
}

// Held at exit: 64 bytes in one block of `account`, and one 4096-byte arena
// chunk (tag node) taken in scope `scope_name`.
void hold_block_and_chunk(const char* account, const char* scope_name) {
  registry = new arenastat::tracking_resource{account};
  kept[2] = registry->allocate(64);
  arenastat::scope s{scope_name};
  arenas[0] = new arenastat::arena_resource{"node"};
  (void)arenas[0]->allocate(10);
}

void exit_held() {
  hold_block_and_chunk("leaks/registry", "leaks/parse");
  arenas[1] = new arenastat::arena_resource{"resource", {.initial_chunk = 1024}};
  (void)arenas[1]->allocate(10);
}

void names() { hold_block_and_chunk("leaks/a\nb", "leaks/\x1b[2J"); }

// Names that would be markup in an HTML page.
void html_names() {
  hold_block_and_chunk("<img src=x onerror=\"alert('a')\">", "<script>alert(1)</script>&");
}

void clean() {
  arenastat::tracking_resource r{"leaks/clean"};
  void* p = r.allocate(64);
  arenastat::scope s{"leaks/clean-scope"};
  arenastat::arena_resource a{"node"};
  (void)a.allocate(10);
  r.deallocate(p, 64);
}

std::atomic<bool> started{false};
arenastat::tracking_resource* volatile busy;

void threads() {
  std::thread([] {
    busy = new arenastat::tracking_resource{"leaks/busy"};
    for (;;) {
      void* p = busy->allocate(64);
      started.store(true);
      busy->deallocate(p, 64);
    }
  }).detach();
  while (!started.load()) std::this_thread::yield();
}

void churn() {
  auto work = [] {
    for (int i = 0; i < 200000; ++i) {
      arenastat::tracking_resource r{"leaks/churn"};
      r.deallocate(r.allocate(64, 8), 64, 8);
    }
  };
  std::thread a(work), b(work);
  a.join();
  b.join();
}

struct arena_holder {
  arenastat::arena_resource* arena = nullptr;
  ~arena_holder() { delete arena; }
} static_holder;  // built during static initialisation, before main

// Declared in this order: destroyed in the reverse one, the vector first.
arenastat::tracking_resource global_memory{"leaks/global"};
std::pmr::vector<int> global_vector{&global_memory};
arenastat::arena_resource global_arena{"node", {.account = "leaks/global-arena"}};

void globals() {
  global_vector.assign(1000, 7);
  (void)global_arena.allocate(100);
}

void static_arena() {
  static_holder.arena = new arenastat::arena_resource{"node"};
  (void)static_holder.arena->allocate(100);
}

}  // namespace

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (std::strcmp(mode, "clean") == 0) clean();
  else if (std::strcmp(mode, "destroy") == 0) destroy();
  else if (std::strcmp(mode, "exit") == 0) exit_held();
  else if (std::strcmp(mode, "threads") == 0) threads();
  else if (std::strcmp(mode, "names") == 0) names();
  else if (std::strcmp(mode, "html_names") == 0) html_names();
  else if (std::strcmp(mode, "churn") == 0) churn();
  else if (std::strcmp(mode, "static") == 0) static_arena();
  else if (std::strcmp(mode, "globals") == 0) globals();
  else {
    std::fprintf(stderr, "leaks_child: unknown mode '%s'\n", mode);
    return 2;
  }
  return 0;
}
