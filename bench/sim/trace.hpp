// trace.hpp: cache traces for the simulator (cache_sim.cpp), read from the
// common public formats, and their keys renumbered densely (0, 1, ... in order
// of first appearance) so that policies can keep per-key state in vectors.
//
// Formats (FORMAT:PATH on the command line):
//   lirs   one block number per line; lines starting with '*' are separators
//          (skipped), as in the LIRS trace suite (Jiang and Zhang).
//   plain  libCacheSim's plain-text trace: one object id per line; a decimal
//          id is a number (007 and 7 are one key), any other text is a key of
//          its own, compared as text (never equal to a number: "abc" is not
//          the number its hash would be).
//   csv    one request per line, the key in column csv_column (1-based) of
//          fields separated by csv_delimiter; csv_header skips the first line.
//          Keys as for plain.
//   arc    the ARC traces (Megiddo and Modha): "start count ..." per line, each
//          block start .. start + count - 1 one request; further fields ignored.
//   longs  8-byte big-endian keys back to back (the trace Caffeine's simulator
//          reads with DataInputStream.readLong, e.g. scarab-recs).
// In every text format a line holding a carriage return (a file with CR line
// ends) or a NUL (UTF-16, binary data) is an error; a longs file that starts
// as compressed data or as text lines is refused.
// A path ending in .gz or .xz is decompressed through `gzip -dc` / `xz -dc`.
// Lines are at most max_line bytes. Every error throws trace_error naming the
// file, the line and what was wrong.
#pragma once
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <memory_resource>
#include <unordered_map>

#include <boost/container_hash/hash.hpp>
#include <boost/unordered/unordered_flat_map.hpp>
#include <vector>

namespace arenastat::sim {

// what() is a C string, cut at a NUL byte a quoted trace line may hold;
// message() is the whole text (escape it before printing).
struct trace_error : std::runtime_error {
  explicit trace_error(const std::string& m) : std::runtime_error(m), message_(m) {}
  const std::string& message() const noexcept { return message_; }

 private:
  std::string message_;
};

// A trace: the requests as dense key ids.
struct trace {
  std::string name;
  std::vector<std::uint32_t> keys;
  std::uint32_t distinct = 0;
};

// Renumbers keys densely as they are added.
// The most requests a trace may hold (the generators' largest length too): a
// longer input (a huge file, /dev/zero read as longs, an ARC line's count)
// is refused instead of growing until memory runs out.
inline constexpr std::size_t max_trace_requests = 1'000'000'000;

class trace_builder {
 public:
  explicit trace_builder(std::string name) { t_.name = std::move(name); }
  // A numeric key.
  void add(std::uint64_t key) {
    room();
    const auto [it, fresh] = ids_.try_emplace(key, t_.distinct);
    push(it->second, fresh);
  }
  // A key read as text: a decimal number is that number (add), other text a
  // key of its own, compared as text.
  void add_text(std::string_view text) {
    std::uint64_t v = 0;
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (!text.empty() && ec == std::errc{} && p == text.data() + text.size()) return add(v);
    room();
    auto it = text_ids_.find(text);
    const bool fresh = it == text_ids_.end();
    if (fresh) {
      // The map's key views the text's bytes, copied once into the arena.
      char* bytes = static_cast<char*>(text_bytes_.allocate(text.size(), 1));
      std::memcpy(bytes, text.data(), text.size());
      it = text_ids_.emplace(std::string_view(bytes, text.size()), t_.distinct).first;
    }
    push(it->second, fresh);
  }
  std::size_t size() const noexcept { return t_.keys.size(); }
  trace take() && { return std::move(t_); }

 private:
  void room() const {
    if (t_.keys.size() == max_trace_requests)
      throw trace_error(t_.name + ": more than " + std::to_string(max_trace_requests) +
                        " requests (--max-requests=N reads the first N)");
  }
  void push(std::uint32_t id, bool fresh) {
    if (fresh) {
      if (t_.distinct == UINT32_MAX) throw trace_error(t_.name + ": more than 4294967295 distinct keys");
      ++t_.distinct;
    }
    t_.keys.push_back(id);
  }
  trace t_;
  // Open addressing, a slot per key: about 24 bytes per distinct key beside
  // the text's own bytes (node-based maps of strings took 3.5 times that).
  boost::unordered_flat_map<std::uint64_t, std::uint32_t> ids_;
  std::pmr::monotonic_buffer_resource text_bytes_;  // the text keys' bytes, back to back
  boost::unordered_flat_map<std::string_view, std::uint32_t, boost::hash<std::string_view>> text_ids_;
};

enum class trace_format { lirs, plain, csv, arc, longs };

struct trace_options {
  unsigned csv_column = 1;  // 1-based
  char csv_delimiter = ',';
  bool csv_header = false;
  std::uint64_t max_requests = 0;  // 0: the whole trace
};

inline constexpr std::size_t max_line = 4096;
// After an error in a decompressor's output, at most this much more of it is
// read to learn whether the decompressor itself failed (input::decompressor_failure).
inline constexpr std::uint64_t drain_bound = std::uint64_t{64} << 20;

inline bool parse_format(std::string_view s, trace_format& f) {
  if (s == "lirs") f = trace_format::lirs;
  else if (s == "plain") f = trace_format::plain;
  else if (s == "csv") f = trace_format::csv;
  else if (s == "arc") f = trace_format::arc;
  else if (s == "longs") f = trace_format::longs;
  else return false;
  return true;
}

namespace detail {

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

inline bool parse_u64(std::string_view s, std::uint64_t& v) {
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return !s.empty() && ec == std::errc{} && p == s.data() + s.size();
}

// The tool that decompresses `path` ("gzip" for .gz, "xz" for .xz), or nullptr.
inline const char* decompressor_for(std::string_view path) noexcept {
  const auto ends = [&](std::string_view e) { return path.size() > e.size() && path.ends_with(e); };
  return ends(".gz") ? "gzip" : ends(".xz") ? "xz" : nullptr;
}

inline std::string tool_not_found(const std::string& path, std::string_view tool) {
  return "cannot decompress '" + path + "': " + std::string(tool) + " was not found (is it installed and on PATH?)";
}

// Whether posix_spawnp would find `tool`: an executable file of that name in
// a directory of PATH (glibc's default search path when PATH is unset).
inline bool on_path(std::string_view tool) {
  const char* env = std::getenv("PATH");
  const std::string_view dirs = env != nullptr ? env : "/bin:/usr/bin";
  for (std::size_t from = 0; from <= dirs.size();) {
    const std::size_t colon = std::min(dirs.find(':', from), dirs.size());
    const std::string_view dir = colon == from ? std::string_view(".") : dirs.substr(from, colon - from);
    std::string file;  // an empty entry is the current directory
    file.append(dir).append(1, '/').append(tool);
    struct stat st {};
    if (::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::faccessat(AT_FDCWD, file.c_str(), X_OK, AT_EACCESS) == 0)
      return true;
    from = colon + 1;
  }
  return false;
}

// What makes `path` unreadable as a trace before it is opened ("" when
// nothing does): not there or not readable, a directory, or a decompressor
// its name needs that is not on PATH. Opening is left to the reader: a
// FIFO's writer would lose its reader.
inline std::string unreadable(const std::string& path) {
  if (::faccessat(AT_FDCWD, path.c_str(), R_OK, AT_EACCESS) != 0)
    return "cannot open '" + path + "': " + std::strerror(errno);
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return "cannot read '" + path + "': a directory";
  if (const char* tool = decompressor_for(path); tool != nullptr && !on_path(tool)) return tool_not_found(path, tool);
  return {};
}

// A file, or a decompressor's output for .gz / .xz.
class input {
 public:
  explicit input(const std::string& path) : path_(path) {
    std::FILE* f = std::fopen(path.c_str(), "rbe");  // e: O_CLOEXEC (the tool gets it as stdin only)
    if (!f) throw trace_error("cannot open '" + path + "': " + std::strerror(errno));
    const char* tool = decompressor_for(path);
    if (!tool) {
      file_ = f;
      return;
    }
    // The tool reads the file as opened here (its standard input), not by
    // its name: a FIFO's writer is not taken away by a second open, and no
    // shell sees the path.
    tool_ = tool;
    refuse_zip(f, path);
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) {
      const int err = errno;
      std::fclose(f);
      throw trace_error("cannot start " + tool_ + " for '" + path + "': " + std::strerror(err));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, ::fileno(f), 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    char arg0[8], arg1[] = "-dc";
    std::snprintf(arg0, sizeof arg0, "%s", tool);
    char* argv[] = {arg0, arg1, nullptr};
    const int err = ::posix_spawnp(&child_, tool, &actions, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    std::fclose(f);
    ::close(out[1]);
    if (err != 0) {
      ::close(out[0]);
      if (err == ENOENT) throw trace_error(tool_not_found(path, tool_));
      throw trace_error("cannot start " + tool_ + " for '" + path + "': " + std::strerror(err));
    }
    file_ = ::fdopen(out[0], "rb");
    if (!file_) {
      const int why = errno;
      ::close(out[0]);
      reap();
      throw trace_error("cannot read " + tool_ + "'s output for '" + path + "': " + std::strerror(why));
    }
  }
  input(const input&) = delete;
  input& operator=(const input&) = delete;
  ~input() {
    if (file_) close(false);
  }
  std::FILE* get() const noexcept { return file_; }
  // After an error in what a decompressor gave (a bad line, a line too long,
  // a truncated record): the decompressor's own failure, when it failed,
  // explains it better (a corrupt stream's garbage makes bad lines). Reads
  // the rest of its output (stopping once drain_bound bytes are read), closes
  // it and returns the failure's message; "" for a plain file, a decompressor
  // that ended cleanly, or one whose output did not end within the bound
  // (then the first error stands).
  std::string decompressor_failure() {
    if (tool_.empty() || file_ == nullptr) return {};
    char buf[1 << 16];
    for (std::uint64_t read = 0; read < drain_bound;) {
      const std::size_t n = std::fread(buf, 1, sizeof buf, file_);
      if (n == 0) break;
      read += n;
    }
    if (!std::feof(file_)) return {};  // not ended within the bound (or a read error)
    try {
      close(true);
    } catch (const trace_error& e) {
      return e.message();
    }
    return {};
  }
  // Closes; a decompressor that failed is an error (when `check`).
  void close(bool check = true) {
    std::FILE* f = file_;
    file_ = nullptr;
    if (tool_.empty()) {
      std::fclose(f);
      return;
    }
    std::fclose(f);  // a tool still writing then ends on SIGPIPE
    // Given up early (not checked): a tool waiting on an idle FIFO's writer
    // would never write again to meet that SIGPIPE.
    if (!check) ::kill(child_, SIGTERM);
    const int status = reap();
    // Status 2 is a warning for both tools (gzip: "decompression OK, trailing
    // garbage ignored"), which they print on stderr: the data is whole.
    if (check && (status == -1 || !WIFEXITED(status) || (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 2)))
      throw trace_error("decompressing '" + path_ + "' with " + tool_ + " failed (not a valid " +
                        (tool_ == "gzip" ? ".gz" : ".xz") + " file?)");
  }

 private:
  // gzip reads a zip archive's first member only and calls the rest a
  // warning (status 2, taken as success below for trailing garbage): a
  // regular file named .gz that starts as a zip archive is refused, before
  // any of it is read (a FIFO cannot be looked at without taking its bytes).
  static void refuse_zip(std::FILE* f, const std::string& path) {
    struct stat st {};
    char head[4];
    if (::fstat(::fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || ::pread(::fileno(f), head, 4, 0) != 4) return;
    if (std::string_view(head, 4) != std::string_view("PK\x03\x04", 4)) return;
    std::fclose(f);
    throw trace_error(path + ": a zip archive, not gzip data (gzip would read its first member only; unzip it and "
                             "give the member)");
  }
  // Waits for the tool; its wait status, -1 when it cannot be had.
  int reap() noexcept {
    int status = 0;
    while (::waitpid(child_, &status, 0) < 0)
      if (errno != EINTR) return -1;
    return status;
  }

  std::string path_;
  std::string tool_;
  std::FILE* file_ = nullptr;
  pid_t child_ = -1;
};

// Compressed bytes read as keys would be a wrong trace with no error: what
// the first bytes of a file say it is when it is compressed data (not named
// .gz or .xz, or decompressed twice) or UTF-16 text, else nullptr.
// `utf16`: whether a UTF-16 byte order mark counts too (text formats; two
// bytes are too weak a sign among binary keys).
inline const char* compressed_kind(std::string_view head, bool utf16 = true) noexcept {
  // gzip's magic and its one compression method, deflate (8).
  if (head.starts_with("\x1f\x8b\x08")) return "gzip-compressed data (a name ending in .gz is read through gzip -dc)";
  if (head.starts_with(std::string_view("\xFD" "7zXZ\0", 6)))
    return "xz-compressed data (a name ending in .xz is read through xz -dc)";
  if (head.starts_with("\x28\xB5\x2F\xFD")) return "zstd-compressed data (decompress it first)";
  if (head.size() >= 10 && head.starts_with("BZh") && head.substr(4, 6) == "1AY&SY")
    return "bzip2-compressed data (decompress it first)";
  if (utf16 && (head.starts_with("\xFF\xFE") || head.starts_with("\xFE\xFF")))
    return "UTF-16 text (keys are read as ASCII or UTF-8: convert it, e.g. with iconv -f UTF-16 -t UTF-8)";
  return nullptr;
}

// Whether the first bytes of a `longs:` file are text with a line break: a
// key per line given as longs by mistake. Binary keys are this only by a
// chance of about (100/256)^n for n bytes (and big-endian keys below 2^56
// start with a zero byte, never text).
inline bool looks_like_text_lines(std::string_view head) noexcept {
  bool line_break = false;
  for (const char c : head) {
    const auto u = static_cast<unsigned char>(c);
    line_break |= u == '\n';
    if (!(u == '\n' || u == '\r' || u == '\t' || (u >= 0x20 && u < 0x7F))) return false;
  }
  return line_break;
}

// Lines of at most max_line bytes (without the newline, a Windows line
// ending's '\r' before it, or a byte order mark before the first line).
class line_reader {
 public:
  line_reader(std::FILE* f, const std::string& path) : f_(f), path_(path), buf_(1 << 16) {}
  // The next line, or false at the end.
  bool next(std::string_view& line) {
    for (;;) {
      const char* nl = static_cast<const char*>(std::memchr(buf_.data() + pos_, '\n', end_ - pos_));
      if (nl || eof_) {
        if (!nl && pos_ == end_) return false;
        const char* stop = nl ? nl : buf_.data() + end_;
        line = std::string_view(buf_.data() + pos_, static_cast<std::size_t>(stop - (buf_.data() + pos_)));
        pos_ = static_cast<std::size_t>(stop - buf_.data()) + (nl ? 1 : 0);
        if (line.ends_with('\r')) line.remove_suffix(1);  // CRLF: a trace written on Windows
        // A UTF-8 byte order mark (Windows editors write one) is not part of
        // the first line: it would make the first key another key, or an error.
        if (number_ == 0 && line.starts_with("\xEF\xBB\xBF")) line.remove_prefix(3);
        check(line.data(), line.size());
        ++number_;
        return true;
      }
      // Not ended yet: too long once past max_line bytes, a '\r' and a byte
      // order mark (said before the buffer fills; exactly when the line ends).
      if (end_ - pos_ > max_line + 4) check(buf_.data() + pos_, end_ - pos_);
      fill();
    }
  }
  std::uint64_t number() const noexcept { return number_; }
  [[noreturn]] void fail(const std::string& what) const {
    throw trace_error(path_ + ":" + std::to_string(number_) + ": " + what);
  }

 private:
  void check(const char* start, std::size_t length) const {
    if (length <= max_line) return;
    // Lines that end in CR alone read as one long line: say so.
    const bool cr = std::memchr(start, '\r', length) != nullptr;
    throw trace_error(path_ + ":" + std::to_string(number_ + 1) + ": line longer than " + std::to_string(max_line) +
                      " bytes" + (cr ? " (it holds carriage returns: a file with CR line ends must be converted first)" : ""));
  }
  void fill() {
    std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
    end_ -= pos_;
    pos_ = 0;
    const std::size_t n = std::fread(buf_.data() + end_, 1, buf_.size() - end_, f_);
    if (n == 0) {
      if (std::ferror(f_)) throw trace_error("reading '" + path_ + "' failed: " + std::strerror(errno));
      eof_ = true;
    }
    end_ += n;
    if (!sniffed_) refuse_compressed();
  }
  void refuse_compressed() {
    sniffed_ = true;
    if (const char* what = compressed_kind(std::string_view(buf_.data(), end_)))
      throw trace_error(path_ + ":1: " + what);
  }
  std::FILE* f_;
  std::string path_;
  std::vector<char> buf_;
  std::size_t pos_ = 0, end_ = 0;
  bool eof_ = false, sniffed_ = false;
  std::uint64_t number_ = 0;
};

enum class csv_status { ok, missing, unclosed_quote, text_after_quote };

// Field `column` (1-based) of a csv line into `field`, trimmed of spaces and
// tabs. A field in double quotes (RFC 4180, as libCacheSim's libcsv reads it)
// may hold the delimiter, "" in it is one quote, and the quotes are not part
// of the key; it ends on its line (keys hold no newline). The whole line is
// checked, not only up to the column: a quote left open in a later field
// would make a reader of whole records see another trace. `scratch` holds a
// quoted field.
inline csv_status csv_field(std::string_view line, unsigned column, char delimiter, std::string& scratch,
                            std::string_view& field) {
  const auto blank = [&](std::size_t i) { return (line[i] == ' ' || line[i] == '\t') && line[i] != delimiter; };
  bool found = false;
  std::size_t i = 0;
  for (unsigned c = 1;; ++c) {
    const bool wanted = c == column;
    std::size_t q = i;
    while (q < line.size() && blank(q)) ++q;
    if (q < line.size() && line[q] == '"') {
      if (wanted) scratch.clear();
      for (std::size_t from = q + 1;;) {
        const std::size_t close = line.find('"', from);
        if (close == std::string_view::npos) return csv_status::unclosed_quote;
        if (wanted) scratch.append(line.substr(from, close - from));
        if (close + 1 < line.size() && line[close + 1] == '"') {
          if (wanted) scratch += '"';
          from = close + 2;
          continue;
        }
        i = close + 1;
        break;
      }
      while (i < line.size() && blank(i)) ++i;
      if (i < line.size() && line[i] != delimiter) return csv_status::text_after_quote;
      if (wanted) {
        field = scratch;
        found = true;
      }
    } else {
      const std::size_t cut = line.find(delimiter, i);
      if (wanted) {
        field = trim(line.substr(i, cut == std::string_view::npos ? std::string_view::npos : cut - i));
        found = true;
      }
      i = cut == std::string_view::npos ? line.size() : cut;
    }
    if (i == line.size()) return found ? csv_status::ok : csv_status::missing;
    ++i;  // past the delimiter
  }
}

// A line of a text trace holding a carriage return (left inside the line by
// a file whose lines end in CR alone) or a NUL (UTF-16 without a byte order
// mark, binary data): read as keys, it would be a wrong trace, not an error.
inline void refuse_not_text(const line_reader& lines, std::string_view line) {
  if (line.find('\r') != std::string_view::npos)
    lines.fail("a carriage return inside the line (lines end with LF or CRLF; a file with CR line ends must be "
               "converted first)");
  if (line.find('\0') != std::string_view::npos)
    lines.fail("a NUL byte in the line (UTF-16 text or binary data? keys are read as ASCII or UTF-8 text)");
}

inline std::string quote(std::string_view s) {
  if (s.size() > 40) return "'" + std::string(s.substr(0, 40)) + "...'";
  return "'" + std::string(s) + "'";
}

}  // namespace detail

// Reads the requests of `in` (called `name` in errors) into b, up to
// opt.max_requests; true when it stopped there, before the end of `in`. The
// seam through which the fuzzer (tests/fuzz/trace_fuzz.cpp) reads memory.
inline bool read_requests(trace_format format, std::FILE* in, const std::string& name, const trace_options& opt,
                          trace_builder& b) {
  const auto full = [&] { return opt.max_requests != 0 && b.size() >= opt.max_requests; };
  if (format == trace_format::longs) {
    // The first 64 bytes (or all there are) are looked at before any is a key.
    // (At most the records asked for: a FIFO's writer need not write more.)
    unsigned char head[64];
    const std::size_t want =
        opt.max_requests != 0 && opt.max_requests < sizeof head / 8 ? opt.max_requests * 8 : sizeof head;
    std::size_t held = 0;
    while (held < want) {
      const std::size_t n = std::fread(head + held, 1, want - held, in);
      if (n == 0) break;
      held += n;
    }
    if (std::ferror(in)) throw trace_error("reading '" + name + "' failed: " + std::strerror(errno));
    const std::string_view seen(reinterpret_cast<const char*>(head), held);
    if (const char* what = detail::compressed_kind(seen, false)) throw trace_error(name + ": byte 0: " + what);
    if (detail::looks_like_text_lines(seen))
      throw trace_error(name + ": byte 0: text lines, not 8-byte binary keys (a key per line is read with plain: or "
                               "lirs:)");
    unsigned char rec[8];
    std::uint64_t offset = 0;
    while (!full()) {
      // From the head first: held < want only when the input ended in it.
      std::size_t n;
      if (offset < held) {
        n = std::min<std::size_t>(8, held - offset);
        std::memcpy(rec, head + offset, n);
      } else {
        n = std::fread(rec, 1, 8, in);
      }
      if (n == 0) {
        if (std::ferror(in)) throw trace_error("reading '" + name + "' failed: " + std::strerror(errno));
        break;
      }
      if (n != 8)
        throw trace_error(name + ": truncated record at byte " + std::to_string(offset) + " (" + std::to_string(n) +
                          " of 8 bytes)");
      std::uint64_t k = 0;
      for (unsigned char c : rec) k = k << 8 | c;
      b.add(k);
      offset += 8;
    }
    return full();
  }
  detail::line_reader lines(in, name);
  std::string_view raw;
  std::string scratch;  // a quoted csv field
  if (format == trace_format::csv && opt.csv_header && lines.next(raw)) detail::refuse_not_text(lines, raw);
  while (!full() && lines.next(raw)) {
    // Checked on the line as read (a Windows CRLF's '\r' already taken off):
    // trimming would take a last '\r' off too.
    detail::refuse_not_text(lines, raw);
    const std::string_view line = detail::trim(raw);
    switch (format) {
      case trace_format::lirs: {
        if (line.empty() || line.front() == '*') break;
        std::uint64_t k = 0;
        if (!detail::parse_u64(line, k)) lines.fail("not a block number: " + detail::quote(line));
        b.add(k);
        break;
      }
      case trace_format::plain:
        if (line.empty()) break;
        b.add_text(line);
        break;
      case trace_format::csv: {
        if (line.empty()) break;
        // Split the line as read, not trimmed: with a tab or space delimiter,
        // trimming would drop an empty first field and shift every column.
        std::string_view f;
        switch (detail::csv_field(raw, opt.csv_column, opt.csv_delimiter, scratch, f)) {
          case detail::csv_status::ok: break;
          case detail::csv_status::missing:
            lines.fail("no field " + std::to_string(opt.csv_column) + " in " + detail::quote(raw));
          case detail::csv_status::unclosed_quote: lines.fail("no closing '\"' in " + detail::quote(raw));
          case detail::csv_status::text_after_quote: lines.fail("text after a closing '\"' in " + detail::quote(raw));
        }
        if (f.empty()) lines.fail("empty field " + std::to_string(opt.csv_column) + " in " + detail::quote(raw));
        b.add_text(f);
        break;
      }
      case trace_format::arc: {
        if (line.empty()) break;
        const std::size_t cut = line.find_first_of(" \t");
        std::uint64_t start = 0, count = 0;
        const std::string_view rest = cut == std::string_view::npos ? std::string_view{} : detail::trim(line.substr(cut));
        const std::string_view second = rest.substr(0, rest.find_first_of(" \t"));
        if (!detail::parse_u64(line.substr(0, cut), start) || !detail::parse_u64(second, count))
          lines.fail("expected 'start count' (count 1..1000000): " + detail::quote(line));
        if (count == 0 || count > 1'000'000)
          lines.fail("a count of " + std::to_string(count) + " blocks (count 1..1000000): " + detail::quote(line));
        if (count - 1 > UINT64_MAX - start)  // the last block, start + count - 1, must fit
          lines.fail(std::to_string(count) + " blocks from block " + std::to_string(start) +
                     " pass the largest block number, 2^64 - 1: " + detail::quote(line));
        for (std::uint64_t i = 0; i < count && !full(); ++i) b.add(start + i);
        break;
      }
      case trace_format::longs: break;
    }
  }
  return full();
}

// Reads a whole trace (up to opt.max_requests requests).
inline trace read_trace(trace_format format, const std::string& path, const trace_options& opt = {}) {
  detail::input in(path);
  trace_builder b(path);
  bool stopped = false;
  try {
    stopped = read_requests(format, in.get(), path, opt, b);
  } catch (const trace_error& e) {
    const std::string failed = in.decompressor_failure();
    if (failed.empty()) throw;
    throw trace_error(failed + "; before that, its output had: " + e.message());
  }
  if (!stopped) in.close();
  return std::move(b).take();
}

}  // namespace arenastat::sim
