// Process-wide memory figures: /proc/self/status and, when jemalloc is the
// process allocator, jemalloc's own totals. jemalloc is found at run time
// (dlsym), never linked into the library.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "arenastat/report.hpp"

namespace arenastat {

namespace {

// Reads a whole small file with read(2) (no stdio, usable at exit).
// Returns the number of bytes read, 0 when the file cannot be read.
std::size_t read_small_file(const char* path, char* buf, std::size_t cap) {
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  std::size_t len = 0;
  while (len < cap) {
    const ssize_t n = ::read(fd, buf + len, cap - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += static_cast<std::size_t>(n);
  }
  ::close(fd);
  return len;
}

// Value of a "Key:   1234 kB" line of /proc/self/status, in bytes (0 if absent).
std::uint64_t status_kb_field(std::string_view status, std::string_view key) {
  std::size_t pos = 0;
  while (pos < status.size()) {
    std::size_t eol = status.find('\n', pos);
    if (eol == std::string_view::npos) eol = status.size();
    const std::string_view line = status.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.size() <= key.size() || line.substr(0, key.size()) != key || line[key.size()] != ':')
      continue;
    std::uint64_t kb = 0;
    for (std::size_t i = key.size() + 1; i < line.size(); ++i) {
      const char c = line[i];
      if (c >= '0' && c <= '9') kb = kb * 10 + static_cast<std::uint64_t>(c - '0');
      else if (c != ' ' && c != '\t') break;
    }
    return kb * 1024;
  }
  return 0;
}

using mallctl_fn = int (*)(const char*, void*, std::size_t*, void*, std::size_t);

// jemalloc's mallctl when jemalloc provides the process's malloc: both symbols
// must resolve into the same loaded object (a sanitizer or another allocator
// may interpose malloc while a jemalloc library is merely loaded).
mallctl_fn find_jemalloc() {
  void* ctl = ::dlsym(RTLD_DEFAULT, "mallctl");
  void* mal = ::dlsym(RTLD_DEFAULT, "malloc");
  if (!ctl || !mal) return nullptr;
  Dl_info ctl_info{}, mal_info{};
  if (!::dladdr(ctl, &ctl_info) || !::dladdr(mal, &mal_info)) return nullptr;
  if (ctl_info.dli_fbase != mal_info.dli_fbase) return nullptr;
  return reinterpret_cast<mallctl_fn>(ctl);
}

std::uint64_t read_size_stat(mallctl_fn ctl, const char* name) {
  std::size_t value = 0;
  std::size_t len = sizeof value;
  if (ctl(name, &value, &len, nullptr, 0) != 0 || len != sizeof value) return 0;
  return value;
}

}  // namespace

process_info read_process_info() {
  process_info info;
  info.pid = static_cast<int>(::getpid());

  char buf[8192];
  const std::size_t len = read_small_file("/proc/self/status", buf, sizeof buf);
  const std::string_view status(buf, len);
  info.rss_bytes = status_kb_field(status, "VmRSS");
  info.hwm_bytes = status_kb_field(status, "VmHWM");
  info.rss_anon_bytes = status_kb_field(status, "RssAnon");

  if (const mallctl_fn ctl = find_jemalloc()) {
    info.jemalloc = true;
    std::uint64_t epoch = 1;  // writing the epoch refreshes jemalloc's cached statistics
    std::size_t epoch_len = sizeof epoch;
    ctl("epoch", &epoch, &epoch_len, &epoch, sizeof epoch);
    info.je_allocated = read_size_stat(ctl, "stats.allocated");
    info.je_active = read_size_stat(ctl, "stats.active");
    info.je_resident = read_size_stat(ctl, "stats.resident");
    info.je_mapped = read_size_stat(ctl, "stats.mapped");
  }
  return info;
}

}  // namespace arenastat

#include "report_internal.hpp"

namespace arenastat::detail {

void write_process_json(json_writer& w, const process_info& p, bool with_pid) {
  w.begin_object();
  if (with_pid) w.field("pid", p.pid);
  w.field("rss_bytes", p.rss_bytes);
  w.field("hwm_bytes", p.hwm_bytes);
  w.field("rss_anon_bytes", p.rss_anon_bytes);
  if (p.jemalloc) {
    w.key("jemalloc").begin_object();
    w.field("allocated_bytes", p.je_allocated);
    w.field("active_bytes", p.je_active);
    w.field("resident_bytes", p.je_resident);
    w.field("mapped_bytes", p.je_mapped);
    w.end_object();
  }
  w.end_object();
}

}  // namespace arenastat::detail
