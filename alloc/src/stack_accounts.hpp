// Which resource of a stack already charges an account: two layers of one
// stack charging the same account would count every byte of the lower one
// twice in it (an arena with account "x" over a tracking_resource "x", or
// tracking over tracking). The resources refuse that when they are built
// (stacks of different accounts are fine: each shows what it holds).
#pragma once
#include <memory_resource>
#include <string>
#include <string_view>

namespace arenastat::detail {

// The first resource from `upstream` down that charges the account named
// `name`, described for a message ("tracking_resource 'x'"), or "" when none
// does. Follows the upstreams of tracking_resource, test_resource and
// arena_resource, and of the standard library's layers that name theirs
// (std::pmr::synchronized_pool_resource, unsynchronized_pool_resource and
// monotonic_buffer_resource); any other resource ends the walk.
std::string charger_below(const std::pmr::memory_resource* upstream, std::string_view name);

// Throws std::invalid_argument "<who>: its upstream <charger> already charges
// account '<name>': ..." when charger_below finds one.
void refuse_double_charge(std::string_view who, const std::pmr::memory_resource* upstream, std::string_view name);

}  // namespace arenastat::detail
