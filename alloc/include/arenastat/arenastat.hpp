// arenastat: where a program's memory goes, per component, per task, at the peak.
// The one header to include (arenastat::arenastat). It sits in alloc/, the
// library's top room, and includes every room below: stats/core, alloc,
// stats/report and stats/control. Latency measurement (histogram.hpp,
// pause_meter.hpp) is arenastat::measure, included on its own.
#pragma once
// The core: contexts, the table, resources.
#include "arenastat/account.hpp"
#include "arenastat/arena_resource.hpp"
#include "arenastat/context.hpp"
#include "arenastat/grow_hook.hpp"
#include "arenastat/leaks.hpp"
#include "arenastat/scope.hpp"
#include "arenastat/table.hpp"
#include "arenastat/tags.hpp"
#include "arenastat/test_resource.hpp"
#include "arenastat/tracking_resource.hpp"
// Declarations only (no <jemalloc/jemalloc.h>); using it needs arenastat::jemalloc.
#include "arenastat/jemalloc_resource.hpp"
// Reading it: reports, live queries, dumps.
#include "arenastat/control.hpp"
#include "arenastat/diff.hpp"
#include "arenastat/dump.hpp"
#include "arenastat/report.hpp"
#include "arenastat/size.hpp"
