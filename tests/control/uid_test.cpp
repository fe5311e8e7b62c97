// The CLI run as root against what another user ('nobody') planted first
// (docs/cli.md, "Trust rules"). Tagged [uid] (ctest label `uid`): they need
// root to act as 'nobody' through setpriv; run as another user they report
// themselves skipped, and as root they FAIL when the switch does not work.
#include <catch2/catch.hpp>

#include <pwd.h>

#include <filesystem>
#include <fstream>

#include "harness.hpp"

using namespace control_test;

namespace {

constexpr const char* setpriv = "/usr/bin/setpriv";

// Arguments that make setpriv run `program` as 'nobody' with no groups.
std::vector<std::string> as_nobody(const std::string& program, std::vector<std::string> args) {
  const passwd* pw = ::getpwnam("nobody");
  REQUIRE(pw != nullptr);
  std::vector<std::string> out{"--reuid=" + std::to_string(pw->pw_uid), "--regid=" + std::to_string(pw->pw_gid),
                               "--clear-groups", "--", program};
  out.insert(out.end(), args.begin(), args.end());
  return out;
}

uid_t nobody_uid() {
  const passwd* pw = ::getpwnam("nobody");
  REQUIRE(pw != nullptr);
  return pw->pw_uid;
}

// Runs `program` as 'nobody' to completion; returns its exit status and stdout.
cli_result run_as_nobody(const std::string& program, const std::vector<std::string>& args) {
  spawned p = spawn(setpriv, as_nobody(program, args), {});
  ::close(p.in);
  cli_result r;
  r.out = read_all(p.out, 5s);
  r.err = read_all(p.err, 500ms);
  r.status = wait_exit(p.pid);
  ::close(p.out);
  ::close(p.err);
  return r;
}

// Skips the test unless root; as root, fails unless setpriv really switches to 'nobody'.
bool can_act_as_nobody() {
  if (::geteuid() != 0) {
    WARN("skipped: needs root to act as user 'nobody' through setpriv (running as uid " << ::geteuid() << ")");
    return false;
  }
  const cli_result id = run_as_nobody("/usr/bin/id", {"-u"});
  INFO("setpriv to nobody: status " << id.status << ", stderr: " << id.err);
  REQUIRE(id.status == 0);
  REQUIRE(id.out == std::to_string(nobody_uid()) + "\n");
  return true;
}

// A directory owned by 'nobody' (0755) inside a fresh temporary directory,
// holding copies of the test programs 'nobody' may run.
struct nobody_area {
  temp_dir root;
  std::string dir = root.file("nobody");
  nobody_area() {
    REQUIRE(::chmod(root.path().c_str(), 0755) == 0);
    REQUIRE(::mkdir(dir.c_str(), 0755) == 0);
    for (const std::string& program : {fake_server_path, target_path}) {
      const std::string copy = dir + "/" + std::filesystem::path(program).filename().string();
      std::filesystem::copy_file(program, copy);
      REQUIRE(::chmod(copy.c_str(), 0755) == 0);
    }
    REQUIRE(::chown(dir.c_str(), nobody_uid(), static_cast<gid_t>(-1)) == 0);
  }
  std::string program(const std::string& path) const {
    return dir + "/" + std::filesystem::path(path).filename().string();
  }
};

}  // namespace

TEST_CASE("as root, a socket directory another user created first is refused (exit 4)",
          "[control][uid][threads]") {
  if (!can_act_as_nobody()) return;
  nobody_area area;
  target victim(area.root.file("unused"), {{"ARENASTAT_CONTROL", "0"}});  // a root process serving nothing
  const std::string sockets = area.dir + "/sockets";
  const std::string sock = sockets + "/" + victim.pid_text() + ".sock";
  // 'nobody' creates the directory and a forged server under the victim's pid.
  spawned forger = spawn(setpriv, as_nobody(area.program(fake_server_path), {sock, "--mkdir"}), {});
  REQUIRE(read_line(forger.out).rfind("ready ", 0) == 0);
  struct stat st {};
  REQUIRE(::lstat(sock.c_str(), &st) == 0);
  REQUIRE(st.st_uid == nobody_uid());

  const cli_result r = run_cli({victim.pid_text(), "stats"}, {{"ARENASTAT_SOCKET_DIR", sockets}});
  ::close(forger.in);
  CHECK(wait_exit(forger.pid) == 0);
  ::close(forger.out);
  ::close(forger.err);
  CHECK(r.status == 4);
  CHECK(r.out.empty());
  CHECK(r.err == "arenastat: refusing socket directory '" + sockets + "' (ARENASTAT_SOCKET_DIR): it is owned by uid " +
                     std::to_string(nobody_uid()) + ", not by uid 0 (the owner of process " + victim.pid_text() +
                     "); another user may have created it first: remove it, or use another ARENASTAT_SOCKET_DIR\n");
}

TEST_CASE("as root, listing does not follow another user's symbolic link nor remove root's file (exit 4)",
          "[control][uid]") {
  if (!can_act_as_nobody()) return;
  nobody_area area;
  temp_dir victim;  // root's, 0700
  const std::string precious = victim.file(std::to_string(dead_pid()) + ".sock");
  { std::ofstream(precious) << "root's data"; }
  const std::string link = area.dir + "/sockets";
  const cli_result ln = run_as_nobody("/usr/bin/ln", {"-s", victim.path(), link});
  REQUIRE(ln.status == 0);

  const cli_result r = run_cli({}, {{"ARENASTAT_SOCKET_DIR", link}});
  CHECK(r.status == 4);
  CHECK(r.out.empty());
  CHECK(r.err == "arenastat: refusing socket directory '" + link + "' (ARENASTAT_SOCKET_DIR): it is a symbolic link\n");
  CHECK(exists(precious));
}

TEST_CASE("as root, a socket owned by another user is refused (exit 4)", "[control][uid][threads]") {
  if (!can_act_as_nobody()) return;
  temp_dir sockets;  // root's, 0700
  target victim(sockets.path(), {{"ARENASTAT_CONTROL", "0"}});
  const std::string sock = sockets.file(victim.pid_text() + ".sock");
  REQUIRE(make_socket_file(sock));
  REQUIRE(::lchown(sock.c_str(), nobody_uid(), static_cast<gid_t>(-1)) == 0);
  const cli_result r = run_cli({victim.pid_text(), "stats"}, {{"ARENASTAT_SOCKET_DIR", sockets.path()}});
  CHECK(r.status == 4);
  CHECK(r.err == "arenastat: refusing '" + sock + "': it is owned by uid " + std::to_string(nobody_uid()) +
                     ", not by uid 0 (the owner of process " + victim.pid_text() + ")\n");
}

TEST_CASE("root queries a process of another user through that user's directory", "[control][uid][threads]") {
  if (!can_act_as_nobody()) return;
  nobody_area area;
  const std::string sockets = area.dir + "/sockets";
  spawned p = spawn(setpriv, as_nobody(area.program(target_path), {}),
                    {{"ARENASTAT_CONTROL", "1"}, {"ARENASTAT_SOCKET_DIR", sockets}});
  const std::string ready = read_line(p.out);
  REQUIRE(ready.rfind("ready ", 0) == 0);
  const std::string pid = ready.substr(6);
  const cli_result r = run_cli({pid, "help"}, {{"ARENASTAT_SOCKET_DIR", sockets}});
  CHECK(r.status == 0);
  CHECK(r.out.rfind("Commands", 0) == 0);
  CHECK(r.err.empty());
  ::close(p.in);
  CHECK(wait_exit(p.pid) == 0);
  ::close(p.out);
  ::close(p.err);
}

TEST_CASE("as root, a query gets through when another user holds every slot with stalled clients",
          "[control][uid][threads]") {
  if (!can_act_as_nobody()) return;
  nobody_area area;
  const std::string sockets = area.dir + "/sockets";
  spawned p = spawn(setpriv, as_nobody(area.program(target_path), {}),
                    {{"ARENASTAT_CONTROL", "1"}, {"ARENASTAT_SOCKET_DIR", sockets}});
  const std::string ready = read_line(p.out);
  REQUIRE(ready.rfind("ready ", 0) == 0);
  const std::string pid = ready.substr(6);
  auto command = [&](const std::string& line) {
    const std::string l = line + "\n";
    REQUIRE(::write(p.in, l.data(), l.size()) == static_cast<ssize_t>(l.size()));
    return read_line(p.out);
  };
  REQUIRE(command("entries 20000") == "done");  // answers larger than a socket buffer
  // Long stall and response time-outs: the held slots stay held however slow
  // the machine is (serve MAX BACKLOG STALL_MS REQUEST_MS RESPONSE_MS, 0: default).
  REQUIRE(command("serve 4 0 60000 0 60000") == "done");
  // 'nobody' (the process's own user) takes all 4 slots with requests it never reads.
  spawned holder = spawn(setpriv, as_nobody(area.program(fake_server_path), {"--hold=4", sockets + "/" + pid + ".sock"}), {});
  REQUIRE(read_line(holder.out, 60s) == "held 4");

  const cli_result r = run_cli({pid, "help"}, {{"ARENASTAT_SOCKET_DIR", sockets}});
  CHECK(r.status == 0);
  CHECK(r.out.rfind("Commands", 0) == 0);
  CHECK(r.err.empty());

  ::close(holder.in);
  CHECK(wait_exit(holder.pid) == 0);
  ::close(holder.out);
  ::close(holder.err);
  ::close(p.in);
  CHECK(wait_exit(p.pid) == 0);
  ::close(p.out);
  ::close(p.err);
}

TEST_CASE("another user's process whose environment cannot be read is not said to lack ARENASTAT_CONTROL (exit 3)",
          "[control][uid][threads]") {
  if (!can_act_as_nobody()) return;
  // Root's target, asked by 'nobody' with a socket directory that does not
  // exist: the socket is missing, and only the target's environment (which
  // 'nobody' may not read) could say why, so the CLI says exactly that.
  temp_dir sockets;
  target t(sockets.path());
  nobody_area area;
  const std::string cli = area.dir + "/arenastat";
  std::filesystem::copy_file(cli_path, cli);
  REQUIRE(::chmod(cli.c_str(), 0755) == 0);
  const cli_result r =
      run_as_nobody("/usr/bin/env", {"ARENASTAT_SOCKET_DIR=/nonexistent/socks", cli, t.pid_text(), "info"});
  CHECK(r.status == 3);
  CHECK(r.err == "arenastat: process " + t.pid_text() + " has no control socket at '/nonexistent/socks/" +
                     t.pid_text() + ".sock', and its environment, which would say why, cannot be read: run "
                     "arenastat as uid 0 (the owner of process " + t.pid_text() + ") or as root\n");
}

TEST_CASE("a setuid program ignores the ARENASTAT_ variables of the user who starts it", "[control][uid]") {
  if (!can_act_as_nobody()) return;
  nobody_area area;
  // The target copied as a setuid-root program: run by 'nobody' it is in
  // glibc's secure mode (real uid nobody, effective uid root).
  const std::string program = area.program(target_path);
  REQUIRE(::chown(program.c_str(), 0, 0) == 0);
  REQUIRE(::chmod(program.c_str(), 04755) == 0);
  const std::string out_dir = area.root.file("root-only");
  REQUIRE(::mkdir(out_dir.c_str(), 0700) == 0);
  // What 'nobody' asks for: an at-exit report written where only root may write.
  const auto env_writing = [&](const std::string& file) {
    return env_map{{"ARENASTAT_AT_EXIT", "1"}, {"ARENASTAT_AT_EXIT_FILE", file}, {"ARENASTAT_CONTROL", "0"}};
  };
  const std::string asked = out_dir + "/by-nobody.txt";
  spawned p = spawn(setpriv, as_nobody(program, {}), env_writing(asked));
  ::close(p.in);  // end of input: the target returns from main
  const std::string err = read_all(p.err, 5s);
  CHECK(wait_exit(p.pid) == 0);
  ::close(p.out);
  ::close(p.err);
  INFO("stderr: " << err);
  struct stat st {};
  const int found = ::lstat(asked.c_str(), &st);
  const int err_no = errno;
  CHECK(found == -1);  // ignored: no file
  CHECK(err_no == ENOENT);
  CHECK(err.empty());
  // The same program run by root, whose variables it may follow, writes it.
  const std::string by_root = out_dir + "/by-root.txt";
  spawned q = spawn(program, {}, env_writing(by_root));
  ::close(q.in);
  CHECK(wait_exit(q.pid) == 0);
  ::close(q.out);
  ::close(q.err);
  REQUIRE(::lstat(by_root.c_str(), &st) == 0);
  CHECK(st.st_size > 0);
}
