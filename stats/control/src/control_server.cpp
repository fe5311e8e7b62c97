// The control server (control.hpp): a secure Unix socket per process and one
// thread that serves every client with poll(), each with a deadline and a
// bounded request line. Requests are answered by handle_request().
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "arenastat/control.hpp"
#include "control_internal.hpp"
#include "control_request.hpp"
#include "quoted.hpp"
#include "socket_naming.hpp"

namespace arenastat::control {
namespace {

using clock = std::chrono::steady_clock;

struct atomic_counters {
  std::atomic<std::uint64_t> served{0}, refused{0}, timed_out{0}, bad_requests{0}, busy{0}, dropped{0};
};

// What the server thread owns while it runs; shared with stop() for the wake pipe.
struct server {
  int listen_fd = -1;
  int wake_read = -1, wake_write = -1;
  options opts;
  std::atomic<bool> stop_requested{false};
  std::atomic<bool> finished{false};
};

// Eternal state: the server may be stopped during static destruction.
struct control_state {
  std::mutex mutex;  // guards every field below; never taken by the server thread
  std::shared_ptr<server> srv;
  std::thread thread;
  std::string path;
  std::atomic<pid_t> owner_pid{0};  // the process that started the server (fork check)
  bool at_exit_registered = false;
  atomic_counters counts;
  // The socket path for readers, including the server thread's `info` answer:
  // a lock of its own, never held while stop() waits for the thread.
  std::mutex path_mutex;
  std::string published_path;
};
control_state& state() {
  static control_state* s = new control_state;
  return *s;
}

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error("arenastat control: " + what); }

std::string octal_mode(mode_t m) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(m & 07777));
  return buf;
}

// Creates `dir` 0700 if missing; refuses a directory we do not own or that
// group or others may enter. `shown` is how messages name it: quoted, and
// where it came from (socket_dir_origin).
void ensure_secure_dir(const std::string& dir, const std::string& shown) {
  if (::mkdir(dir.c_str(), 0700) == 0) {
    ::chmod(dir.c_str(), 0700);  // whatever the umask
  } else if (errno != EEXIST) {
    fail("cannot create the socket directory " + shown + ": " + detail::error_text(errno));
  }
  struct stat st {};
  if (::lstat(dir.c_str(), &st) != 0) {
    fail("cannot inspect the socket directory " + shown + ": " + detail::error_text(errno));
  }
  if (S_ISLNK(st.st_mode)) fail("socket directory " + shown + " is a symbolic link; refusing to use it");
  if (!S_ISDIR(st.st_mode)) fail("socket directory " + shown + " exists and is not a directory");
  if (st.st_uid != ::geteuid()) {
    fail("socket directory " + shown + " is owned by uid " + std::to_string(st.st_uid) +
         ", not by this process's uid " + std::to_string(::geteuid()) + "; refusing to start");
  }
  if ((st.st_mode & 077) != 0) {
    fail("socket directory " + shown + " has mode " + octal_mode(st.st_mode) +
         ", open to group or others; it must be 0700 (chmod 700 " + detail::quoted(dir) + ")");
  }
}

// Removes "<pid>.sock" and ".<pid>.tmp" sockets left by processes that no
// longer exist; never follows a symbolic link, never removes anything else.
void remove_stale_sockets(const std::string& dir) {
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) return;
  DIR* d = ::fdopendir(dfd);
  if (d == nullptr) {
    ::close(dfd);
    return;
  }
  const long self = static_cast<long>(::getpid());
  while (const dirent* e = ::readdir(d)) {
    std::optional<long> pid = naming::pid_of_socket_name(e->d_name);
    if (!pid) pid = naming::pid_of_temporary_name(e->d_name);
    if (!pid || *pid == self || !naming::process_gone(*pid)) continue;
    struct stat st {};
    if (::fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    // A socket something still listens on belongs to a process of another
    // pid namespace (its pid means another process here): kept.
    if (S_ISSOCK(st.st_mode) && st.st_uid == ::geteuid() && naming::nobody_listens(dfd, e->d_name))
      ::unlinkat(dfd, e->d_name, 0);
  }
  ::closedir(d);
}

sockaddr_un address_of(const std::string& path) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::memcpy(a.sun_path, path.c_str(), path.size() + 1);
  return a;
}

// Binds under a temporary name, sets 0600, listens, renames into place.
int bind_socket(const std::string& dir, const std::string& path) {
  const std::string tmp = dir + "/" + naming::temporary_name(::getpid());
  if (tmp.size() >= sizeof(sockaddr_un::sun_path)) {
    fail("socket path " + detail::quoted(tmp) + " is longer than " + std::to_string(sizeof(sockaddr_un::sun_path) - 1) +
         " bytes; set ARENASTAT_SOCKET_DIR to a shorter directory");
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) fail("socket(): " + detail::error_text(errno));
  ::unlink(tmp.c_str());
  const sockaddr_un a = address_of(tmp);
  auto give_up = [&](const std::string& what) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    fail(what + ": " + detail::error_text(err));
  };
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) give_up("cannot bind " + detail::quoted(tmp));
  if (::chmod(tmp.c_str(), 0600) != 0) give_up("cannot chmod 0600 " + detail::quoted(tmp));
  if (::listen(fd, 128) != 0) give_up("cannot listen on " + detail::quoted(tmp));
  // rename() atomically replaces a stale socket left by a dead process with our pid.
  if (::rename(tmp.c_str(), path.c_str()) != 0) give_up("cannot rename " + detail::quoted(tmp) + " to " + detail::quoted(path));
  return fd;
}

// ---- the server thread ----------------------------------------------------

struct client {
  int fd = -1;
  uid_t uid = 0;
  wire::request_reader reader;
  std::string response;                // the part of the answer being sent
  std::optional<report_stream> rest;   // the rest of a streamed answer, rendered as it is sent
  std::size_t sent = 0;
  bool writing = false;
  bool queued = false;              // a complete request waiting for its turn (walks the table)
  clock::time_point connected;
  clock::time_point complete;       // when the request line was complete: the response time-out runs from here
  clock::time_point deadline;
  clock::time_point last_progress;  // last time the client took bytes of its answer
};

// The peer's uid when it may be served (our effective uid, or root).
std::optional<uid_t> allowed_peer(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return std::nullopt;
  if (cred.uid != ::geteuid() && cred.uid != 0) return std::nullopt;
  return cred.uid;
}

// Reads and drops what a client still sends, so close() does not reset the
// connection: a Unix socket closed with unread bytes makes the peer's read
// fail with ECONNRESET once it has read what was sent. After the shutdown
// nothing more can arrive, so the second drain leaves the queue empty.
void drain(int fd) {
  char sink[4096];
  for (int i = 0; i < 16; ++i) {
    if (::recv(fd, sink, sizeof sink, MSG_DONTWAIT) <= 0) break;
  }
}
void drain_and_close(int fd) {
  drain(fd);
  ::shutdown(fd, SHUT_RDWR);
  drain(fd);
  ::close(fd);
}

void best_effort_send(int fd, std::string_view text) {
  [[maybe_unused]] const ssize_t n = ::send(fd, text.data(), text.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

class server_loop {
 public:
  server_loop(server& s, atomic_counters& counts) : s_(s), counts_(counts) {}

  void run() {
    std::vector<pollfd> fds;
    while (!s_.stop_requested.load(std::memory_order_acquire)) {
      fds.clear();
      fds.push_back({s_.wake_read, POLLIN, 0});
      // Out of descriptors: stop polling the listener for a moment rather than spin.
      const bool accepting = clock::now() >= accept_paused_until_;
      fds.push_back({s_.listen_fd, static_cast<short>(accepting ? POLLIN : 0), 0});
      // A queued client is not read (what it sends after its line stays
      // unread); a hang-up (POLLHUP comes without asking) changes nothing: its
      // request runs in its turn (a dump or baseline has effects of its own),
      // and the answer finds nobody to take it.
      for (const client& c : clients_)
        fds.push_back({c.fd, static_cast<short>(c.writing ? POLLOUT : c.queued ? 0 : POLLIN), 0});
      const int n = ::poll(fds.data(), fds.size(), poll_timeout_ms());
      if (n < 0) {
        if (errno == EINTR) continue;
        detail::warn("arenastat control: poll failed: " + detail::error_text(errno) + "; server stopped\n");
        break;
      }
      if (fds[0].revents != 0) drain_wake();
      if (s_.stop_requested.load(std::memory_order_acquire)) break;
      for (std::size_t i = 0; i < clients_.size(); ++i) {
        if (fds[i + 2].revents != 0 && clients_[i].fd >= 0) serve(clients_[i], fds[i + 2].revents);
      }
      answer_next_queued();
      expire_deadlines();
      std::erase_if(clients_, [](const client& c) { return c.fd < 0; });
      if (fds[1].revents != 0) accept_all();
      std::erase_if(clients_, [](const client& c) { return c.fd < 0; });  // closed to make room
    }
    // Stopping (control::stop(), at exit too): a client still being answered
    // is dropped (its answer is cut short: it must not read an end of file),
    // one still sending its request is closed in order.
    for (client& c : clients_) {
      if (c.fd < 0) continue;
      if (c.writing || c.queued) ::close(c.fd);
      else drain_and_close(c.fd);
    }
    clients_.clear();
  }

 private:
  int poll_timeout_ms() const {
    if (std::any_of(clients_.begin(), clients_.end(), [](const client& c) { return c.queued; })) return 0;
    const bool paused = clock::now() < accept_paused_until_;
    if (clients_.empty() && !paused) return -1;
    clock::time_point first = paused ? accept_paused_until_ : clients_.front().deadline;
    for (const client& c : clients_) {
      first = std::min(first, c.deadline);
      if (c.writing) first = std::min(first, c.last_progress + s_.opts.stall_timeout);
    }
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(first - clock::now()).count();
    return static_cast<int>(std::clamp<long long>(left, 0, 60'000));
  }

  void drain_wake() {
    char buf[64];
    while (::read(s_.wake_read, buf, sizeof buf) > 0) {
    }
  }

  void accept_all() {
    for (;;) {
      const int fd = ::accept4(s_.listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          accept_paused_until_ = clock::now() + std::chrono::milliseconds(100);
        }
        return;  // EAGAIN: nothing more to accept now
      }
      const std::optional<uid_t> uid = allowed_peer(fd);
      if (!uid) {
        counts_.refused.fetch_add(1, std::memory_order_relaxed);
        ::close(fd);
        continue;
      }
      if (!make_room_for(*uid)) {
        counts_.busy.fetch_add(1, std::memory_order_relaxed);
        best_effort_send(fd, "error server busy: " + std::to_string(clients_.size()) +
                                 " clients are being answered; retry later\n");
        drain_and_close(fd);
        continue;
      }
      client c;
      c.fd = fd;
      c.uid = *uid;
      c.connected = clock::now();
      c.deadline = c.connected + s_.opts.request_timeout;
      clients_.push_back(std::move(c));
    }
  }

  void respond(client& c, std::string response) { respond(c, control::answer{std::move(response), std::nullopt}); }

  void respond(client& c, control::answer a) {
    c.response = std::move(a.head);
    c.rest = std::move(a.rest);
    c.sent = 0;
    c.writing = true;
    c.last_progress = clock::now();
    c.deadline = c.complete + s_.opts.response_timeout;  // a wait for its turn included
    write_some(c);  // usually completes at once
    if (c.fd >= 0) limit_backlog(c);
  }

  // Connection policy (docs/cli.md, "Connections"). When a new client finds
  // every one of max_clients slots taken, room is made by closing, in order:
  // the oldest client that has not sent a request line yet (idle), with
  // "error server busy: ..."; else, when another uid holds more than
  // uid_share() slots, that uid's client that has taken nothing of its answer
  // for the longest. Otherwise the new client is told the server is busy. So
  // one user's idle or stalled connections cannot lock another user out.
  std::size_t uid_share() const {
    const std::size_t n = s_.opts.max_clients;
    return n < 2 ? n : n - std::max<std::size_t>(1, n / 4);
  }

  bool make_room_for(uid_t uid) {
    std::size_t total = 0;
    client* oldest_idle = nullptr;
    for (client& c : clients_) {
      if (c.fd < 0) continue;
      ++total;
      if (!c.writing && !c.queued && (oldest_idle == nullptr || c.connected < oldest_idle->connected))
        oldest_idle = &c;
    }
    if (total < s_.opts.max_clients) return true;
    if (oldest_idle != nullptr) {
      counts_.dropped.fetch_add(1, std::memory_order_relaxed);
      best_effort_send(oldest_idle->fd, "error server busy: this connection sent no request and was closed to "
                                        "serve a newer one; retry\n");
      finish(*oldest_idle);
      return true;
    }
    client* stalest = nullptr;
    for (client& c : clients_) {
      if (c.fd < 0 || c.uid == uid) continue;
      const auto held = std::count_if(clients_.begin(), clients_.end(),
                                      [&](const client& o) { return o.fd >= 0 && o.uid == c.uid; });
      if (static_cast<std::size_t>(held) <= uid_share()) continue;
      if (stalest == nullptr || c.last_progress < stalest->last_progress) stalest = &c;
    }
    if (stalest == nullptr) return false;
    counts_.dropped.fetch_add(1, std::memory_order_relaxed);
    drop(*stalest);
    return true;
  }

  // Keeps the answers not yet taken by their clients within
  // options::max_answer_backlog: while over it, the client (other than
  // `fresh`) that has taken nothing for the longest is dropped.
  void limit_backlog(const client& fresh) {
    for (;;) {
      std::size_t pending = 0;
      client* stalest = nullptr;
      for (client& c : clients_) {
        if (c.fd < 0 || !c.writing) continue;
        pending += c.response.size() - c.sent + (c.rest ? c.rest->bytes_held() : 0);
        if (&c != &fresh && (stalest == nullptr || c.last_progress < stalest->last_progress)) stalest = &c;
      }
      if (pending <= s_.opts.max_answer_backlog || stalest == nullptr) return;
      counts_.dropped.fetch_add(1, std::memory_order_relaxed);
      drop(*stalest);
    }
  }

  // The answer (or an error line) was sent whole: closes in order, so the
  // client reads it all, then end of file.
  void finish(client& c) {
    drain_and_close(c.fd);
    forget(c);
  }
  // Drops a client before its answer is complete (it took nothing for
  // stall_timeout, was not done within response_timeout, or made room): the
  // socket is closed without reading what the client sent after its request
  // line (serve() reads up to the LF only), so a client that sent a byte
  // more (the CLI does) reads ECONNRESET after the part it got, not an end
  // of file that would pass for the whole answer.
  void drop(client& c) {
    ::close(c.fd);
    forget(c);
  }
  void forget(client& c) {
    c.fd = -1;
    std::string().swap(c.response);  // the answer's memory goes now, not at the next erase
    c.rest.reset();
  }

  void reject(client& c, const std::string& message) {
    counts_.bad_requests.fetch_add(1, std::memory_order_relaxed);
    c.complete = clock::now();
    respond(c, "error " + wire::single_line(message) + "\n");
  }

  void serve(client& c, short revents) {
    if (c.writing) {
      if (revents & (POLLOUT | POLLERR | POLLHUP)) write_some(c);
      return;
    }
    if (c.queued) return;  // see run(): it waits for its turn whatever happens
    char buf[1024];
    for (;;) {
      // Up to the LF and no further: what the client sends after its line
      // stays unread until the connection ends (see drop()).
      ssize_t n = ::recv(c.fd, buf, sizeof buf, MSG_DONTWAIT | MSG_PEEK);
      if (n > 0) {
        const void* lf = std::memchr(buf, '\n', static_cast<std::size_t>(n));
        const std::size_t take = lf ? static_cast<std::size_t>(static_cast<const char*>(lf) - buf) + 1
                                    : static_cast<std::size_t>(n);
        n = ::recv(c.fd, buf, take, MSG_DONTWAIT);  // what was peeked is there: one reader
      }
      if (n > 0) {
        switch (c.reader.feed(std::string_view(buf, static_cast<std::size_t>(n)))) {
          case wire::request_reader::state::incomplete: continue;
          case wire::request_reader::state::too_long:
            reject(c, "request longer than " + std::to_string(wire::max_request_bytes - 1) +
                          " bytes without a newline");
            return;
          case wire::request_reader::state::complete: answer(c); return;
        }
      }
      if (n == 0) {  // the client hung up or shut down its side before a newline
        if (c.reader.bytes_seen() == 0) {
          finish(c);
        } else {
          reject(c, "incomplete request: the connection was shut down before a newline");
        }
        return;
      }
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) finish(c);
      return;
    }
  }

  // Fair turns. A request whose answer walks the table (stats, diff,
  // baseline, dump, metrics: tens of milliseconds on a large table) waits
  // in a queue, and each turn of the loop answers the one that waited
  // longest, after reading every client and answering every other request
  // at once; so a burst of such requests delays an `info` or `help` by one
  // of them at most, not by the whole burst. A queued request's response
  // time-out runs from the moment it was complete.
  void answer(client& c) {
    c.complete = clock::now();
    if (wire::walks_table(c.reader.line())) {
      c.queued = true;
      c.last_progress = c.complete;  // for make_room_for: the wait counts from here
      c.deadline = c.complete + s_.opts.response_timeout;
      return;
    }
    answer_now(c);
  }

  void answer_next_queued() {
    client* first = nullptr;
    for (client& c : clients_)
      if (c.fd >= 0 && c.queued && (first == nullptr || c.last_progress < first->last_progress)) first = &c;
    if (first == nullptr) return;
    first->queued = false;
    answer_now(*first);
  }

  void answer_now(client& c) {
    const std::string line(c.reader.line());
    if (!wire::parse_request(line).value) counts_.bad_requests.fetch_add(1, std::memory_order_relaxed);
    respond(c, answer_request(line));
  }

  // Sends what the socket takes; a streamed answer's next chunk is rendered
  // only when the previous one is gone, so a client holds one chunk at a time.
  void write_some(client& c) {
    for (;;) {
      if (c.sent == c.response.size() && !next_part(c)) break;
      const ssize_t n = ::send(c.fd, c.response.data() + c.sent, c.response.size() - c.sent,
                               MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) {
        c.sent += static_cast<std::size_t>(n);
        c.last_progress = clock::now();
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      finish(c);  // the client went away
      return;
    }
    counts_.served.fetch_add(1, std::memory_order_relaxed);
    finish(c);
  }

  // Puts the next chunk of a streamed answer in c.response; false when the
  // answer is complete. A stream that fails after "ok" ends with one line
  // saying the answer is truncated and why.
  bool next_part(client& c) {
    if (!c.rest) return false;
    std::string_view chunk;
    try {
      if (c.rest->next(chunk)) {
        c.response.assign(chunk);
        c.sent = 0;
        return true;
      }
      c.rest.reset();
      return false;
    } catch (const std::exception& e) {
      c.rest.reset();
      c.response = control::truncated_line(e.what());
      c.sent = 0;
      return true;
    } catch (...) {
      c.rest.reset();
      c.response = control::truncated_line("internal error while answering");
      c.sent = 0;
      return true;
    }
  }

  void expire_deadlines() {
    const clock::time_point now = clock::now();
    for (client& c : clients_) {
      if (c.fd >= 0 && c.writing && now - c.last_progress >= s_.opts.stall_timeout) {
        counts_.dropped.fetch_add(1, std::memory_order_relaxed);
        drop(c);
        continue;
      }
      if (c.fd < 0 || now < c.deadline) continue;
      counts_.timed_out.fetch_add(1, std::memory_order_relaxed);
      if (c.writing) {
        drop(c);
        continue;
      }
      if (c.queued) {
        best_effort_send(c.fd, "error timed out after " + std::to_string(s_.opts.response_timeout.count()) +
                                   " ms waiting for its turn behind other requests that walk the table; retry\n");
        finish(c);
        continue;
      }
      best_effort_send(c.fd, "error timed out after " + std::to_string(s_.opts.request_timeout.count()) +
                                 " ms waiting for a request line\n");
      finish(c);
    }
  }

  server& s_;
  atomic_counters& counts_;
  std::vector<client> clients_;
  clock::time_point accept_paused_until_{};
};

void server_main(std::shared_ptr<server> s, atomic_counters* counts) {
  // The application's signals are not ours to take.
  sigset_t all;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_BLOCK, &all, nullptr);
  try {
    server_loop(*s, *counts).run();
  } catch (const std::exception& e) {
    detail::warn(std::string("arenastat control: server stopped: ") + e.what() + "\n");
  }
  ::close(s->listen_fd);
  ::close(s->wake_read);
  s->finished.store(true, std::memory_order_release);
}

void stop_at_exit() { stop(); }

// In a forked child the thread, the wake pipe's reader and the socket belong
// to the parent: forget them without touching them.
void forget_parent_server(control_state& st) {
  if (st.thread.joinable()) st.thread.detach();
  st.srv.reset();
  st.path.clear();
  std::lock_guard path_lock(st.path_mutex);
  st.published_path.clear();
}

}  // namespace

std::string default_socket_dir() { return naming::socket_dir(::geteuid()); }

std::string start(const options& opts) {
  control_state& st = state();
  std::lock_guard lock(st.mutex);
  if (st.srv && st.owner_pid == ::getpid()) return st.path;
  if (st.srv) forget_parent_server(st);
  if (opts.max_clients == 0) fail("options.max_clients must be at least 1");
  if (opts.request_timeout.count() <= 0 || opts.response_timeout.count() <= 0 || opts.stall_timeout.count() <= 0) {
    fail("options.request_timeout, response_timeout and stall_timeout must be positive");
  }

  const std::string dir = naming::without_trailing_slashes(opts.socket_dir.empty() ? default_socket_dir() : opts.socket_dir);
  if (const std::string problem = naming::socket_dir_problem(dir); !problem.empty()) {
    fail("socket directory " + detail::quoted(dir) + (opts.socket_dir.empty() ? naming::socket_dir_origin() : "") +
         ": " + problem);
  }
  const std::string path = naming::socket_path(dir, ::getpid());
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    fail("socket path " + detail::quoted(path) + " is longer than " + std::to_string(sizeof(sockaddr_un::sun_path) - 1) +
         " bytes; set ARENASTAT_SOCKET_DIR to a shorter directory");
  }
  ensure_secure_dir(dir, detail::quoted(dir) + (opts.socket_dir.empty() ? naming::socket_dir_origin() : ""));
  remove_stale_sockets(dir);

  auto srv = std::make_shared<server>();
  srv->opts = opts;
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0) fail("cannot create the wake pipe: " + detail::error_text(errno));
  srv->wake_read = wake[0];
  srv->wake_write = wake[1];
  try {
    srv->listen_fd = bind_socket(dir, path);
  } catch (...) {
    ::close(wake[0]);
    ::close(wake[1]);
    throw;
  }
  try {
    st.thread = std::thread(server_main, srv, &st.counts);
  } catch (const std::exception& e) {
    ::close(srv->listen_fd);
    ::close(wake[0]);
    ::close(wake[1]);
    ::unlink(path.c_str());
    fail(std::string("cannot start the server thread: ") + e.what());
  }
  st.srv = std::move(srv);
  st.path = path;
  st.owner_pid = ::getpid();
  {
    std::lock_guard path_lock(st.path_mutex);
    st.published_path = path;
  }
  if (!st.at_exit_registered) {
    st.at_exit_registered = true;
    std::atexit(stop_at_exit);
  }
  return path;
}

void stop() noexcept {
  control_state& st = state();
  std::lock_guard lock(st.mutex);
  if (!st.srv) return;
  if (st.owner_pid != ::getpid()) {
    forget_parent_server(st);
    return;
  }
  {
    std::lock_guard path_lock(st.path_mutex);
    st.published_path.clear();
  }
  st.srv->stop_requested.store(true, std::memory_order_release);
  const char byte = 'q';
  [[maybe_unused]] const ssize_t n = ::write(st.srv->wake_write, &byte, 1);
  detail::join_or_detach(st.thread, st.srv->finished, std::chrono::milliseconds(2000));
  ::close(st.srv->wake_write);
  ::unlink(st.path.c_str());
  st.srv.reset();
  st.path.clear();
}

bool running() noexcept {
  control_state& st = state();
  std::lock_guard lock(st.mutex);
  return st.srv != nullptr && st.owner_pid == ::getpid();
}

std::string socket_path() {
  control_state& st = state();
  std::lock_guard lock(st.path_mutex);
  return st.owner_pid == ::getpid() ? st.published_path : std::string();
}

counters connection_counters() noexcept {
  const atomic_counters& c = state().counts;
  return {c.served.load(), c.refused.load(), c.timed_out.load(), c.bad_requests.load(), c.busy.load(),
          c.dropped.load()};
}

}  // namespace arenastat::control
