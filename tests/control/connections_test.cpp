// The server's connection policy (docs/cli.md, "Connections"), end to end:
// idle clients cannot lock real queries out, a server whose every slot is
// answering is "busy" to the CLI, and clients that do not read their answers
// are dropped after a bounded time and a bounded backlog.
#include <catch2/catch.hpp>

#include <vector>

#include "harness.hpp"

using namespace control_test;

namespace {

std::string socket_of(const temp_dir& dir, const target& t) { return dir.file(t.pid_text() + ".sock"); }

std::uint64_t counter(const temp_dir& dir, const target& t, const std::string& name) {
  const std::string answer = raw_query(socket_of(dir, t), "info\n");
  const std::size_t at = answer.find("\n" + name + " ");
  if (at == std::string::npos) return ~std::uint64_t{0};
  return std::stoull(answer.substr(at + name.size() + 2));
}

// A client that asks for `request` and then reads nothing.
int silent_asker(const std::string& socket, const std::string& request) {
  const int fd = connect_to(socket);
  if (fd >= 0) send_all(fd, request);
  return fd;
}

// Waits until the server has started to send `fd` its answer (so it is being
// answered, not idle) and takes its first byte only.
bool answer_started(int fd, std::chrono::milliseconds limit = 10s) {
  pollfd p{fd, POLLIN, 0};
  char c = 0;
  return ::poll(&p, 1, static_cast<int>(limit.count())) == 1 && ::recv(fd, &c, 1, 0) == 1 && c == 'o';
}

}  // namespace

TEST_CASE("idle connections filling every slot cannot lock out a real query", "[control][connections][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  std::vector<int> idle;
  for (int i = 0; i < 128; ++i) {  // options::max_clients, all sending nothing
    const int fd = connect_to(socket_of(sockets, t));
    REQUIRE(fd >= 0);
    idle.push_back(fd);
  }
  std::this_thread::sleep_for(200ms);  // let the server accept them all
  const cli_result r = run_cli({t.pid_text(), "help"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(r.status == 0);
  CHECK(r.out.rfind("Commands", 0) == 0);
  CHECK(r.err.empty());
  CHECK(read_all(idle[0], 1s) ==
        "error server busy: this connection sent no request and was closed to serve a newer one; retry\n");
  for (int fd : idle) ::close(fd);
  CHECK(counter(sockets, t, "dropped") >= 1);
}

TEST_CASE("when every slot is answering, the CLI says busy (exit 5)", "[control][connections][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  REQUIRE(t.command("entries 20000") == "done");  // answers of several MB: larger than a socket buffer
  REQUIRE(t.command("serve 2") == "done");
  const int a = silent_asker(socket_of(sockets, t), "stats --json\n");
  const int b = silent_asker(socket_of(sockets, t), "stats --json\n");
  REQUIRE(a >= 0);
  REQUIRE(b >= 0);
  REQUIRE(answer_started(a));  // both answers rendered, stuck in the sockets
  REQUIRE(answer_started(b));
  const cli_result r = run_cli({t.pid_text(), "help"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(r.status == 5);
  CHECK(r.out.empty());
  CHECK(r.err == "arenastat: process " + t.pid_text() + " is busy: 2 clients are being answered; retry later\n");
  ::close(a);
  ::close(b);
}

TEST_CASE("a client that does not read its answer is dropped after the stall time-out",
          "[control][connections][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  REQUIRE(t.command("entries 20000") == "done");
  const int fd = silent_asker(socket_of(sockets, t), "stats --json\n");
  REQUIRE(fd >= 0);
  REQUIRE(answer_started(fd));
  const auto started = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(500ms);
  CHECK(counter(sockets, t, "dropped") == 0);
  while (counter(sockets, t, "dropped") == 0 && std::chrono::steady_clock::now() - started < 8s) {
    std::this_thread::sleep_for(50ms);
  }
  const auto waited = std::chrono::steady_clock::now() - started;
  CHECK(counter(sockets, t, "dropped") == 1);
  CHECK(waited >= 1500ms);  // options::stall_timeout is 2 s (from the last byte the socket took)
  CHECK(waited < 8s);       // not the 10 s response_timeout
  const std::string got = read_all(fd, 2s);  // what was buffered, then the end
  CHECK(got.rfind("k\n{", 0) == 0);         // the 'o' was taken above
  CHECK_FALSE(got.ends_with("}\n"));
  ::close(fd);
}

TEST_CASE("answers held for clients that do not read stay within max_answer_backlog",
          "[control][connections][threads]") {
  temp_dir sockets;
  target t(sockets.path());
  REQUIRE(t.command("entries 20000") == "done");
  REQUIRE(t.command("serve 8 1000000") == "done");  // 1 MB of unsent answers at most
  const int a = silent_asker(socket_of(sockets, t), "stats --json\n");
  REQUIRE(a >= 0);
  REQUIRE(answer_started(a));
  const int b = silent_asker(socket_of(sockets, t), "stats --json\n");
  REQUIRE(b >= 0);
  REQUIRE(answer_started(b));  // b's answer is held: a was dropped for it, well before the 2 s stall time-out
  CHECK(counter(sockets, t, "dropped") == 1);  // a, to make room for b's answer
  ::close(a);
  ::close(b);
}
