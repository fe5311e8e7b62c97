// A hostile or impostor control server for the trust tests: binds a Unix
// socket at a path of the test's choosing (mode 0600), prints "ready <pid>",
// and answers every connection with a fixed answer, then reads what the
// client sent and closes in order, until its stdin closes.
//
//   fake_server PATH [--mkdir] [--answer=TEXT | --flood=BYTES] [--drop]   ("%p" in PATH: its pid)
//     --mkdir        create PATH's directory (mode 0700) first
//     --answer=TEXT  the answer; "\e" in TEXT becomes ESC, "\n" a newline
//                    (default "ok\nforged answer\n")
//     --flood=BYTES  "ok\n" then BYTES bytes of 'x'
//     --drop         close without reading the request, as the real server
//                    drops a client (the client's read then fails with
//                    ECONNRESET after the answer)
//
//   fake_server --hold=N PATH
//     the other side: a client that opens N connections to the server at
//     PATH, asks each for "stats --json", waits for the first byte of each
//     answer, prints "held N" and then reads nothing more until stdin closes.
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace {

std::string unescape(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 1 < text.size() && (text[i + 1] == 'e' || text[i + 1] == 'n')) {
      out.push_back(text[i + 1] == 'e' ? '\x1b' : '\n');
      ++i;
    } else {
      out.push_back(text[i]);
    }
  }
  return out;
}

void send_all(int fd, const char* data, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w <= 0) return;
    data += w;
    n -= static_cast<std::size_t>(w);
  }
}

}  // namespace

int hold(int n, const std::string& path) {
  int held = 0;
  for (int i = 0; i < n; ++i) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) continue;
    static const char request[] = "stats --json\n";
    send_all(fd, request, sizeof request - 1);
    pollfd p{fd, POLLIN, 0};
    char c = 0;
    if (::poll(&p, 1, 10000) == 1 && ::recv(fd, &c, 1, 0) == 1 && c == 'o') ++held;  // fd stays open
  }
  std::printf("held %d\n", held);
  std::fflush(stdout);
  char buf[64];
  while (::read(0, buf, sizeof buf) > 0) {
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc == 3 && std::string_view(argv[1]).starts_with("--hold=")) {
    return hold(std::atoi(argv[1] + 7), argv[2]);
  }
  if (argc < 2) {
    std::fprintf(stderr, "usage: fake_server PATH [--mkdir] [--answer=TEXT | --flood=BYTES]\n");
    return 2;
  }
  std::string path = argv[1];
  if (const std::size_t at = path.find("%p"); at != std::string::npos) path.replace(at, 2, std::to_string(::getpid()));
  std::string answer = "ok\nforged answer\n";
  unsigned long long flood = 0;
  bool drop = false;
  for (int i = 2; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--drop") {
      drop = true;
    } else if (a == "--mkdir") {
      const std::string dir = path.substr(0, path.rfind('/'));
      if (::mkdir(dir.c_str(), 0700) != 0) {
        std::perror("mkdir");
        return 1;
      }
    } else if (a.starts_with("--answer=")) {
      answer = unescape(a.substr(9));
    } else if (a.starts_with("--flood=")) {
      flood = std::strtoull(std::string(a.substr(8)).c_str(), nullptr, 10);
      answer = "ok\n";
    }
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 || ::chmod(path.c_str(), 0600) != 0 ||
      ::listen(fd, 16) != 0) {
    std::perror("bind");
    return 1;
  }
  std::printf("ready %d\n", static_cast<int>(::getpid()));
  std::fflush(stdout);
  for (;;) {
    pollfd p[2] = {{0, POLLIN, 0}, {fd, POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) continue;
    if (p[0].revents != 0) break;  // stdin closed: done
    const int c = ::accept(fd, nullptr, nullptr);
    if (c < 0) continue;
    send_all(c, answer.data(), answer.size());
    static const std::string chunk(1 << 16, 'x');
    for (unsigned long long left = flood; left > 0;) {
      const std::size_t n = left < chunk.size() ? static_cast<std::size_t>(left) : chunk.size();
      send_all(c, chunk.data(), n);
      left -= n;
    }
    // Closed in order, as the real server does: what the client sent is read
    // first (a Unix socket closed with unread bytes resets the client's read).
    char sink[4096];
    if (drop) {
      // The request must be there, unread, when the socket closes.
      pollfd r{c, POLLIN, 0};
      ::poll(&r, 1, 5000);
      ::close(c);
      continue;
    }
    while (::recv(c, sink, sizeof sink, MSG_DONTWAIT) > 0) {
    }
    ::shutdown(c, SHUT_RDWR);
    while (::recv(c, sink, sizeof sink, MSG_DONTWAIT) > 0) {
    }
    ::close(c);
  }
  ::unlink(path.c_str());
  return 0;
}
