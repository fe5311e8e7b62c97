// The simulator's pieces (bench/sim/): the trace readers and their error
// messages, and the reference policies on tiny traces traced by hand.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>
#include <sys/wait.h>
#include <fstream>
#include <string>
#include <vector>

#include "arenastat/cache/cache.hpp"
#include "../../bench/sim/reference_policies.hpp"
#include "../../bench/sim/synthetic.hpp"
#include "../../bench/sim/trace.hpp"

using namespace arenastat;
using sim::trace;

namespace {

// Files written by the tests, removed when the program ends.
struct written_files {
  std::vector<std::string> paths;
  ~written_files() {
    for (const std::string& p : paths) std::remove(p.c_str());
  }
};
written_files& written() {
  static written_files w;
  return w;
}

// In the temporary directory, named after this process (never the working
// directory: the binary may be run from the source tree).
std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("sim_test_" + std::to_string(::getpid()) + "_" + name)).string();
  written().paths.push_back(path);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

trace keys_trace(std::vector<std::uint32_t> keys) {
  trace t;
  t.keys = std::move(keys);
  for (std::uint32_t k : t.keys) t.distinct = k + 1 > t.distinct ? k + 1 : t.distinct;
  return t;
}

template <class P>
std::vector<bool> hits_of(P& p, const trace& t) {
  std::vector<bool> h;
  for (std::size_t i = 0; i < t.keys.size(); ++i) h.push_back(p.access(t.keys[i], i));
  return h;
}

std::string error_of(sim::trace_format f, const std::string& path, sim::trace_options o = {}) {
  try {
    sim::read_trace(f, path, o);
  } catch (const sim::trace_error& e) {
    return e.what();
  }
  return "no error";
}

// java.util.Random as its documentation specifies it (a 48-bit LCG), for
// Caffeine's Clairvoyant test trace.
struct java_random {
  std::uint64_t seed;
  explicit java_random(std::uint64_t s) : seed((s ^ 0x5DEECE66Dull) & ((1ull << 48) - 1)) {}
  std::int32_t next(int bits) {
    seed = (seed * 0x5DEECE66Dull + 0xB) & ((1ull << 48) - 1);
    return static_cast<std::int32_t>(static_cast<std::int64_t>(seed) >> (48 - bits));
  }
  std::int32_t next_int(std::int32_t bound) {  // bound not a power of two
    std::int32_t r = next(31), u = r;
    while (static_cast<std::int64_t>(u) - (r = u % bound) + (bound - 1) > INT32_MAX) u = next(31);
    return r;
  }
};

}  // namespace

TEST_CASE("sim: lirs format skips '*' separators and renumbers keys densely", "[cache][sim]") {
  const trace t = sim::read_trace(sim::trace_format::lirs, write_file("a.lirs", "7\n9\n*\n7\n 12 \r\n"));
  CHECK(t.keys == std::vector<std::uint32_t>{0, 1, 0, 2});
  CHECK(t.distinct == 3);
}

TEST_CASE("sim: arc format expands start and count into one request per block", "[cache][sim]") {
  const trace t = sim::read_trace(sim::trace_format::arc, write_file("a.arc", "10 3 0 1\n11 2 5 6\n"));
  CHECK(t.keys == std::vector<std::uint32_t>{0, 1, 2, 1, 2});
}

TEST_CASE("sim: csv takes the key from the chosen column after the header", "[cache][sim]") {
  const trace t = sim::read_trace(sim::trace_format::csv, write_file("a.csv", "t,op,key\n1,r,5\n2,w,abc\n3,r,5\n"),
                                  {.csv_column = 3, .csv_header = true});
  CHECK(t.keys == std::vector<std::uint32_t>{0, 1, 0});
}

TEST_CASE("sim: longs are 8-byte big-endian keys", "[cache][sim]") {
  std::string bytes(16, '\0');
  bytes[7] = 1;   // key 1
  bytes[14] = 1;  // key 256
  std::string with_truncated = bytes;
  with_truncated.append(bytes, 0, 8);
  const trace t = sim::read_trace(sim::trace_format::longs, write_file("a.longs", with_truncated));
  CHECK(t.keys == std::vector<std::uint32_t>{0, 1, 0});
}

TEST_CASE("sim: a gzip-compressed trace is read through gzip", "[cache][sim]") {
  const std::string path = write_file("b.lirs", "1\n2\n1\n");
  REQUIRE(std::system(("gzip -kf " + path).c_str()) == 0);
  written().paths.push_back(path + ".gz");
  CHECK(sim::read_trace(sim::trace_format::lirs, path + ".gz").keys == std::vector<std::uint32_t>{0, 1, 0});
}

TEST_CASE("sim: a .gz with trailing garbage is read (gzip's warning, status 2, is no failure)", "[cache][sim]") {
  const std::string path = write_file("g.lirs", "1\n2\n1\n");
  REQUIRE(std::system(("gzip -kf " + path + " && printf 'junk' >> " + path + ".gz").c_str()) == 0);
  written().paths.push_back(path + ".gz");
  CHECK(sim::read_trace(sim::trace_format::lirs, path + ".gz").keys == std::vector<std::uint32_t>{0, 1, 0});
}

TEST_CASE("sim: every bad input is named", "[cache][sim]") {
  using f = sim::trace_format;
  CHECK(error_of(f::lirs, "/nonexistent/t") == "cannot open '/nonexistent/t': No such file or directory");
  const std::string bad = write_file("bad.lirs", "1\n2\nx3\n");
  CHECK(error_of(f::lirs, bad) == bad + ":3: not a block number: 'x3'");
  const std::string arc = write_file("bad.arc", "5\n");
  CHECK(error_of(f::arc, arc) == arc + ":1: expected 'start count' (count 1..1000000): '5'");
  const std::string csv = write_file("bad.csv", "1,2\n");
  CHECK(error_of(f::csv, csv, {.csv_column = 3}) == csv + ":1: no field 3 in '1,2'");
  const std::string longs = write_file("bad.longs", std::string(11, '\1'));
  CHECK(error_of(f::longs, longs) == longs + ": truncated record at byte 8 (3 of 8 bytes)");
  const std::string long_line = write_file("long.lirs", "1\n" + std::string(5000, '7') + "\n");
  CHECK(error_of(f::lirs, long_line) == long_line + ":2: line longer than 4096 bytes");
  const std::string not_gz = write_file("not.gz", "plain text");
  CHECK(error_of(f::lirs, not_gz) == "decompressing '" + not_gz + "' with gzip failed (not a valid .gz file?)");
  // A read that fails is named with its reason, in the binary format as in the text ones.
  const std::string dir = std::filesystem::temp_directory_path() / ("sim_test_dir_" + std::to_string(::getpid()));
  std::filesystem::create_directory(dir);
  CHECK(error_of(f::longs, dir) == "reading '" + dir + "' failed: Is a directory");
  CHECK(error_of(f::lirs, dir) == "reading '" + dir + "' failed: Is a directory");
  std::filesystem::remove(dir);
}

TEST_CASE("sim: a generator's unknown parameter or bad value is named", "[cache][sim]") {
  CHECK_THROWS_WITH(sim::generate("loop", "keys=10,size=3"), "loop: unknown parameter 'size'");
  CHECK_THROWS_WITH(sim::generate("zipf", "theta=2"),
                    "zipf: bad value for theta: '2' (expected a number in 0.01..0.999)");
  CHECK(sim::generate("loop", "keys=3,length=7").keys == std::vector<std::uint32_t>{0, 1, 2, 0, 1, 2, 0});
  CHECK_THROWS_WITH(sim::generate("loop", "keys=10,keys=20"), "loop: parameter 'keys' given twice");
}

TEST_CASE("sim: --max-requests makes a generator's first N requests of the trace it describes", "[cache][sim]") {
  // The same requests as the whole trace's first N: zipf-phase's change at
  // half its length stays at half the length given, not half of N.
  for (const char* g : {"loop", "zipf", "zipf-phase", "scan", "recency"}) {
    INFO(g);
    const trace whole = sim::generate(g, "length=3000");
    const trace first = sim::generate(g, "length=3000", 2000);
    REQUIRE(first.keys.size() == 2000);
    CHECK(std::equal(first.keys.begin(), first.keys.end(), whole.keys.begin()));
  }
  CHECK(sim::generate("loop", "length=30", 1000).keys.size() == 30);  // a bound above the length changes nothing
}

TEST_CASE("sim: ARC on a hand-traced sequence (c = 2)", "[cache][sim]") {
  // 1 2 miss: T1 = [2 1]. 1 hit: T2 = [1], T1 = [2]. 3 miss, case IV B
  // (|T1|+|B1| = 1 < 2, total 2 >= 2): REPLACE with p = 0: |T1| = 1 > 0, 2 to B1.
  // 2 (in B1, case II): p = 1; REPLACE: |T1| = 1 is not > p, so T2's LRU 1 to
  // B2; T2 = [2]. 1 (in B2, case III): p = 0; REPLACE: |T1| = 1 > 0: 3 to B1;
  // T2 = [1 2]. 3 (in B1): p = 1; REPLACE: T1 empty: T2's LRU 2 to B2; T2 = [3 1].
  // 2 (in B2): p = 0; REPLACE: T1 empty: 1 to B2; T2 = [2 3]. 3: a hit.
  const trace t = keys_trace({1, 2, 1, 3, 2, 1, 3, 2, 3});
  sim::arc a(2, t.distinct);
  CHECK(hits_of(a, t) == std::vector<bool>{false, false, true, false, false, false, false, false, true});
  CHECK(a.target() == 0);
}

TEST_CASE("sim: OPT evicts the key used farthest in the future", "[cache][sim]") {
  // c = 2: 1 2 miss; 3 miss evicts 2 (next use 6) rather than 1 (next use 3);
  // 1 hit; 2 miss evicts 3 (never used again) ... 1 hit.
  const trace t = keys_trace({1, 2, 3, 1, 2, 1});
  const auto next = sim::next_uses(t.keys, t.distinct);
  CHECK(next == std::vector<std::uint32_t>{3, 4, 6, 5, 6, 6});
  sim::opt o(2, next, false);
  CHECK(hits_of(o, t) == std::vector<bool>{false, false, false, true, false, true});
}

TEST_CASE("sim: opt_bypass reproduces Caffeine's Clairvoyant figures", "[cache][sim]") {
  // Caffeine's ClairvoyantPolicyTest: A B C A B at size 2 gives 2 hits; and
  // 2000 keys of java.util.Random(42).nextInt(50) at size 8 give 905 hits.
  const trace small = keys_trace({0, 1, 2, 0, 1});
  const auto n1 = sim::next_uses(small.keys, small.distinct);
  sim::opt o1(2, n1, true);
  std::uint64_t hits = 0;
  for (std::size_t i = 0; i < small.keys.size(); ++i) hits += o1.access(small.keys[i], i);
  CHECK(hits == 2);
  java_random r(42);
  std::vector<std::uint32_t> keys;
  for (int i = 0; i < 2000; ++i) keys.push_back(static_cast<std::uint32_t>(r.next_int(50)));
  const trace t = keys_trace(keys);
  const auto next = sim::next_uses(t.keys, t.distinct);
  sim::opt o(8, next, true);
  hits = 0;
  for (std::size_t i = 0; i < t.keys.size(); ++i) hits += o.access(t.keys[i], i);
  CHECK(hits == 905);
}

TEST_CASE("sim: LIRS keeps a loop's LIR set where LRU hits nothing", "[cache][sim]") {
  // c = 3 (LIR 2, HIR 1) over the loop 0 1 2 3: after the warm-up 0 and 1
  // are LIR and stay; each pass hits them and misses 2 and 3.
  std::vector<std::uint32_t> keys;
  for (int pass = 0; pass < 10; ++pass)
    for (std::uint32_t k = 0; k < 4; ++k) keys.push_back(k);
  const trace t = keys_trace(keys);
  sim::lirs l(3, t.distinct);
  sim::reference_lru r(3, t.distinct);
  std::uint64_t lirs_hits = 0, lru_hits = 0;
  for (std::size_t i = 0; i < t.keys.size(); ++i) {
    lirs_hits += l.access(t.keys[i], i);
    lru_hits += r.access(t.keys[i], i);
  }
  CHECK(lru_hits == 0);
  CHECK(lirs_hits == 9 * 2);
}

TEST_CASE("sim: this project's LRU equals the reference LRU on generated traces", "[cache][sim]") {
  for (const char* spec : {"recency:length=50000,mean=300", "scan:keys=2000,scan=700,every=3000,length=50000",
                           "zipf-phase:keys=5000,length=50000"}) {
    const std::string s(spec);
    const trace t = sim::generate(s.substr(0, s.find(':')), s.substr(s.find(':') + 1));
    for (std::size_t size : {16u, 500u, 3000u}) {
      sim::reference_lru ref(size, t.distinct);
      lru_cache<std::uint64_t, std::uint64_t> c{"test.sim.lru", {.max_entries = size, .track = false}};
      std::uint64_t ref_hits = 0, misses = 0;
      for (std::size_t i = 0; i < t.keys.size(); ++i) {
        ref_hits += ref.access(t.keys[i], i);
        c.get_or_load(t.keys[i], [&](std::uint64_t) { ++misses; return std::uint64_t{0}; });
      }
      INFO(spec << " size " << size);
      CHECK(t.keys.size() - misses == ref_hits);
    }
  }
}

TEST_CASE("sim: the Caffeine-style W-TinyLFU on a hand-traced sequence (c = 4, window fixed)", "[cache][sim]") {
  // Window 1 (1% of 4, at least 1), main 3, protected at most 2 (80% of 3).
  // 1 2 3 4 miss: each overflows the window into probation: probation [3 2 1]
  // (front first), window [4]; the cache is full, no duel yet. 1 hit (to
  // protected), 1 hit, 2 hit (to protected [2 1]). 5 miss: candidate 4
  // (estimate 1) duels probation's back 3 (1): a tie loses, 4 is evicted.
  // 4 miss (now 2): candidate 5 (1) against 3 (1): 5 is evicted. 6 miss:
  // candidate 4 (2) against 3 (1): 4 enters, 3 is evicted. 3 miss: candidate
  // 6 (1) against probation's back 4 (2): 6 is evicted.
  const trace t = keys_trace({1, 2, 3, 4, 1, 1, 2, 5, 4, 6, 3});
  sim::caffeine_tinylfu w(4, t.distinct, {.climb = false});
  CHECK(w.window_max() == 1);
  CHECK(w.protected_max() == 2);
  CHECK(hits_of(w, t) ==
        std::vector<bool>{false, false, false, false, true, true, true, false, false, false, false});
  // The estimates the duels used (exact: none of these keys collide in all 4 rows).
  CHECK(w.frequency(1) == 3);
  CHECK(w.frequency(2) == 2);
  CHECK(w.frequency(4) == 2);
  CHECK(w.frequency(5) == 1);
  CHECK(w.frequency(6) == 1);
  using where = sim::caffeine_tinylfu::where_t;
  CHECK(w.where(1) == where::protected_);
  CHECK(w.where(2) == where::protected_);
  CHECK(w.where(4) == where::probation);
  CHECK(w.where(3) == where::window);
  CHECK(w.where(5) == where::none);
  CHECK(w.where(6) == where::none);
}

TEST_CASE("sim: the Caffeine-style sketch halves its counters after 10 x capacity increments", "[cache][sim]") {
  // c = 10: sample 100 increments. Key 0 read 15 times saturates its counters
  // (15 increments); 85 other keys read once make 100: every counter halves,
  // key 0's 15 to 7.
  std::vector<std::uint32_t> keys(15, 0);
  for (std::uint32_t k = 1; k <= 85; ++k) keys.push_back(k);
  const trace t = keys_trace(keys);
  sim::caffeine_tinylfu w(10, t.distinct, {.climb = false});
  for (std::size_t i = 0; i + 1 < t.keys.size(); ++i) w.access(t.keys[i], i);
  CHECK(w.resets() == 0);
  CHECK(w.frequency(0) == 15);
  w.access(t.keys.back(), t.keys.size() - 1);
  CHECK(w.resets() == 1);
  CHECK(w.frequency(0) == 7);
}

TEST_CASE("sim: a csv split on tabs or spaces keeps an empty first field", "[cache][sim]") {
  // The line is not trimmed before it is split: with a tab or space
  // delimiter, that would drop the empty first field and shift every column.
  const trace tabs = sim::read_trace(sim::trace_format::csv, write_file("a.tsv", "\t5\tx\n\t6\tx\r\n\t5\tx\n"),
                                     {.csv_column = 2, .csv_delimiter = '\t'});
  CHECK(tabs.keys == std::vector<std::uint32_t>{0, 1, 0});
  const trace spaces = sim::read_trace(sim::trace_format::csv, write_file("a.ssv", " 5 x\n 6 x\n"),
                                       {.csv_column = 2, .csv_delimiter = ' '});
  CHECK(spaces.keys == std::vector<std::uint32_t>{0, 1});
}

TEST_CASE("sim: csv fields in double quotes may hold the delimiter and quotes (RFC 4180)", "[cache][sim]") {
  // As libCacheSim's csv reader (libcsv) reads them: the quotes are not part
  // of the key, a delimiter between them does not end the field, "" is one quote.
  const std::string path = write_file("q.csv", "a,\"x,y\",5\nb,\"5\",5\n\"c\"\"d\", 7 ,\"5\"\n");
  CHECK(sim::read_trace(sim::trace_format::csv, path, {.csv_column = 3}).keys == std::vector<std::uint32_t>{0, 0, 0});
  CHECK(sim::read_trace(sim::trace_format::csv, path, {.csv_column = 2}).keys == std::vector<std::uint32_t>{0, 1, 2});
  const std::string same = write_file("q2.csv", "\"c\"\"d\",1\nc\"d,2\n 5 ,3\n\"5\",4\n");
  CHECK(sim::read_trace(sim::trace_format::csv, same).keys == std::vector<std::uint32_t>{0, 0, 1, 1});
  const std::string open = write_file("open.csv", "1,2\n3,\"4\n");
  CHECK(error_of(sim::trace_format::csv, open, {.csv_column = 2}) == open + ":2: no closing '\"' in '3,\"4'");
  const std::string after = write_file("after.csv", "\"1\"2,3\n");
  CHECK(error_of(sim::trace_format::csv, after) == after + ":1: text after a closing '\"' in '\"1\"2,3'");
}

TEST_CASE("sim: an empty csv field is named as empty, not as missing", "[cache][sim]") {
  const std::string csv = write_file("empty.csv", "1,2,3\n1,,3\n");
  CHECK(error_of(sim::trace_format::csv, csv, {.csv_column = 2}) == csv + ":2: empty field 2 in '1,,3'");
  const std::string quoted = write_file("empty2.csv", "1,\"\",3\n");
  CHECK(error_of(sim::trace_format::csv, quoted, {.csv_column = 2}) == quoted + ":1: empty field 2 in '1,\"\",3'");
}

TEST_CASE("sim: a Windows line ending does not count towards a line's 4096 bytes", "[cache][sim]") {
  const std::string longest(4096, '7');
  const std::string crlf = write_file("crlf.lirs", "1\r\n" + longest.substr(0, 19) + "\r\n" + longest + "\r\n");
  CHECK(error_of(sim::trace_format::lirs, crlf) == crlf + ":3: not a block number: '" + longest.substr(0, 40) + "...'");
  const trace t = sim::read_trace(sim::trace_format::plain, crlf);
  CHECK(t.keys == std::vector<std::uint32_t>{0, 1, 2});
  const std::string too_long = write_file("crlf2.lirs", "1\r\n" + longest + "7\r\n");
  CHECK(error_of(sim::trace_format::lirs, too_long) == too_long + ":2: line longer than 4096 bytes");
}

TEST_CASE("sim: a UTF-8 byte order mark before the first line is not part of it", "[cache][sim]") {
  // Windows editors start UTF-8 files with EF BB BF: the first key is the
  // same key as on the lines after it, in every text format.
  const std::string bom = "\xEF\xBB\xBF";
  CHECK(sim::read_trace(sim::trace_format::lirs, write_file("bom.lirs", bom + "1\r\n2\r\n1\r\n")).keys ==
        std::vector<std::uint32_t>{0, 1, 0});
  CHECK(sim::read_trace(sim::trace_format::plain, write_file("bom.txt", bom + "1\n2\n1\n")).keys ==
        std::vector<std::uint32_t>{0, 1, 0});
  CHECK(sim::read_trace(sim::trace_format::csv, write_file("bom.csv", bom + "1,a\n2,b\n1,c\n")).keys ==
        std::vector<std::uint32_t>{0, 1, 0});
  CHECK(sim::read_trace(sim::trace_format::arc, write_file("bom.arc", bom + "1 2\n2 1\n")).keys ==
        std::vector<std::uint32_t>{0, 1, 1});
  // Only before the first line: elsewhere it is text like any other.
  const std::string later = write_file("bom2.lirs", "1\n" + bom + "1\n");
  CHECK(error_of(sim::trace_format::lirs, later) == later + ":2: not a block number: '" + bom + "1'");
}

TEST_CASE("sim: compressed data in a file not named .gz or .xz is refused, not read as text", "[cache][sim]") {
  // A .gz saved under another name would otherwise become one key per
  // "line" of compressed bytes (plain, csv) with no error at all.
  const std::string text = write_file("c.txt", "1\n2\n1\n");
  REQUIRE(std::system(("gzip -c " + text + " > " + text + ".gzip").c_str()) == 0);
  written().paths.push_back(text + ".gzip");
  CHECK(error_of(sim::trace_format::plain, text + ".gzip") ==
        text + ".gzip:1: gzip-compressed data (a name ending in .gz is read through gzip -dc)");
  const std::string xz = write_file("c.xz.txt", std::string("\xFD" "7zXZ\0\0\x01", 8));
  CHECK(error_of(sim::trace_format::csv, xz) == xz + ":1: xz-compressed data (a name ending in .xz is read through xz -dc)");
  const std::string zst = write_file("c.zst", std::string("\x28\xB5\x2F\xFD\x24\x06", 6));
  CHECK(error_of(sim::trace_format::plain, zst) == zst + ":1: zstd-compressed data (decompress it first)");
  const std::string bz = write_file("c.bz", "BZh91AY&SY...");
  CHECK(error_of(sim::trace_format::lirs, bz) == bz + ":1: bzip2-compressed data (decompress it first)");
  CHECK(sim::read_trace(sim::trace_format::plain, text).keys == std::vector<std::uint32_t>{0, 1, 0});
}

TEST_CASE("sim: an arc line may run up to the last block number", "[cache][sim]") {
  const std::string top = write_file("top.arc", "18446744073709551615 1\n18446744073709551614 2\n");
  CHECK(sim::read_trace(sim::trace_format::arc, top).keys == std::vector<std::uint32_t>{0, 1, 0});
  const std::string past = write_file("past.arc", "18446744073709551615 2\n");
  CHECK(error_of(sim::trace_format::arc, past) ==
        past + ":1: 2 blocks from block 18446744073709551615 pass the largest block number, 2^64 - 1: "
                "'18446744073709551615 2'");
}

namespace {

// A stand-in `gzip` on PATH for one test: prints `out` and exits with `status`
// whatever it is asked, so a test can make a decompressor that fails after
// giving garbage (as a corrupt stream's does) without depending on how a real
// gzip decodes one particular corruption.
struct fake_gzip {
  std::string dir;
  std::string old_path;
  bool had_path = false;
  int status;
  fake_gzip(const std::string& out, int exit_status) : status(exit_status) {
    dir = (std::filesystem::temp_directory_path() / ("sim_test_fakegz_" + std::to_string(::getpid()))).string();
    std::filesystem::create_directories(dir);
    std::ofstream(dir + "/gzip") << "#!/bin/sh\nprintf '" << out << "'\nexit " << status << "\n";
    std::filesystem::permissions(dir + "/gzip", std::filesystem::perms::owner_all);
    if (const char* p = std::getenv("PATH")) {
      had_path = true;
      old_path = p;
    }
    ::setenv("PATH", (dir + (had_path ? ":" + old_path : std::string())).c_str(), 1);
  }
  ~fake_gzip() {
    if (had_path) ::setenv("PATH", old_path.c_str(), 1);
    else ::unsetenv("PATH");
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  // Whether the stand-in runs and exits as told (not in a temporary
  // directory mounted noexec, where the shell could not start it).
  bool runs() const {
    const int r = std::system((dir + "/gzip >/dev/null 2>&1").c_str());
    return r != -1 && WIFEXITED(r) && WEXITSTATUS(r) == status;
  }
};
}  // namespace

TEST_CASE("sim: a bad line from a decompressor that then failed is reported as its failure", "[cache][sim]") {
  const std::string path = write_file("corrupt.gz", "(read by the stand-in gzip, which ignores it)\n");
  fake_gzip gz("1\\n2\\nxy\\n3\\n", 1);
  INFO("the stand-in gzip in " << gz.dir << " must run (is the temporary directory mounted noexec?)");
  REQUIRE(gz.runs());
  CHECK(error_of(sim::trace_format::lirs, path) == "decompressing '" + path +
                                                       "' with gzip failed (not a valid .gz file?); before that, its "
                                                       "output had: " + path + ":3: not a block number: 'xy'");
}

TEST_CASE("sim: a bad line from a decompressor that ended cleanly is the error", "[cache][sim]") {
  const std::string path = write_file("badline.gz", "(read by the stand-in gzip, which ignores it)\n");
  fake_gzip gz("1\\n2\\nxy\\n3\\n", 0);
  INFO("the stand-in gzip in " << gz.dir << " must run (is the temporary directory mounted noexec?)");
  REQUIRE(gz.runs());
  CHECK(error_of(sim::trace_format::lirs, path) == path + ":3: not a block number: 'xy'");
}

#ifdef ARENASTAT_BENCH_CACHE
#include <nlohmann/json.hpp>

// cache_sim, built beside bench_cache: its exit status and what it printed
// (stdout and stderr, or stdout alone).
static std::pair<int, std::string> run_cache_sim(const std::string& args, bool with_stderr = true,
                                                 const std::string& env = "") {
  std::string program = ARENASTAT_BENCH_CACHE;
  program = program.substr(0, program.rfind('/') + 1) + "cache_sim";
  std::string out;
  std::FILE* p = ::popen((env + program + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null")).c_str(), "r");
  REQUIRE(p);
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

TEST_CASE("sim: cache_sim escapes a trace's name and lines where people read them", "[cache][sim]") {
  // A name holding a terminal escape and a byte outside UTF-8.
  const std::string path = write_file("odd\x1b[2J\xff.lirs", "1\n2\n1\n");
  const std::string shown_path = path.substr(0, path.size() - std::string("odd\x1b[2J\xff.lirs").size()) +
                                 "odd\\x1b[2J\\xff.lirs";
  const auto [status, out] = run_cache_sim("--sizes=2 --policies=lru 'lirs:" + path + "'");
  CHECK(status == 0);
  CHECK_THAT(out, Catch::StartsWith("lirs:" + shown_path + ": 3 requests, 2 distinct keys; hit rate %\n"));
  // An error quoting a bad line: its bytes escaped too, the message one line.
  const std::string bad = write_file("bad_line.lirs", "1\nx\x1b]0;pwned\x07\n");
  const auto [bad_status, bad_out] = run_cache_sim("--sizes=2 '" + std::string("lirs:") + bad + "'");
  CHECK(bad_status == 1);
  CHECK(bad_out == "cache_sim: " + bad + ":2: not a block number: 'x\\x1b]0;pwned\\x07'\n");
  // A NUL byte in a line is named as such (the line is text no longer).
  const std::string nul = write_file("nul_line.lirs", std::string("1\nx\0y\n", 6));
  const auto [nul_status, nul_out] = run_cache_sim("--sizes=2 '" + std::string("lirs:") + nul + "'");
  CHECK(nul_status == 1);
  CHECK(nul_out == "cache_sim: " + nul +
                       ":2: a NUL byte in the line (UTF-16 text or binary data? keys are read as ASCII or UTF-8 text)\n");
  // A bad option value is quoted escaped too (bench/args.hpp, every bench program).
  const auto [opt_status, opt_out] = run_cache_sim("'--sizes=1\x1b[2J' loop");
  CHECK(opt_status == 2);
  CHECK_THAT(opt_out, Catch::StartsWith("cache_sim: bad value for --sizes: '1\\x1b[2J' (expected an integer in "));
}

TEST_CASE("sim: a decompressor that is not installed is named as missing, not the file as invalid", "[cache][sim]") {
  const std::string path = write_file("plain.gz", "not read\n");
  const auto [status, out] = run_cache_sim("--sizes=2 'lirs:" + path + "'", true, "PATH=/nonexistent ");
  CHECK(status == 1);
  CHECK(out == "cache_sim: cannot decompress '" + path + "': gzip was not found (is it installed and on PATH?)\n");
}

TEST_CASE("sim: cache_sim says a trace it cannot read before simulating any (a directory, a missing decompressor)",
          "[cache][sim]") {
  // The generator before it would take the run's time, then the error came.
  const std::string dir = std::filesystem::temp_directory_path() / ("sim_test_rundir_" + std::to_string(::getpid()));
  std::filesystem::create_directory(dir);
  const auto [status, out] = run_cache_sim("--sizes=2 --policies=lru loop:keys=3,length=9 'lirs:" + dir + "'");
  std::filesystem::remove(dir);
  CHECK(status == 1);
  CHECK(out == "cache_sim: cannot read '" + dir + "': a directory\n");  // no table row: nothing ran
  const std::string gz = write_file("later.xz", "not read\n");
  const auto [gz_status, gz_out] =
      run_cache_sim("--sizes=2 --policies=lru loop:keys=3,length=9 'lirs:" + gz + "'", true, "PATH=/nonexistent ");
  CHECK(gz_status == 1);
  CHECK(gz_out == "cache_sim: cannot decompress '" + gz + "': xz was not found (is it installed and on PATH?)\n");
}

TEST_CASE("sim: cache_sim limits its address space to the memory available when it starts", "[cache][sim]") {
  // A stand-in gzip reports the limit it inherited (the process's own), then
  // passes its input through.
  const std::string dir = std::filesystem::temp_directory_path() / ("sim_test_tool_" + std::to_string(::getpid()));
  std::filesystem::create_directory(dir);
  std::ofstream(dir + "/gzip") << "#!/bin/sh\ngrep '^Max address space' /proc/self/limits >&2\nexec cat\n";
  std::filesystem::permissions(dir + "/gzip", std::filesystem::perms::owner_all);
  const std::string gz = write_file("limit.gz", "1\n2\n1\n");
  unsigned long long total_kb = 0, swap_total_kb = 0;
  {
    std::ifstream meminfo("/proc/meminfo");
    std::string name;
    unsigned long long kb;
    std::string unit;
    while (meminfo >> name >> kb >> unit) {
      if (name == "MemTotal:") total_kb = kb;
      if (name == "SwapTotal:") swap_total_kb = kb;
    }
  }
  REQUIRE(total_kb > 0);
  // The limit's line: "unlimited" or a number of bytes.
  const auto limit_seen = [&](const std::string& shell_prefix) -> std::string {
    const auto [status, out] =
        run_cache_sim("--sizes=2 --policies=lru 'lirs:" + gz + "'", true, shell_prefix + "PATH=" + dir + ":/usr/bin:/bin ");
    CHECK(status == 0);
    const std::size_t at = out.find("Max address space");
    char soft[32] = {};
    if (at == std::string::npos || std::sscanf(out.c_str() + at, "Max address space %31s", soft) != 1) FAIL(out);
    return soft;
  };
  const std::string soft = limit_seen("");
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  CHECK(soft == "unlimited");  // a sanitizer's shadow memory needs the address space
#else
  // What it mapped at the start (a few MiB) plus at most the memory and swap
  // there are; at least a quarter of the machine's memory on an idle machine.
  REQUIRE(soft != "unlimited");
  const double bytes = std::stod(soft);
  CHECK(bytes <= static_cast<double>(total_kb + swap_total_kb) * 1024.0 + 1e9);
  CHECK(bytes >= static_cast<double>(total_kb) * 1024.0 / 4);
  // A limit the user set is kept (ulimit -v counts KiB).
  CHECK(limit_seen("ulimit -v 4000000; ") == std::to_string(4000000ull * 1024));
#endif
  std::filesystem::remove_all(dir);
}

TEST_CASE("sim: cache_sim --json keeps the rows of the traces done when a later one is bad", "[cache][sim]") {
  // Keys 1 2 1 at size 2: one hit in three for LRU and for the optimum. The
  // second trace's third line is not a block number, found only when it is read.
  const std::string good = write_file("done.lirs", "1\n2\n1\n");
  const std::string bad = write_file("later.lirs", "1\n2\nx\n");
  const auto [status, out] = run_cache_sim("--sizes=2 --policies=lru,opt --json 'lirs:" + good + "' 'lirs:" + bad + "'", false);
  CHECK(status == 1);
  const auto j = nlohmann::json::parse(out);
  REQUIRE(j["results"].size() == 2);
  for (const auto& r : j["results"]) {
    CHECK(r["trace"] == "lirs:" + good);
    CHECK(r["requests"] == 3);
    CHECK(r["hits"] == 1);
  }
  CHECK(j["results"][0]["policy"] == "lru");
  CHECK(j["results"][1]["policy"] == "opt");
  CHECK(j["error"] == bad + ":3: not a block number: 'x'");
  // A run to its end says so with a null error.
  const auto [ok_status, ok_out] = run_cache_sim("--sizes=2 --policies=lru --json 'lirs:" + good + "'", false);
  CHECK(ok_status == 0);
  CHECK(nlohmann::json::parse(ok_out)["error"].is_null());
}

TEST_CASE("sim: cache_sim names an option given without its value", "[cache][sim]") {
  const auto [status, out] = run_cache_sim("--sizes loop");
  CHECK(status == 2);
  CHECK_THAT(out, Catch::StartsWith("cache_sim: option '--sizes' needs a value: --sizes=...\nusage: cache_sim "));
}

TEST_CASE("sim: cache_sim's table columns are as wide as the policies' names", "[cache][sim]") {
  // 4 requests, 3 of them hits for both policies at size 2 (keys 1 1 1 1).
  const std::string path = write_file("wide.lirs", "1\n1\n1\n1\n");
  const auto [status, out] = run_cache_sim("--sizes=2 --policies=lru,caffeine_doorkeeper 'lirs:" + path + "'");
  CHECK(status == 0);
  CHECK(out == "lirs:" + path + ": 4 requests, 1 distinct keys; hit rate %\n"
               "      size        lru caffeine_doorkeeper\n"
               "         2      75.00               75.00\n");
}

TEST_CASE("sim: cache_sim --json is valid JSON whatever bytes a trace's name holds", "[cache][sim]") {
  const std::string path = write_file("odd\x1b[2J\xff.lirs", "1\n2\n1\n");
  const auto [status, out] = run_cache_sim("--json --sizes=2 --policies=lru 'lirs:" + path + "'", false);
  CHECK(status == 0);
  const nlohmann::json j = nlohmann::json::parse(out);  // throws on invalid JSON or UTF-8
  REQUIRE(j["results"].size() == 1);
  // The byte outside UTF-8 is U+FFFD and its two hex digits (the JSON writer's marking).
  const std::string marked = path.substr(0, path.size() - std::string("\xff.lirs").size()) + "\xef\xbf\xbd" "ff.lirs";
  CHECK(j["results"][0]["trace"] == "lirs:" + marked);
  CHECK(j["results"][0]["requests"] == 3);
  CHECK(j["results"][0]["distinct"] == 2);
  CHECK(j["results"][0]["hits"] == 1);
  CHECK(j["results"][0]["hit_rate"].get<double>() == 1.0 / 3.0);
}

TEST_CASE("sim: cache_sim --check-lru refuses policies without lru and ref_lru", "[cache][sim]") {
  // Without both there is nothing to compare: it said "lru == ref_lru" for
  // --policies=arc, and compared lru with an unset count for --policies=lru.
  for (const char* policies : {"arc", "lru", "ref_lru,arc"}) {
    INFO(policies);
    const auto [status, out] = run_cache_sim(std::string("--check-lru --sizes=10 --policies=") + policies +
                                             " loop:length=100");
    CHECK(status == 2);
    CHECK_THAT(out, Catch::StartsWith("cache_sim: --check-lru compares lru with ref_lru: give both in --policies "
                                      "(the policies for 'loop:length=100' are "));
  }
  const auto [status, out] = run_cache_sim("--check-lru --sizes=10 --policies=lru,ref_lru loop:length=100");
  CHECK(status == 0);
  CHECK_THAT(out, Catch::EndsWith("lru == ref_lru on every trace and size\n"));
  // After the last trace it applies to the whole run too (it compared nothing).
  const auto [after_status, after] = run_cache_sim("--sizes=10 --policies=lru loop:length=100 --check-lru");
  CHECK(after_status == 2);
  CHECK_THAT(after, Catch::StartsWith("cache_sim: --check-lru compares lru with ref_lru"));
}
#endif

TEST_CASE("sim: a text key is never the same key as a number, whatever its hash", "[cache][sim]") {
  // 16654208175385433931 is the 64-bit FNV-1a hash of "abc": keys once
  // hashed text into the numbers' space, so these two lines were one key.
  const std::string mixed = "abc\n16654208175385433931\nabc\n7\n007\n";
  const trace plain = sim::read_trace(sim::trace_format::plain, write_file("mixed.txt", mixed));
  CHECK(plain.keys == std::vector<std::uint32_t>{0, 1, 0, 2, 2});  // 007 is the number 7
  CHECK(plain.distinct == 3);
  const trace csv = sim::read_trace(sim::trace_format::csv, write_file("mixed.csv", "x,abc\nx,16654208175385433931\n"),
                                    {.csv_column = 2});
  CHECK(csv.keys == std::vector<std::uint32_t>{0, 1});
}

TEST_CASE("sim: a zip archive named .gz is refused (gzip would read its first member only)", "[cache][sim]") {
  const std::string zip = write_file("two.gz", std::string("PK\x03\x04\x14\x00\x00\x00", 8) + "rest of the archive");
  CHECK(error_of(sim::trace_format::plain, zip) ==
        zip + ": a zip archive, not gzip data (gzip would read its first member only; unzip it and give the member)");
}

TEST_CASE("sim: CR line ends, NUL bytes and UTF-16 are refused in text traces, not read as other keys", "[cache][sim]") {
  const std::string cr = write_file("cr.txt", "A\rB\rA\r");
  CHECK(error_of(sim::trace_format::plain, cr) ==
        cr + ":1: a carriage return inside the line (lines end with LF or CRLF; a file with CR line ends must be "
             "converted first)");
  const std::string cr_csv = write_file("cr.csv", "1,A\r2,B\r");
  CHECK(error_of(sim::trace_format::csv, cr_csv, {.csv_column = 2}).starts_with(cr_csv + ":1: a carriage return"));
  const std::string nul = write_file("nul.txt", std::string("1\n2\0\n", 5));
  CHECK(error_of(sim::trace_format::plain, nul) ==
        nul + ":2: a NUL byte in the line (UTF-16 text or binary data? keys are read as ASCII or UTF-8 text)");
  const std::string utf16 = write_file("u16.txt", std::string("\xFF\xFE" "1\0\n\0", 6));
  CHECK(error_of(sim::trace_format::plain, utf16) ==
        utf16 + ":1: UTF-16 text (keys are read as ASCII or UTF-8: convert it, e.g. with iconv -f UTF-16 -t UTF-8)");
  // CRLF is still a line end.
  CHECK(sim::read_trace(sim::trace_format::plain, write_file("crlf.txt", "A\r\nB\r\nA\r\n")).keys ==
        std::vector<std::uint32_t>{0, 1, 0});
}

TEST_CASE("sim: a csv error quotes the line as read, with the delimiter that made the field empty", "[cache][sim]") {
  const std::string tab = write_file("tab.csv", "\t5\n");
  CHECK(error_of(sim::trace_format::csv, tab, {.csv_column = 1, .csv_delimiter = '\t'}) ==
        tab + ":1: empty field 1 in '\t5'");
}

TEST_CASE("sim: lines ending in CR alone are refused in every text format", "[cache][sim]") {
  // Read as one line, an arc file kept its first record and dropped the rest.
  const std::string arc = write_file("cr.arc", "0 2 0 0\r5 3 0 0\r0 2 0 0\r");
  CHECK(error_of(sim::trace_format::arc, arc).starts_with(arc + ":1: a carriage return inside the line"));
  const std::string lirs = write_file("cr.lirs", "1\r2\r");
  CHECK(error_of(sim::trace_format::lirs, lirs).starts_with(lirs + ":1: a carriage return inside the line"));
  // A CR before a Windows line end is one too many: it was trimmed as a space.
  const std::string plain = write_file("crcr.txt", "1\r\r\n2\n");
  CHECK(error_of(sim::trace_format::plain, plain).starts_with(plain + ":1: a carriage return inside the line"));
}

TEST_CASE("sim: longs refuses compressed data and text lines instead of reading them as keys", "[cache][sim]") {
  // Sizes a multiple of 8: every byte would have made a key.
  const std::string gz = write_file("g.longs", std::string("\x1f\x8b\x08\0\0\0\0\0", 8));
  CHECK(error_of(sim::trace_format::longs, gz) ==
        gz + ": byte 0: gzip-compressed data (a name ending in .gz is read through gzip -dc)");
  const std::string zst = write_file("z.longs", std::string("\x28\xB5\x2F\xFD\0\0\0\0", 8));
  CHECK(error_of(sim::trace_format::longs, zst) == zst + ": byte 0: zstd-compressed data (decompress it first)");
  const std::string text = write_file("t.longs", "1234567\n7654321\n");
  CHECK(error_of(sim::trace_format::longs, text) ==
        text + ": byte 0: text lines, not 8-byte binary keys (a key per line is read with plain: or lirs:)");
  // Printable bytes without a line break are keys: "ABCDEFGH" twice is one key twice.
  CHECK(sim::read_trace(sim::trace_format::longs, write_file("p.longs", "ABCDEFGHABCDEFGH")).keys ==
        std::vector<std::uint32_t>{0, 0});
  // More than the 64 bytes looked at first: the records after them follow on.
  std::string many;
  for (int k = 0; k < 12; ++k) many += std::string(7, '\0') + static_cast<char>(k % 5);
  const trace t = sim::read_trace(sim::trace_format::longs, write_file("m.longs", many));
  CHECK(t.keys == std::vector<std::uint32_t>{0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1});
  const std::string cut = write_file("m9.longs", many + "x");
  CHECK(error_of(sim::trace_format::longs, cut) == cut + ": truncated record at byte 96 (1 of 8 bytes)");
}

TEST_CASE("sim: a csv quote left open is an error whichever column is the key", "[cache][sim]") {
  // A reader of whole records (libcsv) would join these lines into one.
  const std::string q = write_file("open.csv", "1,\"note\n2,x\"\n3,y\n");
  CHECK(error_of(sim::trace_format::csv, q, {.csv_column = 1}) == q + ":1: no closing '\"' in '1,\"note'");
  CHECK(error_of(sim::trace_format::csv, q, {.csv_column = 2}) == q + ":1: no closing '\"' in '1,\"note'");
  const std::string after = write_file("after.csv", "1,\"a\"b\n");
  CHECK(error_of(sim::trace_format::csv, after, {.csv_column = 1}) == after + ":1: text after a closing '\"' in '1,\"a\"b'");
  // Well-formed quoted fields after the key still read.
  CHECK(sim::read_trace(sim::trace_format::csv, write_file("ok.csv", "1,\"a,b\",\"c\"\"d\"\n2,x,y\n"), {.csv_column = 1}).keys ==
        std::vector<std::uint32_t>{0, 1});
}

TEST_CASE("sim: an arc count out of range is named with its value", "[cache][sim]") {
  const std::string zero = write_file("zero.arc", "7 0 0 0\n");
  CHECK(error_of(sim::trace_format::arc, zero) == zero + ":1: a count of 0 blocks (count 1..1000000): '7 0 0 0'");
  const std::string big = write_file("big.arc", "7 4000000000 0 0\n");
  CHECK(error_of(sim::trace_format::arc, big) ==
        big + ":1: a count of 4000000000 blocks (count 1..1000000): '7 4000000000 0 0'");
}

TEST_CASE("sim: a long file of CR line ends is named as such, and so is a csv header line", "[cache][sim]") {
  std::string many;
  for (int i = 0; i < 2000; ++i) many += std::to_string(i) + "\r";  // 8,890 bytes
  const std::string big = write_file("cr_big.lirs", many);  // over 4096 bytes, one "line"
  CHECK(error_of(sim::trace_format::lirs, big) ==
        big + ":1: line longer than 4096 bytes (it holds carriage returns: a file with CR line ends must be converted "
              "first)");
  // The header line was skipped unread: the whole CR file was eaten as it.
  const std::string csv = write_file("cr_header.csv", "id,key\r1,A\r2,B\r");
  CHECK(error_of(sim::trace_format::csv, csv, {.csv_column = 2, .csv_header = true})
            .starts_with(csv + ":1: a carriage return inside the line"));
}

TEST_CASE("sim: longs takes a gzip magic without deflate's method byte, or a UTF-16 mark, as keys", "[cache][sim]") {
  // 1F 8B 00 ... and FF FE ...: 64-bit keys that only start like those (for
  // random keys 3 in 65,536 would have been refused on two bytes).
  std::string bytes = std::string("\x1f\x8b\x00\x00\x00\x00\x00\x01", 8) + std::string("\xff\xfe\x00\x00\x00\x00\x00\x02", 8);
  CHECK(sim::read_trace(sim::trace_format::longs, write_file("magicish.longs", bytes)).keys ==
        std::vector<std::uint32_t>{0, 1});
}
