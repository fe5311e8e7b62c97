// bench_table: what one query costs the target, in peak resident memory.
//
//   bench_table --names=N --cap=M --query=none|text|json|top|tree|dump|metrics|at-exit
//
// Folds N scopes of distinct names ("request/<i>", one 1 KiB arena chunk
// each) into a table capped at M entries (0: no cap), reads VmHWM, answers
// the query once in this process as the control server would (stream_report
// written chunk by chunk / write_dump to /dev/null), reads VmHWM again and prints one line:
//   names=N cap=M query=Q entries=E hwm_before_kib=B hwm_after_kib=A added_kib=A-B
// VmHWM is a high-water mark: run one query per process (docs/report.md).
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "arenastat/arenastat.hpp"
#include "arenastat/dump.hpp"
#include "arenastat/prometheus.hpp"
#include "args.hpp"

namespace {

constexpr std::string_view usage = "bench_table --names=N --cap=M --query=none|text|json|top|tree|dump|metrics|at-exit";

std::uint64_t hwm_kib() {
  char buf[8192];
  const int fd = ::open("/proc/self/status", O_RDONLY);
  const ssize_t n = fd < 0 ? 0 : ::read(fd, buf, sizeof buf - 1);
  if (fd >= 0) ::close(fd);
  buf[n > 0 ? n : 0] = '\0';
  const char* p = std::strstr(buf, "VmHWM:");
  return p ? std::strtoull(p + 6, nullptr, 10) : 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::uint64_t names = 10000, cap = 10000;
  std::string query = "json";
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a.starts_with("--names=")) names = arenastat::bench::parse_count("bench_table", usage, "--names", a.substr(8), 1, 100000000);
    else if (a.starts_with("--cap=")) cap = arenastat::bench::parse_count("bench_table", usage, "--cap", a.substr(6), 0, 100000000);
    else if (a.starts_with("--query=")) query = std::string(a.substr(8));
    else arenastat::bench::usage_error("bench_table", usage, "unknown option '" + std::string(a) + "'");
  }
  arenastat::set_table_max(cap);
  {
    arenastat::arena_resource arena{"node", {.initial_chunk = 1024}};
    std::string name;
    for (std::uint64_t i = 0; i < names; ++i) {
      name = "request/" + std::to_string(i);
      arenastat::scope s{name};
      (void)arena.allocate(64, 8);
      arena.release();
    }
  }
  const std::uint64_t before = hwm_kib();
  std::size_t bytes = 0;
  // As the control server answers: the report streamed, each chunk sent (here
  // to /dev/null) before the next is rendered.
  const auto streamed = [](const char* options) {
    const int fd = ::open("/dev/null", O_WRONLY);
    arenastat::report_stream s = arenastat::stream_report(options);
    std::size_t n = 0;
    std::string_view chunk;
    while (s.next(chunk)) n += static_cast<std::size_t>(::write(fd, chunk.data(), chunk.size()));
    ::close(fd);
    return n;
  };
  if (query == "text") bytes = streamed("");
  else if (query == "json") bytes = streamed("--json");
  else if (query == "top") bytes = streamed("--top=10");
  else if (query == "tree") bytes = streamed("--tree");
  else if (query == "dump") arenastat::write_dump("/dev/null");
  else if (query == "metrics") bytes = arenastat::metrics({}).size();
  else if (query == "at-exit") arenastat::print_at_exit("");  // printed after main, measured by the caller
  else if (query != "none") arenastat::bench::usage_error("bench_table", usage, "unknown query '" + query + "'");
  const std::uint64_t after = hwm_kib();
  std::printf("names=%llu cap=%llu query=%s entries=%zu answer_bytes=%zu hwm_before_kib=%llu hwm_after_kib=%llu added_kib=%llu\n",
              static_cast<unsigned long long>(names), static_cast<unsigned long long>(cap), query.c_str(),
              arenastat::scope_entry_count(), bytes, static_cast<unsigned long long>(before),
              static_cast<unsigned long long>(after), static_cast<unsigned long long>(after - before));
  std::fflush(stdout);
  return 0;
}
