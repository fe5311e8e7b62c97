// args.hpp: option errors shared by the benchmark programs: one message
// naming what was wrong (escaped: it quotes what the user typed), the usage,
// and exit status 2. Programs including it add stats/core/src to their
// include path (bench/CMakeLists.txt) for the one text escaper.
#pragma once
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <system_error>

#include "text_escape.hpp"

namespace arenastat::bench {

[[noreturn]] inline void usage_error(std::string_view program, std::string_view usage, const std::string& msg) {
  std::fprintf(stderr, "%.*s: %s\nusage: %.*s\n", static_cast<int>(program.size()), program.data(),
               detail::escape_text(msg).c_str(),
               static_cast<int>(usage.size()), usage.data());
  std::exit(2);
}

// The integer `text` given for option `opt`, in min..max; anything else is a usage error.
inline std::uint64_t parse_count(std::string_view program, std::string_view usage, std::string_view opt,
                                 std::string_view text, std::uint64_t min, std::uint64_t max) {
  std::uint64_t v = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc{} || p != text.data() + text.size() || v < min || v > max)
    usage_error(program, usage,
                "bad value for " + std::string(opt) + ": '" + std::string(text) + "' (expected an integer in " +
                    std::to_string(min) + ".." + std::to_string(max) + ")");
  return v;
}

}  // namespace arenastat::bench
