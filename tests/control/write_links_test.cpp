// Writing a file through a symbolic link (docs/cli.md, trust rule 9):
// `html -o FILE` (the CLI) and `dump PATH` (the target) follow a link owned
// by root or by the user writing (/dev/stdout, /dev/fd/N), and refuse one
// owned by anyone else, naming it and its owner, leaving what it points at
// untouched. The cases that plant another user's link need root (lchown):
// tagged [uid], they report themselves skipped otherwise.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arenastat/dump.hpp>
#include <fstream>
#include <system_error>

#include "harness.hpp"

using namespace control_test;

namespace {

constexpr uid_t other_uid = 65534;

std::string contents(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A symbolic link at `link` to `to`, owned by `owner` (needs root unless it is the caller).
void plant_link(const std::string& to, const std::string& link, uid_t owner) {
  REQUIRE(::symlink(to.c_str(), link.c_str()) == 0);
  REQUIRE(::lchown(link.c_str(), owner, static_cast<gid_t>(-1)) == 0);
  struct stat st {};
  REQUIRE(::lstat(link.c_str(), &st) == 0);
  REQUIRE(st.st_uid == owner);
}

bool root_or_skip() {
  if (::geteuid() == 0) return true;
  WARN("skipped: needs root to make a symbolic link owned by uid " << other_uid << " (running as uid "
                                                                    << ::geteuid() << ")");
  return false;
}

}  // namespace

TEST_CASE("html -o /dev/stdout and /dev/fd/1 write the page to standard output", "[control][trust][html][threads]") {
  temp_dir sockets;
  const fake_server server({sockets.file("%p.sock"), "--answer=ok\\n<p>page</p>\\n"});
  const env_map env{{"ARENASTAT_SOCKET_DIR", sockets.path()}};
  for (const std::string file : {"/dev/stdout", "/dev/fd/1"}) {
    INFO(file);
    const cli_result r = run_cli({server.pid(), "html", "-o", file}, env);
    CHECK(r.status == 0);
    CHECK(r.err.empty());
    CHECK(r.out == "<p>page</p>\n" + file + "\n");
  }
}

TEST_CASE("html -o and dump PATH follow a symbolic link owned by the user writing", "[control][trust][html][dump][threads]") {
  temp_dir sockets, shared;
  target t(sockets.path());
  const env_map env{{"ARENASTAT_SOCKET_DIR", sockets.path()}};
  const std::string page = shared.file("page.html"), dump = shared.file("dump.txt");
  { std::ofstream(page) << "an older, longer page that must not survive at the end\n"; }
  plant_link(page, shared.file("page-link"), ::geteuid());
  plant_link(dump, shared.file("dump-link"), ::geteuid());

  const cli_result html = run_cli({t.pid_text(), "html", "-o", shared.file("page-link")}, env);
  CHECK(html.status == 0);
  CHECK(html.err.empty());
  CHECK(html.out == shared.file("page-link") + "\n");
  CHECK(contents(page).starts_with("<!DOCTYPE html>"));
  CHECK(contents(page).find("must not survive") == std::string::npos);  // truncated, not overwritten in place

  const cli_result dumped = run_cli({t.pid_text(), "dump", shared.file("dump-link")}, env);
  CHECK(dumped.status == 0);
  CHECK(dumped.err.empty());
  CHECK(dumped.out == shared.file("dump-link") + "\n");
  CHECK(contents(dump).starts_with("TOTAL size=13000 "));
}

TEST_CASE("html -o and dump PATH refuse a symbolic link owned by another user and leave its target alone",
          "[control][trust][html][dump][uid][threads]") {
  if (!root_or_skip()) return;
  temp_dir sockets, shared;
  target t(sockets.path());
  const env_map env{{"ARENASTAT_SOCKET_DIR", sockets.path()}};
  const std::string victim = shared.file("victim");
  { std::ofstream(victim) << "SECRET\n"; }
  // A name with an escape sequence and a line break: the message shows it escaped.
  const std::string page = shared.file("report\x1b[2J\n.html"), dump = shared.file("d.txt");
  const std::string page_quoted = "'" + shared.path() + "/report\\x1b[2J\\x0a.html'";
  plant_link(victim, page, other_uid);
  plant_link(victim, dump, other_uid);
  const std::string reason = "it is a symbolic link owned by uid 65534, and only links owned by root or by uid " +
                             std::to_string(::geteuid()) + " (the user writing) are followed";

  const cli_result html = run_cli({t.pid_text(), "html", "-o", page}, env);
  CHECK(html.status == 4);
  CHECK(html.out.empty());
  CHECK(html.err == "arenastat: html: refusing to write " + page_quoted + ": " + reason + "; choose another FILE\n");
  const cli_result dumped = run_cli({t.pid_text(), "dump", dump}, env);
  CHECK(dumped.status == 1);
  CHECK(dumped.out.empty());
  CHECK(dumped.err == "arenastat: " + t.pid_text() + ": dump: refusing to write '" + dump + "': " + reason +
                          "; give another PATH\n");
  CHECK(contents(victim) == "SECRET\n");
}

TEST_CASE("a dangling symbolic link owned by another user creates nothing", "[control][trust][dump][uid][threads]") {
  if (!root_or_skip()) return;
  temp_dir sockets, shared;
  target t(sockets.path());
  const env_map env{{"ARENASTAT_SOCKET_DIR", sockets.path()}};
  const std::string nowhere = shared.file("created-through-the-link"), link = shared.file("d.txt");
  plant_link(nowhere, link, other_uid);
  const cli_result dumped = run_cli({t.pid_text(), "dump", link}, env);
  CHECK(dumped.status == 1);
  CHECK(dumped.err.find(": dump: refusing to write '" + link + "': it is a symbolic link owned by uid 65534") !=
        std::string::npos);
  CHECK(::access(nowhere.c_str(), F_OK) != 0);
}

// Every link on the way is checked, not only the last component: a directory
// of the path, or a link inside another link's target, planted by another
// user would otherwise lead root's write anywhere.
TEST_CASE("html -o and dump PATH refuse a path that leads through another user's symbolic link",
          "[control][trust][html][dump][uid][threads]") {
  if (!root_or_skip()) return;
  temp_dir sockets, shared, victims;
  target t(sockets.path());
  const env_map env{{"ARENASTAT_SOCKET_DIR", sockets.path()}};
  const std::string rule = ", owned by uid 65534, and only links owned by root or by uid " +
                           std::to_string(::geteuid()) + " (the user writing) are followed";
  // A directory of the path.
  plant_link(victims.path(), shared.file("out"), other_uid);
  const std::string page = shared.file("out") + "/report.html", dump = shared.file("out") + "/dump.txt";
  const cli_result html = run_cli({t.pid_text(), "html", "-o", page}, env);
  CHECK(html.status == 4);
  CHECK(html.err == "arenastat: html: refusing to write '" + page + "': its path leads through the symbolic link '" +
                        shared.file("out") + "'" + rule + "; choose another FILE\n");
  const cli_result dumped = run_cli({t.pid_text(), "dump", dump}, env);
  CHECK(dumped.status == 1);
  CHECK(dumped.err == "arenastat: " + t.pid_text() + ": dump: refusing to write '" + dump +
                          "': its path leads through the symbolic link '" + shared.file("out") + "'" + rule +
                          "; give another PATH\n");
  CHECK(::access(victims.file("report.html").c_str(), F_OK) != 0);
  CHECK(::access(victims.file("dump.txt").c_str(), F_OK) != 0);
  // A link of the writer's own that leads to another user's link to a file.
  const std::string victim = victims.file("victim");
  { std::ofstream(victim) << "SECRET\n"; }
  plant_link(victim, shared.file("theirs"), other_uid);
  plant_link(shared.file("theirs"), shared.file("mine"), ::geteuid());
  const cli_result chained = run_cli({t.pid_text(), "html", "-o", shared.file("mine")}, env);
  CHECK(chained.status == 4);
  CHECK(chained.err == "arenastat: html: refusing to write '" + shared.file("mine") +
                           "': its path leads through the symbolic link '" + shared.file("theirs") + "'" + rule +
                           "; choose another FILE\n");
  CHECK(contents(victim) == "SECRET\n");
}

TEST_CASE("html -o follows the writer's own links in the directories of its path", "[control][trust][html][threads]") {
  temp_dir sockets, shared;
  target t(sockets.path());
  const env_map env{{"ARENASTAT_SOCKET_DIR", sockets.path()}};
  REQUIRE(::mkdir(shared.file("real").c_str(), 0700) == 0);
  plant_link("real", shared.file("relative"), ::geteuid());      // relative to the link's directory
  plant_link(shared.file("relative"), shared.file("absolute"), ::geteuid());  // a link to a link
  const std::string file = shared.file("absolute") + "/../real/./page.html";
  const cli_result html = run_cli({t.pid_text(), "html", "-o", file}, env);
  CHECK(html.status == 0);
  CHECK(html.err.empty());
  CHECK(contents(shared.file("real/page.html")).starts_with("<!DOCTYPE html>"));
}

TEST_CASE("html -o never waits for a FIFO's reader", "[control][trust][html][threads]") {
  temp_dir sockets, shared;
  target t(sockets.path());
  const env_map env{{"ARENASTAT_SOCKET_DIR", sockets.path()}};
  const std::string fifo = shared.file("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  const cli_result alone = run_cli({t.pid_text(), "html", "-o", fifo}, env);
  CHECK(alone.status == 6);
  CHECK(alone.err == "arenastat: html: cannot write '" + fifo +
                         "': No such device or address (a FIFO with no reader: html -o does not wait for one)\n");
}

TEST_CASE("html -o refuses a FIFO of another user's, whose reader could hold the CLI",
          "[control][trust][html][uid][threads]") {
  if (!root_or_skip()) return;
  temp_dir sockets, shared;
  target t(sockets.path());
  const env_map env{{"ARENASTAT_SOCKET_DIR", sockets.path()}};
  const std::string fifo = shared.file("fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0666) == 0);
  REQUIRE(::chown(fifo.c_str(), other_uid, static_cast<gid_t>(-1)) == 0);
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // a reader that never reads
  REQUIRE(reader >= 0);
  const cli_result r = run_cli({t.pid_text(), "html", "-o", fifo}, env);
  CHECK(r.status == 4);
  CHECK(r.err == "arenastat: html: refusing to write '" + fifo +
                     "': it is a FIFO of uid 65534, whose reader could hold the CLI; choose another FILE\n");
  char byte;
  CHECK(::read(reader, &byte, 1) == 0);  // nothing was written
  ::close(reader);
}

TEST_CASE("the at-exit report never goes through another user's symbolic link",
          "[control][trust][write_errors][uid][threads]") {
  if (!root_or_skip()) return;
  temp_dir shared;
  const std::string victim = shared.file("victim"), link = shared.file("report.txt");
  { std::ofstream(victim) << "SECRET\n"; }
  plant_link(victim, link, other_uid);
  const exited r = run_target_to_exit({{"ARENASTAT_AT_EXIT", "1"}, {"ARENASTAT_AT_EXIT_FILE", link}});
  CHECK(r.status == 0);
  CHECK(r.err.rfind("arenastat: refusing to write ARENASTAT_AT_EXIT_FILE '" + link +
                      "': it is a symbolic link owned by uid 65534, and only links owned by root or by uid " +
                      std::to_string(::geteuid()) +
                      " (the user writing) are followed; printing the report to stderr\narenastat report",
                  0) == 0);
  CHECK(contents(victim) == "SECRET\n");
}

// The .prom files are made as a temporary beside the file, renamed into place:
// the directory is reached by the same walk, so a directory link of another
// user's on the way is refused too.
TEST_CASE("an at-exit .prom file is never written through another user's directory link",
          "[control][trust][write_errors][uid][threads]") {
  if (!root_or_skip()) return;
  temp_dir shared, victims;
  plant_link(victims.path(), shared.file("out"), other_uid);
  const std::string file = shared.file("out") + "/metrics.prom";
  const exited r = run_target_to_exit({{"ARENASTAT_AT_EXIT", "--prometheus"}, {"ARENASTAT_AT_EXIT_FILE", file}});
  CHECK(r.status == 0);
  CHECK(r.err.rfind("arenastat: cannot write the at-exit report to ARENASTAT_AT_EXIT_FILE '" + file +
                      "': metrics: refusing to write '" + file + "': its path leads through the symbolic link '" +
                      shared.file("out") + "', owned by uid 65534, and only links owned by root or by uid " +
                      std::to_string(::geteuid()) +
                      " (the user writing) are followed: Too many levels of symbolic links; printing it to stderr\n# HELP ",
                  0) == 0);
  CHECK(::access(victims.file("metrics.prom").c_str(), F_OK) != 0);
}

TEST_CASE("an at-exit .prom file is written through the writer's own directory link", "[control][trust][threads]") {
  temp_dir shared;
  REQUIRE(::mkdir(shared.file("real").c_str(), 0700) == 0);
  plant_link(shared.file("real"), shared.file("mine"), ::geteuid());
  const exited r = run_target_to_exit(
      {{"ARENASTAT_AT_EXIT", "--prometheus"}, {"ARENASTAT_AT_EXIT_FILE", shared.file("mine") + "/metrics.prom"}});
  CHECK(r.status == 0);
  CHECK(r.err.empty());
  CHECK(contents(shared.file("real/metrics.prom")).starts_with("# HELP "));
}

namespace {

// A target, and a sticky directory anyone may write to, as /tmp.
struct sticky_shared {
  temp_dir sockets, shared;
  target t{sockets.path()};
  env_map env{{"ARENASTAT_SOCKET_DIR", sockets.path()}};
  sticky_shared() { REQUIRE(::chmod(shared.path().c_str(), 01777) == 0); }
  // html -o (exit 4) and dump PATH (exit 1, the target's answer) both refuse `path` for `reason`.
  void check_both_refuse(const std::string& path, const std::string& reason) const {
    const cli_result html = run_cli({t.pid_text(), "html", "-o", path}, env);
    CHECK(html.status == 4);
    CHECK(html.err == "arenastat: html: refusing to write '" + path + "': " + reason + "; choose another FILE\n");
    const cli_result dumped = run_cli({t.pid_text(), "dump", path}, env);
    CHECK(dumped.status == 1);
    CHECK(dumped.err == "arenastat: " + t.pid_text() + ": dump: refusing to write '" + path + "': " + reason +
                            "; give another PATH\n");
  }
};

}  // namespace

// In a sticky directory (/tmp) the kernel refuses to create through another
// user's link (EACCES) before O_NOFOLLOW is looked at: still the refusal, named.
TEST_CASE("html -o and dump PATH refuse another user's link in a sticky directory, naming it",
          "[control][trust][html][dump][uid][threads]") {
  if (!root_or_skip()) return;
  const sticky_shared dir;
  const std::string victim = dir.shared.file("victim"), link = dir.shared.file("report.html");
  { std::ofstream(victim) << "SECRET\n"; }
  plant_link(victim, link, other_uid);
  dir.check_both_refuse(link, "it is a symbolic link owned by uid 65534, and only links owned by root or by uid " +
                                  std::to_string(::geteuid()) + " (the user writing) are followed");
  CHECK(contents(victim) == "SECRET\n");
}

TEST_CASE("html -o and dump PATH refuse another user's file in a sticky directory, untouched",
          "[control][trust][html][dump][uid][threads]") {
  // As Linux's fs.protected_regular: root writing into a file that uid 65534
  // made in a shared /tmp would let its owner read the report (or the owner
  // planted it to be written).
  if (!root_or_skip()) return;
  const sticky_shared dir;
  const std::string theirs = dir.shared.file("report.html");
  { std::ofstream(theirs) << "THEIRS\n"; }
  REQUIRE(::chown(theirs.c_str(), other_uid, static_cast<gid_t>(-1)) == 0);
  dir.check_both_refuse(theirs, "it is a file of uid 65534 in a sticky directory others may write to, and only "
                                "files of the user writing (uid " + std::to_string(::geteuid()) +
                                ") or of the directory's owner are written there");
  CHECK(contents(theirs) == "THEIRS\n");  // not truncated either
  // root's own file there is written as before.
  const std::string mine = dir.shared.file("mine.html");
  { std::ofstream(mine) << "OLD\n"; }
  CHECK(run_cli({dir.t.pid_text(), "html", "-o", mine}, dir.env).status == 0);
  CHECK(contents(mine).rfind("<!DOCTYPE html>", 0) == 0);
}

TEST_CASE("html -o and dump PATH refuse a file with several hard links in a directory others may write to, untouched",
          "[control][trust][html][dump][threads]") {
  // Another user may hard-link a file of the writer's (root's /etc/shadow,
  // where fs.protected_hardlinks is off) into /tmp under the name the writer
  // will use: writing there would replace that file's contents. Here the
  // writer's own file, linked by the writer: the count of names is the sign.
  const sticky_shared dir;
  temp_dir elsewhere;
  const std::string precious = elsewhere.file("precious");
  { std::ofstream(precious) << "PRECIOUS\n"; }
  const auto reason = [](int links) {
    return "it is a file with " + std::to_string(links) + " hard links in a directory another user may write to (who "
           "may have linked a file from elsewhere under this name), and only files with one name are written there";
  };
  const std::string linked = dir.shared.file("report.html");
  REQUIRE(::link(precious.c_str(), linked.c_str()) == 0);
  dir.check_both_refuse(linked, reason(2));
  CHECK(contents(precious) == "PRECIOUS\n");
  // So in a directory open to group writing, sticky or not.
  temp_dir group;
  REQUIRE(::chmod(group.path().c_str(), 0770) == 0);
  const std::string in_group = group.file("report.html");
  REQUIRE(::link(precious.c_str(), in_group.c_str()) == 0);  // its third name
  dir.check_both_refuse(in_group, reason(3));
  CHECK(contents(precious) == "PRECIOUS\n");
  // In the writer's own directory, closed to others, the file is the writer's to write.
  const std::string plain = elsewhere.file("also");
  REQUIRE(::link(precious.c_str(), plain.c_str()) == 0);
  CHECK(run_cli({dir.t.pid_text(), "html", "-o", plain}, dir.env).status == 0);
  CHECK(contents(precious).rfind("<!DOCTYPE html>", 0) == 0);
}

// sudo arenastat <pid> html -o /dev/stdout | less: the pipe was made by the
// user who ran sudo, and root's CLI writes the page into it, as into stdout.
TEST_CASE("html -o /dev/stdout writes into a pipe another user made", "[control][trust][html][uid][threads]") {
  if (!root_or_skip()) return;
  temp_dir sockets;
  const fake_server server({sockets.file("%p.sock"), "--answer=ok\\n<p>page</p>\\n"});
  int pipe_fds[2];
  REQUIRE(::seteuid(other_uid) == 0);
  const int made = ::pipe2(pipe_fds, O_CLOEXEC);
  REQUIRE(::seteuid(0) == 0);
  REQUIRE(made == 0);
  struct stat st {};
  REQUIRE(::fstat(pipe_fds[1], &st) == 0);
  REQUIRE(st.st_uid == other_uid);
  posix_spawn_file_actions_t fa;
  ::posix_spawn_file_actions_init(&fa);
  ::posix_spawn_file_actions_adddup2(&fa, pipe_fds[1], 1);
  pid_t pid = -1;
  REQUIRE(spawn_with(pid, fa, cli_path, {server.pid(), "html", "-o", "/dev/stdout"},
                     {{"ARENASTAT_SOCKET_DIR", sockets.path()}}) == 0);
  ::close(pipe_fds[1]);
  const std::string out = read_all(pipe_fds[0], 10s);
  ::close(pipe_fds[0]);
  CHECK(wait_exit(pid, 10s) == 0);
  CHECK(out == "<p>page</p>\n/dev/stdout\n");
}

TEST_CASE("a written path with a NUL or a trailing slash gets the kernel's answer, not another file",
          "[control][trust][dump]") {
  temp_dir shared;
  { std::ofstream(shared.file("regular")) << "x\n"; }
  REQUIRE(::mkdir(shared.file("real").c_str(), 0700) == 0);
  // Up to the NUL, a directory; past it, a walk to another file: open(2) would stop at the NUL.
  const std::string with_nul = shared.file("real") + std::string(1, '\0') + "/../elsewhere";
  CHECK_THROWS_WITH(arenastat::write_dump(with_nul), Catch::Matchers::EndsWith(": Invalid argument"));
  CHECK(::access(shared.file("elsewhere").c_str(), F_OK) != 0);
  CHECK_THROWS_WITH(arenastat::write_dump(shared.file("regular") + "/"),
                    "dump: cannot create '" + shared.file("regular") + "/': Not a directory");
  CHECK_THROWS_WITH(arenastat::write_dump(shared.file("real") + "/"),
                    "dump: cannot create '" + shared.file("real") + "/': Is a directory");
}

// The rule seen from a user other than root: links of its own and of root's
// are followed, another user's refused (a child process that drops to uid 65534).
TEST_CASE("a non-root writer follows its own and root's links and refuses another user's",
          "[control][trust][dump][uid]") {
  if (!root_or_skip()) return;
  temp_dir shared;
  REQUIRE(::chmod(shared.path().c_str(), 0777) == 0);
  plant_link(shared.file("own-target"), shared.file("own"), other_uid);
  plant_link(shared.file("root-target"), shared.file("roots"), 0);
  plant_link(shared.file("third-target"), shared.file("third"), other_uid - 1);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    if (::setresgid(other_uid, other_uid, other_uid) != 0 || ::setresuid(other_uid, other_uid, other_uid) != 0) _exit(10);
    int code = 0;
    try {
      arenastat::write_dump(shared.file("own"));
    } catch (...) {
      code |= 1;
    }
    try {
      arenastat::write_dump(shared.file("roots"));
    } catch (...) {
      code |= 2;
    }
    try {
      arenastat::write_dump(shared.file("third"));
      code |= 4;
    } catch (const std::system_error& e) {
      if (std::string(e.what()).find("it is a symbolic link owned by uid 65533, and only links owned by root or by "
                                     "uid 65534 (the user writing) are followed") == std::string::npos)
        code |= 8;
    }
    _exit(code);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(contents(shared.file("own-target")).starts_with("TOTAL "));
  CHECK(contents(shared.file("root-target")).starts_with("TOTAL "));
  CHECK(::access(shared.file("third-target").c_str(), F_OK) != 0);
}
