// render_report, tree format: sizes, shares of parent and root, order, (self).
#include <catch2/catch.hpp>

#include "sample_entries.hpp"

using namespace report_test;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;

namespace {
std::string tree_of(std::vector<arenastat::entry> v, const std::string& options = "--tree") {
  return arenastat::render_report(v, sample_process(), arenastat::parse_report_options(options));
}
}  // namespace

TEST_CASE("tree: scopes and accounts form two trees with shares of parent and root", "[tree]") {
  const std::string text = render("--tree");
  CHECK_THAT(text, StartsWith("arenastat report (tree)\n"));
  const std::string expected =
      "scopes tree (3 entries):\n"
      "size  parent    root  name\n"
      "4500  100.0%  100.0%  scopes\n"
      "4000   88.9%   88.9%    compile\n"
      "3000   75.0%   66.7%      Foo::bar\n"
      "1000   25.0%   22.2%      Baz::qux\n"
      " 500   11.1%   11.1%    parse\n"
      " 500  100.0%   11.1%      main\n"
      "\n"
      "accounts tree (2 entries):\n"
      "size  parent    root  name\n"
      "4196  100.0%  100.0%  accounts\n"
      "4196  100.0%  100.0%    cache\n"
      "4096   97.6%   97.6%      lru\n"
      " 100    2.4%    2.4%      index\n"
      "\n"
      "Total: 5 entries shown; scope peaks sum to 4500; account peaks sum to 4196, live 2048\n";
  CHECK(from(text, "scopes tree") == expected);
}

TEST_CASE("tree: the process lines come before the trees", "[tree]") {
  const std::string text = render("--tree -H");
  CHECK_THAT(text, Contains("Process: pid 4242  VmRSS 1.0M  VmHWM 2.0M  RssAnon 512K\n\n"
                            "scopes tree"));
  CHECK_THAT(text, Contains("4.4K  100.0%  100.0%  scopes\n"));
}

TEST_CASE("tree: a name that is also a prefix gets a (self) child", "[tree]") {
  using report_test::make_scope;
  const std::string text = tree_of({make_scope("a", 100, {}, 1, 0, "ok", 1),
                                    make_scope("a/b", 300, {}, 1, 0, "ok", 1),
                                    make_scope("a/c", 50, {}, 1, 0, "ok", 1)});
  CHECK_THAT(text, Contains("scopes tree (3 entries):\n"
                            "size  parent    root  name\n"
                            " 450  100.0%  100.0%  scopes\n"
                            " 450  100.0%  100.0%    a\n"
                            " 300   66.7%   66.7%      b\n"
                            " 100   22.2%   22.2%      (self)\n"
                            "  50   11.1%   11.1%      c\n"));
}

TEST_CASE("tree: entries with the same name after splitting add up", "[tree]") {
  using report_test::make_scope;
  // "x//y" and "/x/y" both name the node x -> y: empty parts add no level.
  const std::string text = tree_of({make_scope("x//y", 30, {}, 1, 0, "ok", 1),
                                    make_scope("/x/y", 10, {}, 1, 0, "ok", 1)});
  CHECK_THAT(text, Contains("  40  100.0%  100.0%  scopes\n"
                            "  40  100.0%  100.0%    x\n"
                            "  40  100.0%  100.0%      y\n"));
}

TEST_CASE("tree: a root of size zero prints no percentages", "[tree]") {
  using report_test::make_scope;
  const std::string text = tree_of({make_scope("z", 0, {}, 1, 0, "ok", 1)});
  CHECK_THAT(text, Contains("size  parent  root  name\n"
                            "   0       -     -  scopes\n"
                            "   0       -     -    z\n"));
}

TEST_CASE("tree: -s and --top apply before the tree is built", "[tree]") {
  const std::string text = render("--tree -s=1000 --top=2");
  CHECK_THAT(text, Contains("scopes tree (1 entry):\n"
                            "size  parent    root  name\n"
                            "3000  100.0%  100.0%  scopes\n"
                            "3000  100.0%  100.0%    compile\n"
                            "3000  100.0%  100.0%      Foo::bar\n"));
  CHECK_THAT(text, Contains("(2 entries smaller than 1000 omitted)\n"
                            "(1 entry beyond --top=2 omitted)\n"));
}
