// arenastat: where a program's memory goes, per component, per task, at the peak.
// The one header to include.
#pragma once
#include "arenastat/account.hpp"
#include "arenastat/arena_resource.hpp"
#include "arenastat/context.hpp"
#include "arenastat/grow_hook.hpp"
// Declarations only (no <jemalloc/jemalloc.h>); using it needs arenastat::jemalloc.
#include "arenastat/jemalloc_resource.hpp"
#include "arenastat/report.hpp"
#include "arenastat/scope.hpp"
#include "arenastat/size.hpp"
#include "arenastat/table.hpp"
#include "arenastat/tags.hpp"
#include "arenastat/tracking_resource.hpp"
