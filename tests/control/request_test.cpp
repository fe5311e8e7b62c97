// The control socket's request grammar and line framing (control_request.hpp).
#include <catch2/catch.hpp>

#include <string>

#include "control_request.hpp"

using namespace arenastat::wire;

TEST_CASE("every command word parses to its command", "[control][request]") {
  for (const command_info& c : commands()) {
    const parse_result r = parse_request(std::string(c.name));
    REQUIRE(r.value);
    CHECK(r.value->cmd == c.cmd);
    CHECK(r.value->arguments.empty());
  }
  CHECK(commands().size() == 9);
}

TEST_CASE("options after the command are kept trimmed", "[control][request]") {
  const parse_result r = parse_request("  stats\t -s=10m   --json  \r");
  REQUIRE(r.value);
  CHECK(r.value->cmd == command::stats);
  CHECK(r.value->arguments == "-s=10m   --json");
}

TEST_CASE("an echoed command or argument is escaped: C1 controls, bidi overrides and invalid UTF-8 as \\xNN",
          "[control][request]") {
  // U+009B (CSI as C1: c2 9b), U+202E (right-to-left override: e2 80 ae), a lone 0xff, a backslash.
  const parse_result word = parse_request("\xc2\x9b" "31mX\\");
  CHECK_FALSE(word.value);
  CHECK(word.error == "unknown command '\\xc2\\x9b31mX\\\\' (try 'help')");
  const parse_result argument = parse_request("info \xe2\x80\xae\xff");
  CHECK_FALSE(argument.value);
  CHECK(argument.error == "command 'info' takes no arguments, got '\\xe2\\x80\\xae\\xff'");
  // Cut at 64 bytes inside a two-byte character: the half left is escaped, never sent raw.
  std::string split(63, 'a');
  split += "\xc3\xa9";  // built by +=: GCC 12 warns (-Warray-bounds) about string(n, c) + "literal"
  const parse_result cut = parse_request(split);
  CHECK(cut.error == "unknown command '" + std::string(63, 'a') + "\\xc3' (try 'help')");
}

TEST_CASE("an unknown command is named in the error", "[control][request]") {
  const parse_result r = parse_request("stat --json");
  CHECK_FALSE(r.value);
  CHECK(r.error == "unknown command 'stat' (try 'help')");
}

TEST_CASE("a command without arguments refuses them", "[control][request]") {
  const parse_result r = parse_request("reset now");
  CHECK_FALSE(r.value);
  CHECK(r.error == "command 'reset' takes no arguments, got 'now'");
}

TEST_CASE("an empty or blank line is an error", "[control][request]") {
  CHECK(parse_request("").error == "empty request: expected a command (try 'help')");
  CHECK(parse_request(" \t ").error == "empty request: expected a command (try 'help')");
}

TEST_CASE("control bytes are rejected with their offset", "[control][request]") {
  const parse_result r = parse_request(std::string("stats \x01", 7));
  CHECK_FALSE(r.value);
  CHECK(r.error == "request contains control byte 0x01 at offset 6");
  CHECK(parse_request(std::string("help\0", 5)).error == "request contains control byte 0x00 at offset 4");
}

TEST_CASE("UTF-8 bytes are allowed in arguments (dump paths)", "[control][request]") {
  const parse_result r = parse_request("dump /tmp/caf\xc3\xa9.txt");
  REQUIRE(r.value);
  CHECK(r.value->arguments == "/tmp/caf\xc3\xa9.txt");
}

TEST_CASE("a line of max_request_bytes or more is refused by the parser", "[control][request]") {
  const std::string ok_line = "stats " + std::string(max_request_bytes - 7, 'x');  // 4095 bytes
  CHECK(parse_request(ok_line).value);
  const std::string too_long = ok_line + "x";
  CHECK(parse_request(too_long).error == "request longer than 4095 bytes");
}

TEST_CASE("the reader completes a line fed in pieces", "[control][request]") {
  request_reader r;
  CHECK(r.feed("sta") == request_reader::state::incomplete);
  CHECK(r.feed("ts --js") == request_reader::state::incomplete);
  CHECK(r.feed("on\nignored after the newline") == request_reader::state::complete);
  CHECK(r.line() == "stats --json");
  CHECK(r.feed("more") == request_reader::state::complete);
  CHECK(r.line() == "stats --json");
}

TEST_CASE("the reader accepts exactly max_request_bytes including the newline", "[control][request]") {
  request_reader r;
  const std::string line(max_request_bytes - 1, 'a');
  CHECK(r.feed(line) == request_reader::state::incomplete);
  CHECK(r.feed("\n") == request_reader::state::complete);
  CHECK(r.line().size() == max_request_bytes - 1);
}

TEST_CASE("the reader stops at max_request_bytes without a newline", "[control][request]") {
  request_reader r;
  CHECK(r.feed(std::string(max_request_bytes - 1, 'a')) == request_reader::state::incomplete);
  CHECK(r.feed("a") == request_reader::state::too_long);
  CHECK(r.feed("\n") == request_reader::state::too_long);
  CHECK(r.line().empty());
  CHECK(r.bytes_seen() == max_request_bytes);
}

TEST_CASE("single_line replaces control characters", "[control][request]") {
  CHECK(single_line("a\nb\rc\x7f") == "a b c ");
}

TEST_CASE("single_line cuts a long message with a mark, between UTF-8 sequences", "[control][request]") {
  // 4096 bytes fit whole; one more and the message is 4093 bytes and "...".
  CHECK(single_line(std::string(4096, 'a')) == std::string(4096, 'a'));
  CHECK(single_line(std::string(4097, 'a')) == std::string(4093, 'a') + "...");
  // A 3-byte sequence (U+20AC) at bytes 4092-4094 would be cut after its
  // first byte: it goes whole, and the message is 4092 bytes and "...".
  const std::string euro = "\xe2\x82\xac";
  CHECK(single_line(std::string(4092, 'a') + euro + std::string(2000, 'b')) == std::string(4092, 'a') + "...");
  // Ending exactly before the cut, it stays.
  CHECK(single_line(std::string(4090, 'a') + euro + std::string(2000, 'b')) == std::string(4090, 'a') + euro + "...");
}

TEST_CASE("requests whose answer walks the table are the ones the server answers one per turn",
          "[control][request]") {
  // Copies or walks every entry: stats (the report), diff and baseline (a
  // snapshot), dump (the summary), metrics (the exposition).
  for (const char* line : {"stats", "stats --json --top=3", "diff", "baseline", "dump", "dump /tmp/x.txt", "metrics",
                           "metrics --openmetrics", "  stats  \r"})
    CHECK(walks_table(line));
  // Constant or small work, and lines answered with one error line.
  for (const char* line : {"help", "info", "reset", "process", "process --json", "", "nonsense", "info extra",
                           "stats\x01"})
    CHECK_FALSE(walks_table(line));
}
