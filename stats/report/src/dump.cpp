// Summary dumps (dump.hpp): rendering and writing.
#include "arenastat/dump.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <tuple>

#include "arenastat/report.hpp"
#include "chunk_stream.hpp"
#include "env.hpp"
#include "quoted.hpp"
#include "sys.hpp"
#include "text_escape.hpp"
#include "write_open.hpp"

namespace arenastat {

namespace {

std::int64_t size_of(const entry& e) noexcept {
  switch (e.kind) {
    case entry_kind::account: return e.live_bytes;
    case entry_kind::folded: return static_cast<std::int64_t>(e.peak_sum_bytes);
    case entry_kind::scope: break;
  }
  return static_cast<std::int64_t>(e.peak_bytes);
}

std::int64_t sort_value(const entry& e, dump_sort sort) noexcept {
  switch (sort) {
    case dump_sort::count: return static_cast<std::int64_t>(figures_of(e).count);
    case dump_sort::blocks: return figures_of(e).blocks;
    case dump_sort::size: break;
  }
  return size_of(e);
}

const char* sort_text(dump_sort sort) noexcept {
  switch (sort) {
    case dump_sort::count: return "count";
    case dump_sort::blocks: return "blocks";
    case dump_sort::size: break;
  }
  return "size";
}

// The dump of `c`, handed to `flush` about chunk_bytes at a time (flush
// takes the text and leaves `out` empty). Entries are read from the copy one
// at a time: the sort holds a small key per entry, never the entries.
template <class Flush>
void render_dump_to(const table_copy& c, dump_sort sort, const dump_header& header, Flush&& flush) {
  struct key {
    std::size_t index;
    std::int64_t value;
    std::string_view name;
    entry_kind kind;
  };
  std::vector<key> rows;
  rows.reserve(c.size());
  std::int64_t total_size = 0, total_count = 0, total_blocks = 0;
  entry e;
  for (std::size_t i = 0; i < c.size(); ++i) {
    c.read(i, e);
    const entry_figures f = figures_of(e);
    total_size += size_of(e);
    total_count += static_cast<std::int64_t>(f.count);
    total_blocks += f.blocks;
    rows.push_back({i, sort_value(e, sort), c.name(i), e.kind});
  }
  std::sort(rows.begin(), rows.end(), [](const key& a, const key& b) {
    if (a.value != b.value) return a.value > b.value;
    return std::tie(a.name, a.kind) < std::tie(b.name, b.kind);
  });

  std::string out = "TOTAL size=" + std::to_string(total_size) + " count=" + std::to_string(total_count) +
                    " blocks=" + std::to_string(total_blocks) + " entries=" + std::to_string(c.size()) +
                    " pid=" + std::to_string(header.pid) + " program=" + detail::escape_text(header.program) +
                    " time=" + detail::utc_time_string(header.time) + " sort=" + sort_text(sort);
  if (header.lost_folds != 0) out += " lost_folds=" + std::to_string(header.lost_folds);
  out += '\n';
  char line[160];
  std::snprintf(line, sizeof line, "%20s %16s %16s %20s  %-7s  %s\n", "size", "count", "blocks", "peak", "kind",
                "name");
  out += line;
  for (const key& k : rows) {
    c.read(k.index, e);
    const entry_figures f = figures_of(e);
    std::snprintf(line, sizeof line, "%20" PRId64 " %16" PRIu64 " %16" PRId64 " %20" PRIu64 "  %-7s  ", size_of(e),
                  f.count, f.blocks, f.peak, kind_name(e.kind));
    out += line;
    detail::append_escaped(out, e.name);
    out += '\n';
    if (out.size() >= detail::chunk_bytes) flush(out);
  }
  flush(out);
}

// A std::system_error whose what() is exactly the message given (without
// the error code's text appended).
class refused_path : public std::system_error {
 public:
  refused_path(int err, std::string message)
      : std::system_error(err, std::generic_category()), message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

// Creates the dump file: exclusively (-1 when it exists) or replacing one,
// never through a symbolic link another user owns (a process run as root
// must not truncate whatever a link planted in a shared directory points
// at); a link of root's or of this process's euid is followed (write_open.hpp).
// `shown` names the file in messages (shown_path).
// A FIFO (or socket) is refused: the dump is written on the control server's
// thread or the dump-signal thread, which must never wait for a reader (none
// yet: the open fails with ENXIO; one that stops reading: the write would).
// A device (a terminal) stays non-blocking: write_dump_file waits for it at
// most device_wait in all.
int create_file(const std::string& path, const std::string& shown, bool exclusive) {
  const files::write_open opened =
      files::open_to_write(path, O_WRONLY | O_CREAT | O_NONBLOCK | (exclusive ? O_EXCL : O_TRUNC), 0644);
  const auto refuse_pipe = [&](int err) {
    return refused_path(err, "dump: refusing to write " + shown +
                                 ": it is a FIFO or socket, and a dump never waits for a reader; give a regular file");
  };
  if (opened.fd >= 0) {
    struct stat st {};
    const bool device = ::fstat(opened.fd, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode));
    if (device) return opened.fd;
    if (const int err = files::settle_nonblocking_open(opened.fd, /*refuse_pipes=*/true); err != 0) {
      ::close(opened.fd);
      if (err == ESPIPE) throw refuse_pipe(err);
      throw std::system_error(err, std::generic_category(), "dump: cannot create " + shown);
    }
    return opened.fd;
  }
  if (exclusive && opened.error == EEXIST) return -1;
  if (opened.error == ENXIO) throw refuse_pipe(ENXIO);
  if (opened.refused_link_owner) {
    throw refused_path(opened.error, "dump: refusing to write " + shown + ": " +
                                         files::refused_link_reason(opened) +
                                         (exclusive ? "; choose another ARENASTAT_DUMP_DIR" : "; give another PATH"));
  }
  throw std::system_error(opened.error, std::generic_category(), "dump: cannot create " + shown);
}

// How long a dump waits for a device (a terminal) that takes nothing, and
// for the whole of it to be taken by a slow one.
constexpr std::chrono::milliseconds device_stall{1000};
constexpr std::chrono::seconds device_total{30};

// Writes the dump of `c` into the open `fd` (closed here) a chunk at a time.
// A regular file is written blocking; a device (left non-blocking by
// create_file) as long as it takes bytes, but never device_stall without
// taking any nor past device_total in all, so that a terminal nobody reads
// fails the dump instead of holding its thread (the control server's) for good.
void write_dump_file(int fd, const std::string& shown, const table_copy& c, dump_sort sort,
                     const dump_header& header) {
  int err = 0;
  const auto deadline = std::chrono::steady_clock::now() + device_total;
  try {
    render_dump_to(c, sort, header, [&](std::string& out) {
      if (err == 0) err = detail::write_all_bounded(fd, out, device_stall, deadline);
      out.clear();
    });
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (err != 0) {
    ::close(fd);
    if (err == EAGAIN) {
      const bool late = std::chrono::steady_clock::now() >= deadline;
      throw std::system_error(
          err, std::generic_category(),
          "dump: cannot write " + shown +
              (late ? ": it was not all taken within " + std::to_string(device_total.count()) + " s"
                    : ": it took nothing for " + std::to_string(device_stall.count()) + " ms") +
              " (a device such as a terminal nobody reads; a dump does not wait for a reader)");
    }
    throw std::system_error(err, std::generic_category(), "dump: cannot write " + shown);
  }
  if (::close(fd) != 0) throw std::system_error(errno, std::generic_category(), "dump: cannot write " + shown);
}

}  // namespace

dump_sort parse_dump_sort(std::string_view text) {
  for (const dump_sort s : {dump_sort::size, dump_sort::count, dump_sort::blocks})
    if (text == sort_text(s)) return s;
  throw std::invalid_argument("dump sort '" + detail::escape_text(text.substr(0, 200)) + "': expected " +
                              std::string(dump_sort_choices));
}

dump_sort dump_sort_from_env() noexcept {
  const char* v = detail::env_value("ARENASTAT_DUMP_SORT");
  if (v == nullptr || *v == '\0') return dump_sort::size;
  try {
    return parse_dump_sort(v);
  } catch (...) {
    return dump_sort::size;
  }
}

std::string render_dump(const std::vector<entry>& entries, dump_sort sort, const dump_header& header) {
  std::string text;
  render_dump_to(table_copy::of(entries), sort, header, [&](std::string& out) {
    text += out;
    out.clear();
  });
  return text;
}

std::string dump_file_name(int pid, std::time_t time) {
  std::tm tm{};
  ::gmtime_r(&time, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d%H%M%S", &tm);
  return "arenastat." + std::to_string(pid) + "." + stamp + ".txt";
}

std::string write_dump(std::string_view path, std::optional<dump_sort> sort) {
  const std::time_t now = std::time(nullptr);
  const int pid = static_cast<int>(::getpid());
  const dump_sort order = sort.value_or(dump_sort_from_env());
  const std::string target =
      path.empty() ? std::string() : detail::absolute_path(std::string(path), "dump");  // checked before the copy
  const table_copy copy = table_copy::take();
  const dump_header header{pid, detail::program_name(), now, copy.status().lost_folds};
  if (!target.empty()) {
    const std::string shown = detail::quoted(target);
    write_dump_file(create_file(target, shown, /*exclusive=*/false), shown, copy, order, header);
    return target;
  }
  const char* dir_env = detail::env_value("ARENASTAT_DUMP_DIR");
  const bool from_env = dir_env != nullptr && *dir_env != '\0';
  const std::string dir = from_env ? std::string(dir_env) : std::string(".");
  const auto shown_path = [&](const std::string& file) {
    return detail::quoted(file) + (from_env ? " (in ARENASTAT_DUMP_DIR)" : "");
  };
  const std::string base = detail::absolute_path(dir, "dump") + "/" + dump_file_name(pid, now);
  const std::string stem = base.substr(0, base.size() - 4);  // without ".txt"
  for (int n = 0; n < 1000; ++n) {
    const std::string candidate = n == 0 ? base : stem + "." + std::to_string(n) + ".txt";
    if (const int fd = create_file(candidate, shown_path(candidate), /*exclusive=*/true); fd >= 0) {
      write_dump_file(fd, shown_path(candidate), copy, order, header);
      return candidate;
    }
  }
  throw std::system_error(EEXIST, std::generic_category(), "dump: 1000 dumps named " + shown_path(base) + " exist");
}

}  // namespace arenastat
