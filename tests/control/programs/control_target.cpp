// A process for the control tests to query. Started by the tests with
// ARENASTAT_CONTROL=1 (and friends) in its environment; it allocates a known
// set of bytes, prints "ready <pid>" and then obeys one command per stdin line,
// answering "done" after each:
//   grow N             N more blocks of 1000 bytes in account "cache/items"
//   scope NAME BYTES   run scope NAME that allocates and frees BYTES via "scratch"
//   entries N          N accounts "bulk/<i>" holding 64 bytes each
//   serve MAX [BACKLOG [STALL_MS [REQUEST_MS [RESPONSE_MS [DIR]]]]]
//                      restart the control server with options::max_clients
//                      MAX and, when given and not 0, max_answer_backlog
//                      BACKLOG bytes, stall_timeout, request_timeout and
//                      response_timeout in milliseconds (0 keeps the default,
//                      so a later argument can be given alone: `serve 2 0 60000`),
//                      and options::socket_dir DIR
//   ping               nothing (lets the main thread leave read(): TSan runs
//                      deferred signal handlers only when a call returns)
//   exit-from-thread   a new thread calls std::exit(0) while main blocks on stdin
//   main-thread-exit   answers "done", then main calls pthread_exit: a new thread
//                      blocks on stdin (exits at EOF or "quit") and the control
//                      server keeps serving, while /proc/<pid>/stat says Z
//   quit (or EOF)      return from main
// Starting state: "cache/items" live 10000 bytes in 10 blocks; scope
// "task/parse" (1 run, peak 3000); account "scratch" live 0, peak 3000.
#include <pthread.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <iostream>
#include <memory_resource>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <arenastat/arenastat.hpp>
#include <arenastat/control.hpp>

namespace {

constexpr std::size_t block = 1000;

std::pmr::memory_resource* items() {
  static arenastat::tracking_resource r("cache/items");
  return &r;
}
std::pmr::memory_resource* scratch() {
  static arenastat::tracking_resource r("scratch");
  return &r;
}

// Never destroyed: the blocks stay reachable when exit() ends the program early.
std::vector<void*>& held() {
  static auto* v = new std::vector<void*>;
  return *v;
}

void grow(std::size_t blocks) {
  for (std::size_t i = 0; i < blocks; ++i) held().push_back(items()->allocate(block));
}

void run_scope(const std::string& name, std::size_t bytes) {
  arenastat::scope s(name);
  void* p = scratch()->allocate(bytes);
  scratch()->deallocate(p, bytes);
}

void make_entries(std::size_t n) {
  static std::size_t next = 0;
  for (std::size_t i = 0; i < n; ++i, ++next) {
    auto& acct = arenastat::account::get("bulk/" + std::to_string(next));
    acct.use_tag(arenastat::register_tag("heap"));
    acct.on_allocate(64, arenastat::register_tag("heap"));
  }
}

}  // namespace

int main() {
  grow(10);
  run_scope("task/parse", 3000);
  std::cout << "ready " << ::getpid() << std::endl;

  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd;
    in >> cmd;
    if (cmd == "quit") break;
    if (cmd == "grow") {
      std::size_t n = 0;
      in >> n;
      grow(n);
    } else if (cmd == "scope") {
      std::string name;
      std::size_t bytes = 0;
      in >> name >> bytes;
      run_scope(name, bytes);
    } else if (cmd == "hostile-scope") {
      // A name with a line break, an escape sequence and a C1 control (U+0085).
      run_scope("evil\nrow\x1b[2J\xc2\x85", 5000);
    } else if (cmd == "entries") {
      std::size_t n = 0;
      in >> n;
      make_entries(n);
    } else if (cmd == "serve") {
      arenastat::control::options o;
      in >> o.max_clients;
      std::size_t backlog = 0;
      if (in >> backlog && backlog != 0) o.max_answer_backlog = backlog;
      for (std::chrono::milliseconds* timeout : {&o.stall_timeout, &o.request_timeout, &o.response_timeout}) {
        long long ms = 0;
        if (!(in >> ms)) break;
        if (ms != 0) *timeout = std::chrono::milliseconds(ms);
      }
      in >> o.socket_dir;
      arenastat::control::stop();
      arenastat::control::start(o);
    } else if (cmd == "ping") {
      // nothing to do
    } else if (cmd == "exit-from-thread") {
      std::thread([] { std::exit(0); }).detach();
      continue;  // main stays blocked in getline until exit ends the process
    } else if (cmd == "main-thread-exit") {
      std::thread([] {
        std::string rest;
        while (std::getline(std::cin, rest) && rest != "quit") {
        }
        std::exit(0);
      }).detach();
      std::cout << "done" << std::endl;
      ::pthread_exit(nullptr);
    } else {
      std::cout << "unknown " << cmd << std::endl;
      continue;
    }
    std::cout << "done" << std::endl;
  }
  for (void* p : held()) items()->deallocate(p, block);
  return 0;
}
