// Names are user data: escape_text for every text output, the one JSON writer
// for any byte string, and the folded rows and table state every report shows.
#include <catch2/catch.hpp>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "json_writer.hpp"
#include "sample_entries.hpp"
#include "text_escape.hpp"

using namespace report_test;
using arenastat::detail::escape_text;
using Catch::Matchers::Contains;

TEST_CASE("escape_text leaves printable ASCII and UTF-8 alone", "[names]") {
  CHECK(escape_text("compile/Foo::bar") == "compile/Foo::bar");
  CHECK(escape_text("caf\xc3\xa9/\xe6\x97\xa5\xf0\x9f\x98\x80") == "caf\xc3\xa9/\xe6\x97\xa5\xf0\x9f\x98\x80");
}

TEST_CASE("escape_text writes control characters and DEL as \\xHH", "[names]") {
  CHECK(escape_text(std::string("a\nb\tc\rd\x1b[2Je\x7f", 13) + std::string(1, '\0')) ==
        "a\\x0ab\\x09c\\x0dd\\x1b[2Je\\x7f\\x00");
}

TEST_CASE("escape_text doubles a backslash so that escapes cannot be forged", "[names]") {
  CHECK(escape_text("a\\x0ab") == "a\\\\x0ab");
}

TEST_CASE("escape_text writes each byte outside well-formed UTF-8 as \\xHH", "[names]") {
  CHECK(escape_text("\xff") == "\\xff");
  CHECK(escape_text("\xc3") == "\\xc3");                      // truncated
  CHECK(escape_text("\xc0\xaf") == "\\xc0\\xaf");              // overlong
  CHECK(escape_text("\xed\xa0\x80") == "\\xed\\xa0\\x80");     // surrogate
  CHECK(escape_text("\xf4\x90\x80\x80") == "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
}

TEST_CASE("escape_text escapes C1 controls, line separators and bidi overrides", "[names]") {
  CHECK(escape_text("\xc2\x9b" "31m") == "\\xc2\\x9b31m");         // CSI
  CHECK(escape_text("a\xe2\x80\xa8" "b") == "a\\xe2\\x80\\xa8b");   // U+2028
  CHECK(escape_text("\xe2\x80\xae" "cba") == "\\xe2\\x80\\xaecba");  // U+202E
  CHECK(escape_text("\xe2\x81\xa6" "x") == "\\xe2\\x81\\xa6x");     // U+2066
}

TEST_CASE("escape_text escapes the marks and characters that print as nothing", "[names]") {
  CHECK(escape_text("a\xe2\x80\x8b" "b") == "a\\xe2\\x80\\x8bb");  // U+200B zero width space
  CHECK(escape_text("\xe2\x80\x8e" "x") == "\\xe2\\x80\\x8ex");    // U+200E left-to-right mark
  CHECK(escape_text("\xe2\x80\x8f" "x") == "\\xe2\\x80\\x8fx");    // U+200F right-to-left mark
  CHECK(escape_text("\xd8\x9c" "x") == "\\xd8\\x9cx");                // U+061C Arabic letter mark
  CHECK(escape_text("\xe2\x81\xa0" "x") == "\\xe2\\x81\\xa0x");    // U+2060 word joiner
  CHECK(escape_text("\xe2\x81\xa4" "x") == "\\xe2\\x81\\xa4x");    // U+2064, the last invisible operator
  CHECK(escape_text("\xef\xbb\xbf" "5") == "\\xef\\xbb\\xbf5");    // U+FEFF byte order mark
  CHECK(escape_text("a\xc2\xad" "b") == "a\\xc2\\xadb");                  // U+00AD soft hyphen
  CHECK(escape_text("\xcd\x8f" "x") == "\\xcd\\x8fx");                    // U+034F combining grapheme joiner
  CHECK(escape_text("\xe1\x85\x9f" "x") == "\\xe1\\x85\\x9fx");        // U+115F Hangul choseong filler
  CHECK(escape_text("\xe3\x85\xa4" "x") == "\\xe3\\x85\\xa4x");        // U+3164 Hangul filler
  CHECK(escape_text("\xef\xbe\xa0" "x") == "\\xef\\xbe\\xa0x");        // U+FFA0 halfwidth Hangul filler
  CHECK(escape_text("\xe1\xa0\x8e" "x") == "\\xe1\\xa0\\x8ex");        // U+180E Mongolian vowel separator
  CHECK(escape_text("\xef\xbf\xbb" "x") == "\\xef\\xbf\\xbbx");        // U+FFFB, the last annotation control
  CHECK(escape_text("\xf3\xa0\x80\x81" "x") == "\\xf3\\xa0\\x80\\x81x");  // U+E0001 language tag
  CHECK(escape_text("\xf3\xa0\x81\xbf" "x") == "\\xf3\\xa0\\x81\\xbfx");  // U+E007F, the last tag character
}

TEST_CASE("escape_text keeps joiners, the no-break space and neighbours of the escaped ranges", "[names]") {
  const std::string kept[] = {
      "\xe2\x80\x8c",      // U+200C zero width non-joiner (Persian, Indic scripts)
      "\xe2\x80\x8d",      // U+200D zero width joiner (emoji sequences)
      "\xc2\xa0",          // U+00A0 no-break space (it prints as a space)
      "\xe2\x80\x8a",      // U+200A hair space, before U+200B
      "\xe2\x81\xa5",      // U+2065, unassigned, between the two ranges
      "\xef\xbb\xbe",      // U+FEFE, before U+FEFF
      "\xd8\x9b",          // U+061B Arabic semicolon, before U+061C
      "\xf0\x9f\x98\x80",  // U+1F600, a four-byte sequence
      "\xf3\xa0\x82\x80",  // U+E0080, after the tag characters
      "\xef\xbf\xbc",      // U+FFFC object replacement character, after U+FFFB (it prints)
      "\xc2\xac",          // U+00AC, before U+00AD
  };
  for (const std::string& s : kept) CHECK(escape_text(s) == s);
}

TEST_CASE("the JSON writer is compact and escapes what JSON requires", "[names][json]") {
  std::string out;
  arenastat::detail::json_writer w(out);
  w.begin_object();
  w.field("s", std::string_view("q\"b\\n\nc\x01\x7f\xc2\x85\xe2\x80\xa8", 14));
  w.field("bad", "x\xff" "y");
  w.field("i", std::int64_t{-3}).field("u", std::uint64_t{18446744073709551615u});
  w.field("d", 0.5).field("whole", 2.0).field("tiny", 2.464e-06);
  w.key("a").begin_array().value(true).null().end_array();
  w.end_object();
  CHECK(out ==
        "{\"s\":\"q\\\"b\\\\n\\nc\\u0001\\u007f\\u0085\\u2028\",\"bad\":\"x\xef\xbf\xbd" "ffy\","
        "\"i\":-3,\"u\":18446744073709551615,\"d\":0.5,\"whole\":2.0,\"tiny\":2.464e-06,\"a\":[true,null]}");
  CHECK_NOTHROW(nlohmann::json::parse(out));
}

// What JSON text one byte, alone among ASCII letters, is written as (JSON's
// rules and the writer's marking of bytes outside UTF-8, spelled out here).
static std::string expected_json_of_byte(unsigned b) {
  constexpr char hex[] = "0123456789abcdef";
  switch (b) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\n': return "\\n";
    case '\t': return "\\t";
    case '\r': return "\\r";
    case '\b': return "\\b";
    case '\f': return "\\f";
    default: break;
  }
  if (b < 0x20 || b == 0x7f) return std::string("\\u00") + hex[b >> 4] + hex[b & 15];
  if (b >= 0x80) return std::string("\xef\xbf\xbd") + hex[b >> 4] + hex[b & 15];  // no UTF-8 sequence: U+FFFD + hex
  return std::string(1, static_cast<char>(b));
}

TEST_CASE("the JSON writer writes each byte value exactly, at any position of a name", "[names][json]") {
  // Every byte value at every position of a 20-byte name of letters: the
  // plain prefix, the byte and the plain rest (the writer's fast path takes
  // whole plain strings; the others go through the escaping loop).
  for (unsigned b = 0; b < 256; ++b) {
    for (std::size_t at = 0; at < 20; ++at) {
      std::string name(20, 'a');
      name[at] = static_cast<char>(b);
      std::string out;
      arenastat::detail::append_json_string(out, name);
      std::string expected = "\"";
      expected.append(at, 'a');
      expected += expected_json_of_byte(b);
      expected.append(19 - at, 'a');
      expected += '"';
      INFO("byte " << b << " at " << at);
      CHECK(out == expected);
    }
  }
}

TEST_CASE("the JSON writer copies well-formed UTF-8 and doubles a literal U+FFFD", "[names][json]") {
  std::string out;
  arenastat::detail::append_json_string(out, "a\xc3\xa9\xe2\x82\xac");  // a, U+00E9, U+20AC: as they are
  CHECK(out == "\"a\xc3\xa9\xe2\x82\xac\"");
  out.clear();
  arenastat::detail::append_json_string(out, "a\xef\xbf\xbd");  // raw names have no U+FFFD: marked, doubled
  CHECK(out == "\"a\xef\xbf\xbd\xef\xbf\xbd\"");
  out.clear();
  arenastat::detail::append_json_string(out, "a\xef\xbf\xbd\xff");
  CHECK(out == "\"a\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" "ff\"");
  out.clear();
  arenastat::detail::append_json_string(out, "");
  CHECK(out == "\"\"");
}

TEST_CASE("unmark_utf8 gives back the bytes of a marked name", "[names][json]") {
  using arenastat::detail::unmark_utf8;
  const std::string r = "\xef\xbf\xbd";  // U+FFFD
  CHECK(unmark_utf8("plain/name") == "plain/name");
  CHECK(unmark_utf8("bad" + r + "ff") == "bad\xff");
  CHECK(unmark_utf8("real" + r + r) == "real" + r);
  CHECK(unmark_utf8(r + "00" + r + r + r + "c3") == std::string("\0", 1) + r + "\xc3");
  // Not a marking (no two lowercase hex digits, or cut short): copied as it is.
  CHECK(unmark_utf8("x" + r + "FF") == "x" + r + "FF");
  CHECK(unmark_utf8("x" + r + "f") == "x" + r + "f");
  CHECK(unmark_utf8("x" + r) == "x" + r);
}

TEST_CASE("a name read back from the JSON writer and unmarked is the name, for every byte value", "[names][json]") {
  // What the CLI's top does with the stats --json answer: decode the JSON string, unmark it.
  for (int b = 0; b < 256; ++b) {
    // Built with append: GCC 12 warns (-Wstringop-overflow) about "literal" + std::string.
    const std::string byte(1, static_cast<char>(b));
    for (const std::string& name : {byte, std::string("a").append(byte).append("z"), std::string("\xef\xbf\xbd").append(byte)}) {
      std::string out;
      arenastat::detail::append_json_string(out, name);
      const std::string decoded = nlohmann::json::parse(out).get<std::string>();
      INFO(b);
      CHECK(arenastat::detail::unmark_utf8(decoded) == name);
    }
  }
}

TEST_CASE("the JSON writer writes non-finite numbers as null", "[names][json]") {
  std::string out;
  arenastat::detail::json_writer w(out);
  w.begin_array().value(1.0 / 0.0).end_array();
  CHECK(out == "[null]");
}

TEST_CASE("text and tree reports escape names and counter names", "[names][render]") {
  std::vector<arenastat::entry> v{make_scope("evil\nScopes (0):\x1b[2J", 10, {}, 1, 0, "ok", 1)};
  v[0].counters = {{"n\tx", 1}};
  const auto text = arenastat::render_report(v, sample_process(), arenastat::parse_report_options(""));
  CHECK_THAT(text, Contains("  n\\x09x=1      1  0.000  ok           1  evil\\x0aScopes (0):\\x1b[2J\n"));
  CHECK_THAT(text, !Contains("\x1b"));
  const auto tree = arenastat::render_report(v, sample_process(), arenastat::parse_report_options("--tree"));
  CHECK_THAT(tree, Contains("  evil\\x0aScopes (0):\\x1b[2J\n"));
}

TEST_CASE("the JSON report is valid for any byte string", "[names][json]") {
  std::vector<arenastat::entry> v{make_scope(std::string("a\0\xff\n\"", 5), 10, {}, 1, 0, "ok", 1)};
  const auto j = nlohmann::json::parse(
      arenastat::render_report(v, sample_process(), arenastat::parse_report_options("--json")));
  CHECK(j["entries"][0]["name"] == std::string("a\0\xef\xbf\xbd" "ff\n\"", 9));
}

TEST_CASE("JSON keeps names distinct that differ only in bytes outside UTF-8", "[names][json]") {
  // An invalid byte is U+FFFD and its two hex digits; a literal U+FFFD in such
  // a name is written twice; a well-formed name (U+FFFD-free) is unchanged.
  std::vector<arenastat::entry> v{make_scope("bad\xff", 10, {}, 1, 0, "ok", 1),
                                  make_scope("bad\xfe", 10, {}, 1, 0, "ok", 1),
                                  make_scope("bad\xef\xbf\xbd" "ff", 10, {}, 1, 0, "ok", 1),
                                  make_scope("caf\xc3\xa9 \xef\xbf\xbd", 10, {}, 1, 0, "ok", 1)};
  const auto j = nlohmann::json::parse(
      arenastat::render_report(v, sample_process(), arenastat::parse_report_options("--json")));
  std::vector<std::string> names;
  for (const auto& e : j["entries"]) names.push_back(e["name"]);
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"bad\xef\xbf\xbd" "fe", "bad\xef\xbf\xbd" "ff",
                                          "bad\xef\xbf\xbd\xef\xbf\xbd" "ff", "caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd"});
}

namespace {

arenastat::entry folded_row(std::string name, std::uint64_t entries, std::uint64_t runs, std::uint64_t sum,
                            std::uint64_t max) {
  arenastat::entry e;
  e.name = std::move(name);
  e.kind = arenastat::entry_kind::folded;
  e.folded_entries = entries;
  e.count = runs;
  e.peak_sum_bytes = sum;
  e.peak_bytes = max;
  return e;
}

std::vector<arenastat::entry> with_folded() {
  auto v = sample();
  v.push_back(folded_row("request/", 1200, 5000, 1048576, 4096));
  v.push_back(folded_row("(other)", 3, 3, 30, 10));
  return v;
}

arenastat::table_status capped() {
  arenastat::table_status t;
  t.max = 10000;
  t.scope_entries = 3;
  t.folded_rows = 2;
  t.folded_entries = 1203;
  t.lost_folds = 2;
  return t;
}

}  // namespace

TEST_CASE("a text report lists the folded rows and the lost runs after the totals", "[render][cap]") {
  const auto text =
      arenastat::render_report(with_folded(), sample_process(), arenastat::parse_report_options(""), capped());
  CHECK(from(text, "Total:") ==
        "Total: 5 entries shown; scope peaks sum to 4500; account peaks sum to 4196, live 2048\n"
        "\n"
        "Folded: 1203 scope entries past the table cap of 10000 (ARENASTAT_TABLE_MAX), by name prefix:\n"
        "entries  runs  peak sum  peak max  name\n"
        "   1200  5000   1048576      4096  request/\n"
        "      3     3        30        10  (other)\n"
        "(2 scope runs lost: out of memory while folding into the table)\n");
  // Folded rows are not entries to choose from: the sections count only scopes and accounts.
  CHECK_THAT(text, Contains("Scopes (3):\n"));
}

TEST_CASE("a tree report lists the folded rows too", "[render][cap]") {
  const auto tree = arenastat::render_report(with_folded(), sample_process(),
                                             arenastat::parse_report_options("--tree -H"), capped());
  CHECK_THAT(tree, Contains("   1200  5000      1.0M      4.0K  request/\n"));
}

TEST_CASE("a JSON report carries the table state and the folded rows", "[render][cap][json]") {
  const auto j = nlohmann::json::parse(arenastat::render_report(
      with_folded(), sample_process(), arenastat::parse_report_options("--json --top=1"), capped()));
  CHECK(j["table"] == nlohmann::json::parse(R"({"max":10000,"scope_entries":3,"account_entries":2,)"
                                            R"("folded_entries":1203,"lost_folds":2})"));
  REQUIRE(j["entries"].size() == 1);
  REQUIRE(j["folded"].size() == 2);
  CHECK(j["folded"][0] == nlohmann::json::parse(R"({"name":"request/","kind":"folded","peak_bytes":4096,)"
                                                R"("at_peak":{},"folded_entries":1200,"count":5000,)"
                                                R"("peak_sum_bytes":1048576,"time_s":0.0,"oom_count":0,"err_count":0})"));
}

TEST_CASE("a report with nothing folded and nothing lost says nothing about the table", "[render][cap]") {
  const auto text = render("");
  CHECK_THAT(text, !Contains("Folded"));
  CHECK_THAT(text, !Contains("lost"));
}

TEST_CASE("figures_of: count is runs for a scope, allocations for an account", "[render]") {
  const auto v = sample();
  const auto scope = arenastat::figures_of(v[1]);
  CHECK(scope.count == 2);
  CHECK(scope.blocks == 0);
  CHECK(scope.live == 0);
  const auto lru = arenastat::figures_of(v[4]);
  CHECK(lru.count == 10);
  CHECK(lru.blocks == 5);
  CHECK(lru.live == 2048);
  CHECK(lru.peak == 4096);
}
