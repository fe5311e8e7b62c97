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
#include "sys.hpp"

namespace arenastat {

namespace {

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
  const std::size_t len = detail::read_small_file("/proc/self/status", buf, sizeof buf);
  const std::string_view status(buf, len);
  info.rss_bytes = detail::kb_field(status, "VmRSS");
  info.hwm_bytes = detail::kb_field(status, "VmHWM");
  info.rss_anon_bytes = detail::kb_field(status, "RssAnon");

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
