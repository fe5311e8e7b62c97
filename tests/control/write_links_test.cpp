// Writing a file through a symbolic link (docs/cli.md, trust rule 9):
// `html -o FILE` (the CLI) and `dump PATH` (the target) follow a link owned
// by root or by the user writing (/dev/stdout, /dev/fd/N), and refuse one
// owned by anyone else, naming it and its owner, leaving what it points at
// untouched. The cases that plant another user's link need root (lchown):
// tagged [uid], they report themselves skipped otherwise.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

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
