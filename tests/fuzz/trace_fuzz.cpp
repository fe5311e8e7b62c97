// trace_fuzz: arbitrary bytes through cache_sim's trace readers
// (bench/sim/trace.hpp, read_requests over fmemopen). The first two bytes
// choose the format and the csv options, the rest is the trace. Each read
// either yields keys (dense ids, as many as the input can hold) or throws a
// trace_error naming the input and a line that exists (for longs, the byte of
// the truncated record); anything else (a crash, an ASan report, another
// exception, a wrong message) aborts.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "../../bench/sim/trace.hpp"

namespace {

using namespace arenastat::sim;

[[noreturn]] void broken(const char* what, const std::string& detail) {
  std::fprintf(stderr, "trace_fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

// An ARC line can expand to a million requests: a cap keeps every input small.
constexpr std::uint64_t cap = 1 << 16;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  constexpr trace_format formats[] = {trace_format::lirs, trace_format::plain, trace_format::csv, trace_format::arc,
                                      trace_format::longs};
  constexpr char delimiters[] = {',', ';', '\t', ' ', '|', '"'};
  const trace_format format = formats[data[0] % 5];
  trace_options opt;
  opt.csv_column = 1 + (data[0] / 5) % 4;
  opt.csv_delimiter = delimiters[data[1] % 6];
  opt.csv_header = (data[1] / 6) % 2 != 0;
  opt.max_requests = cap;
  const std::string_view body(reinterpret_cast<const char*>(data) + 2, size - 2);

  // fmemopen refuses an empty buffer: the empty input is /dev/null.
  std::FILE* in = body.empty() ? std::fopen("/dev/null", "rb")
                               : fmemopen(const_cast<char*>(body.data()), body.size(), "rb");
  if (!in) broken("cannot open the input", std::to_string(body.size()) + " bytes");
  const std::string name = "fuzz";
  trace_builder b(name);
  std::string error;
  try {
    read_requests(format, in, name, opt, b);
  } catch (const trace_error& e) {
    error = e.what();
  }
  std::fclose(in);

  // The lines there are: one per newline, and one more for text after the last.
  std::uint64_t lines = !body.empty() && body.back() != '\n' ? 1 : 0;
  for (char c : body) lines += c == '\n';
  if (!error.empty()) {
    // "fuzz:LINE: what" with 1 <= LINE <= the lines there are; longs name the byte.
    if (format == trace_format::longs) {
      // Refused at byte 0 only for a head (the first 64 bytes) that starts
      // as compressed data or UTF-16, or is text with a line break.
      if (error.starts_with(name + ": byte 0: ")) {
        const std::string_view head = body.substr(0, 64);
        bool text = head.find('\n') != std::string_view::npos;
        for (const char c : head) {
          const auto u = static_cast<unsigned char>(c);
          text &= u == '\n' || u == '\r' || u == '\t' || (u >= 0x20 && u < 0x7F);
        }
        const bool magic = head.starts_with("\x1f\x8b\x08") || head.starts_with(std::string_view("\xFD" "7zXZ\0", 6)) ||
                           head.starts_with("\x28\xB5\x2F\xFD") || head.starts_with("BZh");
        if (!text && !magic) broken("longs refused a head that is neither text nor compressed", error);
        return 0;
      }
      const std::string want = name + ": truncated record at byte " + std::to_string(body.size() / 8 * 8) + " (" +
                               std::to_string(body.size() % 8) + " of 8 bytes)";
      if (error != want) broken("longs error", error);
      return 0;
    }
    const std::string prefix = name + ":";
    if (error.compare(0, prefix.size(), prefix) != 0) broken("error without the name", error);
    std::size_t i = prefix.size();
    std::uint64_t line = 0;
    while (i < error.size() && error[i] >= '0' && error[i] <= '9') line = line * 10 + (error[i++] - '0');
    if (i == prefix.size() || i + 1 >= error.size() || error[i] != ':' || error[i + 1] != ' ')
      broken("error without a line", error);
    if (line < 1 || line > lines) broken("error naming a line that is not there", error + " (" + std::to_string(lines) + " lines)");
    return 0;
  }
  const trace t = std::move(b).take();
  if (t.keys.size() > cap) broken("more requests than the cap", std::to_string(t.keys.size()));
  for (const std::uint32_t k : t.keys)
    if (k >= t.distinct) broken("a key id not below distinct", std::to_string(k));
  if (t.distinct > t.keys.size()) broken("more distinct keys than requests", std::to_string(t.distinct));
  if (format == trace_format::longs && t.keys.size() != std::min<std::uint64_t>(body.size() / 8, cap))
    broken("longs: not one key per 8 bytes", std::to_string(t.keys.size()));
  // A text trace holds at most one request per line, but for ARC's counts.
  if (format != trace_format::longs && format != trace_format::arc && t.keys.size() > lines)
    broken("more requests than lines", std::to_string(t.keys.size()));
  return 0;
}
