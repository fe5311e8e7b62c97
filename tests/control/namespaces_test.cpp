// The CLI on the host against a process in its own pid and mount namespace
// (a container; here `unshare --pid --mount` with a private /tmp): it is
// named by its pid here, and its socket, named after its pid there, is
// reached through /proc/<pid>/root (docs/cli.md, "Processes in containers").
// unshare needs root: run as another user these report themselves skipped.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "harness.hpp"

using namespace control_test;

namespace {

// How the target is contained.
struct containment {
  bool own_pids = true;              // a new pid namespace (the target is its pid 1)
  std::vector<std::string> as_user;  // setpriv options: unshare runs as that user (a rootless container)
  std::string setup;                 // shell commands run inside after /tmp is mounted
};

// The unshare command line that runs control_target in a new mount
// namespace whose /tmp is a fresh tmpfs (so its socket is not in this
// namespace's /tmp), and as `how` says.
spawned spawn_contained(env_map extra, const containment& how) {
  extra.emplace("ARENASTAT_CONTROL", "1");
  std::vector<std::string> args = how.as_user;
  if (!how.as_user.empty()) args.insert(args.end(), {"/usr/bin/unshare", "--user", "--map-root-user"});
  if (how.own_pids) args.insert(args.end(), {"--pid", "--fork", "--kill-child"});
  // The program is copied into the new /tmp through a descriptor opened
  // before the mount: the build tree may itself be under /tmp (CI's is).
  const std::string script = "exec 3<\"$0\" && mount -t tmpfs tmpfs /tmp && cat <&3 >/tmp/control_target && "
                             "exec 3<&- && chmod 0755 /tmp/control_target && " +
                             (how.setup.empty() ? "" : how.setup + " && ") + "exec /tmp/control_target";
  args.insert(args.end(), {"--mount", "--propagation", "private", "sh", "-c", script, target_path});
  return spawn(how.as_user.empty() ? "/usr/bin/unshare" : "/usr/bin/setpriv", args, extra);
}

// control_target contained as `how` says (killed with unshare: --kill-child).
class contained_target {
 public:
  explicit contained_target(env_map extra = {}, const containment& how = {})
      : t_(spawn_contained(std::move(extra), how)) {
    if (how.own_pids) {  // the target is unshare's only child: its pid here
      std::ifstream children("/proc/" + std::to_string(t_.pid()) + "/task/" + std::to_string(t_.pid()) + "/children");
      children >> pid_;
    } else {  // unshare and sh exec into it
      pid_ = t_.pid();
    }
  }

  const std::string& ready() const { return t_.ready(); }
  std::string command(const std::string& line) { return t_.command(line); }
  long pid() const { return pid_; }
  std::string pid_text() const { return std::to_string(pid_); }
  std::string root() const { return "/proc/" + pid_text() + "/root"; }

 private:
  target t_;
  long pid_ = -1;
};

bool skip_unless_root() {
  if (::geteuid() == 0) return false;
  WARN("skipped: needs root to make pid and mount namespaces with unshare (running as uid " << ::geteuid() << ")");
  return true;
}

}  // namespace

TEST_CASE("as root, a process in its own pid namespace is queried by its pid here", "[control][uid][namespaces]") {
  if (skip_unless_root()) return;
  contained_target t;
  REQUIRE(t.ready() == "ready 1");  // pid 1 there
  REQUIRE(t.pid() > 1);
  // The CLI's own socket directory says nothing of the container's.
  const cli_result r = run_cli({t.pid_text(), "info"}, {{"ARENASTAT_SOCKET_DIR", "/nonexistent/socks"}});
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  CHECK(r.out.rfind("pid 1\nprogram control_target\nsocket /tmp/arenastat-0/1.sock\n", 0) == 0);
  const cli_result s = run_cli({t.pid_text(), "stats", "--json"}, {});
  CHECK(s.status == 0);
  CHECK(s.out.find("\"cache/items\"") != std::string::npos);
}

TEST_CASE("as root, a contained process's ARENASTAT_SOCKET_DIR is read from its environment",
          "[control][uid][namespaces]") {
  if (skip_unless_root()) return;
  contained_target t(env_map{{"ARENASTAT_SOCKET_DIR", "/tmp/inner-socks"}});
  REQUIRE(t.ready() == "ready 1");
  const cli_result r = run_cli({t.pid_text(), "info"}, {});
  CHECK(r.status == 0);
  CHECK(r.out.find("\nsocket /tmp/inner-socks/1.sock\n") != std::string::npos);
}

TEST_CASE("as root, a contained process's socket directory replaced by a symbolic link is refused (exit 4)",
          "[control][uid][namespaces]") {
  if (skip_unless_root()) return;
  contained_target t(env_map{{"ARENASTAT_SOCKET_DIR", "/tmp/inner-socks"}});
  REQUIRE(t.ready() == "ready 1");
  // Seen from here through its root: the directory moved, a link in its place.
  const std::string tmp = t.root() + "/tmp";
  REQUIRE(std::rename((tmp + "/inner-socks").c_str(), (tmp + "/moved").c_str()) == 0);
  REQUIRE(::symlink("moved", (tmp + "/inner-socks").c_str()) == 0);
  const cli_result r = run_cli({t.pid_text(), "info"}, {});
  CHECK(r.status == 4);
  CHECK(r.out.empty());
  CHECK(r.err == "arenastat: refusing socket directory '" + tmp +
                     "/inner-socks' (its ARENASTAT_SOCKET_DIR): it is a symbolic link\n");
}

TEST_CASE("as root, a contained process without its socket is named with both pids (exit 3)",
          "[control][uid][namespaces]") {
  if (skip_unless_root()) return;
  contained_target t(env_map{{"ARENASTAT_SOCKET_DIR", "/tmp/inner-socks"}});
  REQUIRE(t.ready() == "ready 1");
  REQUIRE(std::remove((t.root() + "/tmp/inner-socks/1.sock").c_str()) == 0);
  const cli_result r = run_cli({"--timeout=300", t.pid_text(), "info"}, {});
  CHECK(r.status == 3);
  CHECK(r.err == "arenastat: process " + t.pid_text() + " (pid 1 in its own pid namespace) has no control socket at '" +
                     t.root() + "/tmp/inner-socks/1.sock' (its ARENASTAT_SOCKET_DIR) yet: it was started with "
                     "ARENASTAT_CONTROL=1 but its server is not up after 300 ms (still starting, or it failed to "
                     "start: see its stderr); retry\n");
}

TEST_CASE("as root, links inside a container resolve inside it, never on the host", "[control][uid][namespaces]") {
  if (skip_unless_root()) return;
  // Inside, /tmp/via is a link to "/": the server's directory
  // /tmp/via/tmp/inner is its own /tmp/inner. Resolved on the host, the same
  // link would lead to the host's /tmp/inner, which does not exist.
  contained_target t(env_map{{"ARENASTAT_SOCKET_DIR", "/tmp/via/tmp/inner"}}, {.own_pids = true, .as_user = {}, .setup = "ln -s / /tmp/via"});
  REQUIRE(t.ready() == "ready 1");
  struct stat st {};
  REQUIRE(::stat("/tmp/inner", &st) != 0);
  const cli_result r = run_cli({t.pid_text(), "info"}, {});
  CHECK(r.status == 0);
  CHECK(r.out.find("\nsocket /tmp/via/tmp/inner/1.sock\n") != std::string::npos);
}

TEST_CASE("as root, a process with only a mount namespace of its own (a private /tmp) is reached through its root",
          "[control][uid][namespaces]") {
  if (skip_unless_root()) return;
  // As systemd's PrivateTmp: the same pids, another /tmp.
  contained_target t({}, {.own_pids = false, .as_user = {}, .setup = ""});
  REQUIRE(t.ready() == "ready " + t.pid_text());
  const cli_result r = run_cli({t.pid_text(), "info"}, {});
  CHECK(r.status == 0);
  CHECK(r.out.find("\nsocket /tmp/arenastat-0/" + t.pid_text() + ".sock\n") != std::string::npos);
}

TEST_CASE("as root, a contained process started with a relative ARENASTAT_SOCKET_DIR is named with its refusal (exit 3)",
          "[control][uid][namespaces]") {
  if (skip_unless_root()) return;
  contained_target t(env_map{{"ARENASTAT_SOCKET_DIR", "socks/"}});
  REQUIRE(t.ready() == "ready 1");
  const cli_result r = run_cli({t.pid_text(), "info"}, {});
  CHECK(r.status == 3);
  CHECK(r.err.rfind("arenastat: process " + t.pid_text() +
                        " (pid 1 in its own pid namespace) has no control socket: it was started with "
                        "ARENASTAT_SOCKET_DIR='socks', which its server refuses (it is a relative path",
                    0) == 0);
}

TEST_CASE("as root, a contained process whose main thread exited is still reached through a live thread",
          "[control][uid][namespaces]") {
  if (skip_unless_root()) return;
  // pthread_exit in main: /proc/<pid>/root, environ and ns/* are gone, a
  // running thread's /proc/<pid>/task/<tid>/ ones are not; the server serves on.
  contained_target t(env_map{{"ARENASTAT_SOCKET_DIR", "/tmp/inner-socks"}});
  REQUIRE(t.ready() == "ready 1");
  REQUIRE(t.command("main-thread-exit") == "done");
  const cli_result r = run_cli({t.pid_text(), "info"}, {});
  INFO(r.err);
  CHECK(r.status == 0);
  CHECK(r.out.find("\nsocket /tmp/inner-socks/1.sock\n") != std::string::npos);
}

TEST_CASE("as root, a rootless container whose server would refuse root names its owner instead (exit 3)",
          "[control][uid][namespaces]") {
  if (skip_unless_root()) return;
  // Made by uid 100000 with --map-root-user: inside, 100000 is root and the
  // host's root is no uid at all, so the server (serving its uid and root as
  // it sees them) would refuse root's connection.
  contained_target t({}, {.own_pids = true, .as_user = {"--reuid=100000", "--regid=100000", "--clear-groups"}, .setup = ""});
  REQUIRE(t.ready() == "ready 1");
  const cli_result r = run_cli({t.pid_text(), "info"}, {});
  CHECK(r.status == 3);
  CHECK(r.err == "arenastat: process " + t.pid_text() +
                     " is in a user namespace where you (uid 0) are no uid at all, neither its root nor its owner, so "
                     "its server would refuse you: run arenastat as uid 100000 (the owner of process " +
                     t.pid_text() + ")\n");
}

TEST_CASE("as root, a process with a private /tmp whose server chose a directory in code is found in this namespace",
          "[control][uid][namespaces]") {
  if (skip_unless_root()) return;
  // options::socket_dir (no variable says it) outside /tmp, so the host sees
  // the same directory: the CLI tries its own directory first.
  char name[] = "/var/tmp/arenastat-ns-XXXXXX";
  REQUIRE(::mkdtemp(name) != nullptr);
  const std::string dir = name;
  contained_target t({}, {.own_pids = false, .as_user = {}, .setup = ""});
  REQUIRE(t.ready() == "ready " + t.pid_text());
  REQUIRE(t.command("serve 128 0 0 0 0 " + dir + "/socks") == "done");
  const cli_result r = run_cli({t.pid_text(), "info"}, {{"ARENASTAT_SOCKET_DIR", dir + "/socks"}});
  CHECK(r.status == 0);
  CHECK(r.out.find("\nsocket " + dir + "/socks/" + t.pid_text() + ".sock\n") != std::string::npos);
  t.command("quit");
  std::remove((dir + "/socks/" + t.pid_text() + ".sock").c_str());
  ::rmdir((dir + "/socks").c_str());
  ::rmdir(dir.c_str());
}
