// Socket and temporary file names are read back only in the form the server
// writes them (socket_naming.hpp): the pid as std::to_string spells it.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <string>

#include "socket_naming.hpp"

namespace naming = arenastat::naming;

TEST_CASE("a socket name is a pid only as the server writes it", "[control][naming]") {
  CHECK(naming::pid_of_socket_name("1.sock") == 1L);
  CHECK(naming::pid_of_socket_name("999999999.sock") == 999999999L);
  CHECK(naming::pid_of_socket_name(naming::socket_name(4242)) == 4242L);
  // Leading zeros name no process: "00001.sock" is not where pid 1 listens ("1.sock").
  CHECK_FALSE(naming::pid_of_socket_name("00001.sock"));
  CHECK_FALSE(naming::pid_of_socket_name("0999999.sock"));
  CHECK_FALSE(naming::pid_of_socket_name("0.sock"));
  CHECK_FALSE(naming::pid_of_socket_name("1000000000.sock"));  // 10 digits
  CHECK_FALSE(naming::pid_of_socket_name("+1.sock"));
  CHECK_FALSE(naming::pid_of_socket_name(" 1.sock"));
  CHECK_FALSE(naming::pid_of_socket_name(".sock"));
  CHECK_FALSE(naming::pid_of_socket_name("1.sock.tmp"));
}

TEST_CASE("a temporary name is a pid only as the server writes it", "[control][naming]") {
  CHECK(naming::pid_of_temporary_name(naming::temporary_name(4242)) == 4242L);
  CHECK(naming::pid_of_temporary_name(".7.tmp") == 7L);
  CHECK_FALSE(naming::pid_of_temporary_name(".007.tmp"));
  CHECK_FALSE(naming::pid_of_temporary_name(".0.tmp"));
  CHECK_FALSE(naming::pid_of_temporary_name("7.tmp"));
}

TEST_CASE("a process of this pid namespace has no innermost pid of its own", "[control][naming]") {
  // NSpid lists one pid for a process of the reader's namespace (the
  // contained case, two pids, is end to end in namespaces_test.cpp).
  CHECK_FALSE(arenastat::naming::innermost_pid(::getpid()).has_value());
  CHECK_FALSE(arenastat::naming::innermost_pid(999'999'999).has_value());  // no such process
}

TEST_CASE("a uid is itself inside this process's own user namespace", "[control][naming]") {
  CHECK(arenastat::naming::uid_inside(::getpid(), ::geteuid()) == ::geteuid());
  CHECK_FALSE(arenastat::naming::uid_inside(999'999'999, 0).has_value());
}

TEST_CASE("a uid maps through the lines of a uid_map", "[control][naming]") {
  using arenastat::naming::uid_in_map;
  // Lines "inside outside count", padded as the kernel pads them.
  const std::string map = "         0     100000      65536\n      1000       1000          1\n";
  CHECK(uid_in_map(map, 100000) == 0u);
  CHECK(uid_in_map(map, 100000 + 65535) == 65535u);
  CHECK_FALSE(uid_in_map(map, 100000 + 65536).has_value());  // past the first range
  CHECK(uid_in_map(map, 1000) == 1000u);
  CHECK_FALSE(uid_in_map(map, 0).has_value());
  CHECK_FALSE(uid_in_map(map, 99999).has_value());
  CHECK(uid_in_map("0 0 4294967295\n", 4242) == 4242u);     // no user namespace: the identity
  CHECK_FALSE(uid_in_map("", 0).has_value());
  CHECK_FALSE(uid_in_map("0 0\nx 0 1\n0 0 1 2\n", 0).has_value());  // malformed lines are skipped
  CHECK(uid_in_map("junk\n5 0 1\n", 0) == 5u);
}
