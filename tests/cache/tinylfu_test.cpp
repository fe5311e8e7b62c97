// W-TinyLFU: the documented behaviour on small hand-traced sequences.
// Capacity 4: window 1 entry, main 3, protected at most 2 (80% of 3).
#include <catch2/catch.hpp>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "arenastat/cache/cache.hpp"
#include "cache_test_support.hpp"
#include "../../bench/zipf.hpp"

using namespace arenastat;
using u64 = std::uint64_t;
using keys = std::vector<u64>;
using cache_t = tinylfu_cache<u64, u64>;

namespace {

keys segment(const cache_t& c, tinylfu_segment s) {
  keys out;
  c.policy().for_each(s, [&](std::uint32_t i) { out.push_back(c.key_at(i)); });
  return out;
}
// A cached key's count is in its entry; any other key's in the sketch.
std::uint32_t freq(const cache_t& c, u64 k) {
  std::uint32_t found = detail::nil_index;
  for (auto s : {tinylfu_segment::window, tinylfu_segment::probation, tinylfu_segment::protected_})
    c.policy().for_each(s, [&](std::uint32_t i) {
      if (c.key_at(i) == k) found = i;
    });
  return found != detail::nil_index ? c.policy().entry_frequency(found) : c.policy().frequency(c.hash_key(k).h32());
}

}  // namespace

TEST_CASE("tinylfu: segment sizes follow the capacity", "[cache][tinylfu]") {
  cache_t small{"test.tlfu.sizes4", {.max_entries = 4}};
  CHECK(small.policy().window_max() == 1);
  CHECK(small.policy().protected_max() == 2);
  cache_t big{"test.tlfu.sizes1000", {.max_entries = 1000}};
  CHECK(big.policy().window_max() == 10);
  CHECK(big.policy().protected_max() == 792);
}

TEST_CASE("tinylfu: new keys enter the window, its overflow goes to probation", "[cache][tinylfu]") {
  cache_t c{"test.tlfu.window", {.max_entries = 4}};
  for (u64 k = 1; k <= 4; ++k) c.put(k, k);
  CHECK(segment(c, tinylfu_segment::window) == keys{4});
  CHECK(segment(c, tinylfu_segment::probation) == keys{3, 2, 1});
  CHECK(segment(c, tinylfu_segment::protected_).empty());
}

TEST_CASE("tinylfu: a probation hit promotes, protected overflow demotes its back", "[cache][tinylfu]") {
  cache_t c{"test.tlfu.promote", {.max_entries = 4}};
  for (u64 k = 1; k <= 4; ++k) c.put(k, k);
  c.get(1);
  c.get(2);
  CHECK(segment(c, tinylfu_segment::protected_) == keys{2, 1});
  CHECK(segment(c, tinylfu_segment::probation) == keys{3});
  c.get(3);  // protected would hold 3: its back (1) goes to the front of probation
  CHECK(segment(c, tinylfu_segment::protected_) == keys{3, 2});
  CHECK(segment(c, tinylfu_segment::probation) == keys{1});
  c.get(4);  // a window hit stays in the window (its reference bit set)
  CHECK(segment(c, tinylfu_segment::window) == keys{4});
}

TEST_CASE("tinylfu: the window is a CLOCK: a hit entry gets its second chance at the back", "[cache][tinylfu]") {
  cache_t c{"test.tlfu.window-clock", {.max_entries = 300}};  // window of 3
  REQUIRE(c.policy().window_max() == 3);
  for (u64 k = 1; k <= 3; ++k) c.put(k, k);
  REQUIRE(segment(c, tinylfu_segment::window) == keys{3, 2, 1});
  c.get(2);
  c.get(1);
  CHECK(segment(c, tinylfu_segment::window) == keys{3, 2, 1});  // a hit moves nothing
  c.put(4, 4);  // 1, then 2 go to the front (bits cleared); 3 leaves for probation
  CHECK(segment(c, tinylfu_segment::window) == keys{4, 2, 1});
  CHECK(segment(c, tinylfu_segment::probation) == keys{3});
  c.put(5, 5);  // 1 is the back, its bit cleared: it leaves (an LRU window would keep it)
  CHECK(segment(c, tinylfu_segment::window) == keys{5, 4, 2});
  CHECK(segment(c, tinylfu_segment::probation) == keys{1, 3});
}

TEST_CASE("tinylfu: the candidate is admitted only when strictly more frequent", "[cache][tinylfu]") {
  cache_t c{"test.tlfu.duel", {.max_entries = 4}};
  for (u64 k = 1; k <= 4; ++k) c.put(k, k);
  c.get(1);
  c.get(1);
  c.get(2);
  REQUIRE(freq(c, 1) == 3);
  REQUIRE(freq(c, 2) == 2);
  REQUIRE(freq(c, 3) == 1);
  REQUIRE(freq(c, 4) == 1);
  // Full: candidate 4 (freq 1) against victim 3 (freq 1): a tie keeps the victim.
  c.put(5, 5);
  CHECK_FALSE(c.contains(4));
  CHECK(c.contains(3));
  CHECK(segment(c, tinylfu_segment::window) == keys{5});
  // Candidate 5 (freq 3) against victim 3 (freq 1): 5 enters probation, 3 goes.
  c.get(5);
  c.get(5);
  REQUIRE(freq(c, 5) == 3);
  c.put(6, 6);
  CHECK_FALSE(c.contains(3));
  CHECK(segment(c, tinylfu_segment::probation) == keys{5});
  CHECK(segment(c, tinylfu_segment::window) == keys{6});
  CHECK(c.stats().evictions == 2);
}

TEST_CASE("tinylfu: a scan of one-time keys does not flush frequent keys (LRU does)", "[cache][tinylfu]") {
  cache_t c{"test.tlfu.scan", {.max_entries = 4}};
  lru_cache<u64, u64> l{"test.tlfu.scan.lru", {.max_entries = 4}};
  for (u64 k = 1; k <= 4; ++k) {
    c.put(k, k);
    l.put(k, k);
  }
  for (int round = 0; round < 3; ++round) {
    for (u64 k = 1; k <= 3; ++k) {
      c.get(k);
      l.get(k);
    }
  }
  for (u64 k = 100; k < 130; ++k) {
    c.put(k, k);
    l.put(k, k);
  }
  for (u64 k = 1; k <= 3; ++k) {
    CHECK(c.contains(k));
    CHECK_FALSE(l.contains(k));
  }
  CHECK(c.contains(129));  // the last scanned key sits in the window
  CHECK(c.size() == 4);
}

namespace {
// Capacity 20: window 1. Key k is read m(k) times while it is the window's
// only entry (window hits do not promote), so probation holds 1..19 from the
// back with frequencies 1 + m(k), and 20 is the window's entry (the candidate).
template <class M>
void fill_twenty(cache_t& c, M reads) {
  for (u64 k = 1; k <= 20; ++k) {
    c.put(k, k);
    for (int m = 0; m < reads(k); ++m) c.get(k);
  }
}
}  // namespace

TEST_CASE("tinylfu: the duel is against probation's back, the victim the least frequent of its 8", "[cache][tinylfu]") {
  cache_t c{"test.tlfu.sample", {.max_entries = 20}};
  fill_twenty(c, [](u64 k) -> int { return k == 1 ? 1 : k == 4 ? 0 : 3; });
  REQUIRE(segment(c, tinylfu_segment::window) == keys{20});
  REQUIRE(segment(c, tinylfu_segment::probation).back() == 1);
  REQUIRE(freq(c, 1) == 2);
  REQUIRE(freq(c, 4) == 1);
  REQUIRE(freq(c, 20) == 4);
  // Candidate 20 (4) beats the back, key 1 (2), by more than the margin of 1:
  // the sample's least frequent, key 4 (1), leaves.
  c.put(21, 21);
  CHECK_FALSE(c.contains(4));
  CHECK(c.contains(1));
  CHECK(c.contains(20));
  CHECK(segment(c, tinylfu_segment::probation).front() == 20);
}

TEST_CASE("tinylfu: a candidate one count above probation's back loses (the admission margin)", "[cache][tinylfu]") {
  // The candidate's count is the sketch's estimate (collisions raise it), the
  // back's its own exact count: one count more is not enough.
  cache_t c{"test.tlfu.margin", {.max_entries = 20}};
  static_assert(std::remove_cvref_t<decltype(c.policy())>::admission_margin == 1);
  fill_twenty(c, [](u64 k) -> int { return k == 1 ? 1 : k == 4 ? 0 : k == 20 ? 2 : 3; });
  REQUIRE(segment(c, tinylfu_segment::probation).back() == 1);
  REQUIRE(freq(c, 1) == 2);
  REQUIRE(freq(c, 20) == 3);
  const keys probation = segment(c, tinylfu_segment::probation);
  c.put(21, 21);  // candidate 20 (3) against the back, key 1 (2): 3 is not above 2 + 1
  CHECK_FALSE(c.contains(20));
  CHECK(c.contains(4));
  CHECK(segment(c, tinylfu_segment::probation) == probation);
  CHECK(segment(c, tinylfu_segment::window) == keys{21});
}

TEST_CASE("tinylfu: a candidate not above probation's back loses even to a sample with a rarer entry",
          "[cache][tinylfu]") {
  // The same, with the back (key 1) at 4 and the candidate at 3: comparing
  // with the sample's least (key 4, 2) would admit 20 and evict 4; comparing
  // with the back rejects 20. The back is what the main segment would lose
  // next in LRU order, so on a loop (every key as frequent as the others) a
  // candidate no longer wins because one of 8 noisy counts happened to be low.
  cache_t c{"test.tlfu.back", {.max_entries = 20}};
  fill_twenty(c, [](u64 k) -> int { return k == 4 ? 1 : k == 20 ? 2 : 3; });
  REQUIRE(freq(c, 1) == 4);
  REQUIRE(freq(c, 4) == 2);
  REQUIRE(freq(c, 20) == 3);
  const keys probation = segment(c, tinylfu_segment::probation);
  c.put(21, 21);
  CHECK_FALSE(c.contains(20));
  CHECK(c.contains(4));
  CHECK(segment(c, tinylfu_segment::probation) == probation);
  CHECK(segment(c, tinylfu_segment::window) == keys{21});
}

TEST_CASE("tinylfu: a hit counts in the entry, the sketch keeps the count of the key before it", "[cache][tinylfu]") {
  cache_t c{"test.tlfu.entry-count", {.max_entries = 4}};
  c.put(9, 9);  // the table (and so the sketch) exists from the first insertion
  c.get(1);  // a miss: the sketch counts 1
  c.put(1, 1);  // the insertion counts 2, the entry starts from the sketch
  for (int i = 0; i < 3; ++i) c.get(1);
  CHECK(freq(c, 1) == 5);
  CHECK(c.policy().frequency(c.hash_key(1).h32()) == 2);  // hits wrote nothing to the table
  CHECK(c.policy().sketch().additions() == 6);
}

TEST_CASE("tinylfu: a leaving entry hands its count back to the sketch", "[cache][tinylfu]") {
  cache_t c{"test.tlfu.hand-back", {.max_entries = 4}};
  c.put(1, 1);
  for (int i = 0; i < 5; ++i) c.get(1);
  REQUIRE(freq(c, 1) == 6);
  REQUIRE(c.erase(1));
  CHECK(c.policy().frequency(c.hash_key(1).h32()) == 6);
  c.put(1, 1);  // back in: the entry starts from the sketch (6) plus this insertion
  CHECK(freq(c, 1) == 7);
}

TEST_CASE("tinylfu: the sketch halves its counters every 20 x capacity increments", "[cache][tinylfu]") {
  cache_t c{"test.tlfu.halve", {.max_entries = 4}};  // sample size 80
  c.put(1, 1);
  for (int i = 0; i < 13; ++i) c.get(1);
  REQUIRE(freq(c, 1) == 14);
  REQUIRE(c.policy().sketch().additions() == 14);
  // 66 more recorded increments of other keys reach 80: every counter halves,
  // the entries' counts too.
  for (u64 k = 1000; k < 1066; ++k) c.get(k);
  CHECK(freq(c, 1) == 7);
  CHECK(c.policy().sketch().additions() == 40);
}

TEST_CASE("tinylfu: the sample floor and the skipped hand-backs change no decision", "[cache][tinylfu]") {
  // The same skewed run of reads, writes and erasures (with sketch halvings:
  // 20 x 500 increments each) on a cache with the remembered sample floor and
  // the skipped hand-back of still counts, and one without either: after every
  // operation both report the same value, hits and evictions, and every 997
  // operations both hold the same keys in the same segments and their
  // sketches give every key of the key space the same estimate (a skipped
  // hand-back would have changed no counter).
  using plain_t = basic_cache<u64, u64, basic_tinylfu<1, 20, true, 8, false, false>>;
  cache_t with{"test.tlfu.floor.with", {.max_entries = 500}};
  plain_t without{"test.tlfu.floor.without", {.max_entries = 500}};
  const bench::zipf_params zp(5000, 0.9);
  bench::zipf_generator gen(zp, 7);
  bench::splitmix64 op(11);
  const auto load = [](u64 k) { return k + 1; };
  for (int n = 0; n < 200'000; ++n) {
    const u64 k = gen.next();
    const u64 r = op.next() % 100;
    if (r < 90) {
      REQUIRE(with.get_or_load(k, load) == without.get_or_load(k, load));
    } else if (r < 98) {
      with.put(k, k);
      without.put(k, k);
    } else {
      REQUIRE(with.erase(k) == without.erase(k));
    }
    REQUIRE(with.stats().evictions == without.stats().evictions);
    REQUIRE(with.stats().hits == without.stats().hits);
    if (n % 997 == 0) {
      for (auto s : {tinylfu_segment::window, tinylfu_segment::probation, tinylfu_segment::protected_}) {
        keys a, b;
        with.policy().for_each(s, [&](std::uint32_t i) { a.push_back(with.key_at(i)); });
        without.policy().for_each(s, [&](std::uint32_t i) { b.push_back(without.key_at(i)); });
        REQUIRE(a == b);
      }
      for (u64 key = 0; key <= 5000; ++key) {
        const std::uint32_t h = with.hash_key(key).h32();
        REQUIRE(with.policy().frequency(h) == without.policy().frequency(h));
      }
    }
  }
  CHECK(with.policy().sketch().halvings() > 10);
  CHECK(with.policy().floor_decisions() > 10'000);  // the floor did decide
  CHECK(with.policy().hand_backs_skipped() > 10'000);  // and hand-backs were skipped
  CHECK(without.policy().hand_backs_skipped() == 0);
}

TEST_CASE("tinylfu: a halving halves the counts of entries on every page", "[cache][tinylfu]") {
  cache_t c{"test.tlfu.halve-pages", {.max_entries = 10'000}};  // 3 pages of entries, sample size 200,000
  for (u64 k = 0; k < 10'000; ++k) c.put(k, k);
  // One key on the third page (entries 8192 on) and one on the second
  // (4096 to 8191) that came in with a count of 1: a key whose sketch
  // counters an earlier key shares comes in with more.
  const auto first_counted_once = [&](u64 from, u64 to) {
    for (u64 k = from; k < to; ++k)
      if (freq(c, k) == 1) return k;
    FAIL("no key of " << from << ".." << to << " came in with a count of 1");
    return to;
  };
  const u64 third = first_counted_once(8'192, 10'000), second = first_counted_once(4'096, 8'192);
  for (int i = 0; i < 9; ++i) c.get(third);
  for (int i = 0; i < 5; ++i) c.get(second);
  REQUIRE(freq(c, third) == 10);
  REQUIRE(freq(c, second) == 6);
  REQUIRE(c.policy().sketch().halvings() == 0);
  for (u64 k = 1'000'000; c.policy().sketch().halvings() == 0 && k < 2'000'000; ++k) c.get(k);  // misses
  REQUIRE(c.policy().sketch().halvings() == 1);
  CHECK(freq(c, third) == 5);
  CHECK(freq(c, second) == 3);
  CHECK(c.size() == 10'000);
}
