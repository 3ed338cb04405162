// monitored_barrier of a maia process group: a host-side barrier in which
// rank 0 names the ranks that did not arrive in time.
//
// Through the group's store rather than its Gloo group: the Gloo transport
// issues its collectives from the communication stream's driver core, and a
// host thread issuing Gloo operations concurrently could take Gloo's tags in
// another order on each rank. Each rank publishes its arrival; rank 0 waits
// for every arrival within the timeout and publishes its verdict ("ok", or
// which ranks were late), which the other ranks wait for.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <string>

namespace torch_maia::distributed {

struct MonitoredBarrierArgs {
  /// Names the barrier in errors: "monitored_barrier (number 1) of process group '0'".
  std::string label;
  /// Keys of this barrier live under it (unique per barrier of the group).
  std::string key_prefix;
  int rank = 0;
  int size = 1;
  /// How long rank 0 waits for the other ranks' arrivals.
  std::chrono::milliseconds timeout{0};
  /// How long the other ranks wait for rank 0's verdict (rank 0 itself may
  /// arrive late: the group's timeout, as Gloo's monitored barrier waits).
  std::chrono::milliseconds verdict_timeout{0};
  /// Rank 0 waits the whole timeout and names every late rank, instead of
  /// failing at the first one (in rank order).
  bool wait_all_ranks = false;
  /// Keys of the previous barrier of the group, which rank 0 removes once
  /// every rank has arrived at this one (so every rank has read them).
  std::string previous_key_prefix;
};

/// Blocks the host until every rank of the group has arrived; raises
/// DistBackendError naming the late ranks on every rank that arrived (rank 0
/// after the timeout, the others on rank 0's verdict).
void monitoredBarrier(c10d::Store& store, const MonitoredBarrierArgs& args);

}  // namespace torch_maia::distributed
