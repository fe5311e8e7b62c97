// Summary dumps (dump.hpp): rendering and writing.
#include "arenastat/dump.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <thread>
#include <tuple>

#include "sys.hpp"

namespace arenastat {

namespace {

std::int64_t size_of(const entry& e) noexcept {
  return e.kind == entry_kind::account ? e.live_bytes : static_cast<std::int64_t>(e.peak_bytes);
}

std::int64_t count_of(const entry& e) noexcept {
  return e.kind == entry_kind::account ? static_cast<std::int64_t>(e.allocations - e.frees)
                                       : static_cast<std::int64_t>(e.count);
}

// `path` made absolute against the working directory ("." is the directory itself).
std::string absolute(std::string path) {
  if (!path.empty() && path.front() == '/') return path;
  char cwd[4096];
  if (::getcwd(cwd, sizeof cwd) == nullptr) {
    throw std::system_error(errno, std::generic_category(), "dump: cannot read the working directory");
  }
  if (path.empty() || path == ".") return cwd;
  if (path.starts_with("./")) path.erase(0, 2);
  return std::string(cwd) + "/" + path;
}

// Writes `text` to a new file (exclusive) or to a replaced one.
bool write_file(const std::string& path, const std::string& text, bool exclusive) {
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (exclusive ? O_EXCL : O_TRUNC);
  const int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) {
    if (exclusive && errno == EEXIST) return false;
    throw std::system_error(errno, std::generic_category(), "dump: cannot create " + path);
  }
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      throw std::system_error(err, std::generic_category(), "dump: cannot write " + path);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) throw std::system_error(errno, std::generic_category(), "dump: cannot write " + path);
  return true;
}

}  // namespace

dump_sort parse_dump_sort(std::string_view text) {
  if (text == "size") return dump_sort::size;
  if (text == "count") return dump_sort::count;
  throw std::invalid_argument("dump sort '" + std::string(text) + "': expected size or count");
}

dump_sort dump_sort_from_env() noexcept {
  const char* v = std::getenv("ARENASTAT_DUMP_SORT");
  return v != nullptr && std::string_view(v) == "count" ? dump_sort::count : dump_sort::size;
}

std::string render_dump(const std::vector<entry>& entries, dump_sort sort, const dump_header& header) {
  std::vector<const entry*> rows;
  rows.reserve(entries.size());
  std::int64_t total_size = 0, total_count = 0;
  for (const entry& e : entries) {
    rows.push_back(&e);
    total_size += size_of(e);
    total_count += count_of(e);
  }
  std::sort(rows.begin(), rows.end(), [sort](const entry* a, const entry* b) {
    const std::int64_t ka = sort == dump_sort::size ? size_of(*a) : count_of(*a);
    const std::int64_t kb = sort == dump_sort::size ? size_of(*b) : count_of(*b);
    if (ka != kb) return ka > kb;
    return std::tie(a->name, a->kind) < std::tie(b->name, b->kind);
  });

  std::string out = "TOTAL size=" + std::to_string(total_size) + " count=" + std::to_string(total_count) +
                    " entries=" + std::to_string(entries.size()) + " pid=" + std::to_string(header.pid) +
                    " program=" + header.program + " time=" + detail::utc_time_string(header.time) +
                    " sort=" + (sort == dump_sort::size ? "size" : "count") + "\n";
  char line[160];
  std::snprintf(line, sizeof line, "%20s %16s %20s  %-7s  %s\n", "size", "count", "peak", "kind", "name");
  out += line;
  for (const entry* e : rows) {
    std::snprintf(line, sizeof line, "%20" PRId64 " %16" PRId64 " %20" PRIu64 "  %-7s  ", size_of(*e),
                  count_of(*e), e->peak_bytes, kind_name(e->kind));
    out += line;
    out += e->name;
    out += '\n';
  }
  return out;
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
  const std::string text =
      render_dump(snapshot(), sort.value_or(dump_sort_from_env()), {pid, detail::program_name(), now});
  if (!path.empty()) {
    const std::string target = absolute(std::string(path));
    write_file(target, text, /*exclusive=*/false);
    return target;
  }
  const char* dir_env = std::getenv("ARENASTAT_DUMP_DIR");
  const std::string dir = dir_env != nullptr && *dir_env != '\0' ? std::string(dir_env) : std::string(".");
  const std::string base = absolute(dir) + "/" + dump_file_name(pid, now);
  const std::string stem = base.substr(0, base.size() - 4);  // without ".txt"
  for (int n = 0; n < 1000; ++n) {
    const std::string candidate = n == 0 ? base : stem + "." + std::to_string(n) + ".txt";
    if (write_file(candidate, text, /*exclusive=*/true)) return candidate;
  }
  throw std::system_error(EEXIST, std::generic_category(), "dump: 1000 dumps named " + base + " exist");
}

}  // namespace arenastat
