// How far each rank of a Gloo group got, so that a failed Gloo exchange can
// say which peers never came.
//
// Gloo's errors name a time, not a peer ("Timed out waiting 1500ms for send
// operation to complete"). Each rank therefore records in the group's store,
// when its stream reaches a collective exchange, how many it has reached;
// after a failure, a rank compares the others' counts with its own. The
// record is a store set (about 2 us, no reply awaited) on the driver core
// that runs the exchange; the comparison runs only after a failure.
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace torch_maia::distributed {

class ExchangeProgress {
 public:
  /// rank: this process's index in the Gloo group; group_ranks: the group's
  /// members' ranks in the process group (for messages); keys under prefix.
  ExchangeProgress(c10::intrusive_ptr<c10d::Store> store, std::string prefix, int rank,
                   std::vector<int> group_ranks);

  /// This rank's stream reached its count-th collective exchange.
  void reached(uint64_t count);
  /// After exchange count failed: "rank(s) 1, 3 never reached this
  /// collective (Gloo exchange 5 of the group; they reached 4, 4)", or ""
  /// if every rank did (or the store cannot tell: its server may be the
  /// rank that died).
  std::string absent(uint64_t count) const;

 private:
  std::string key(int rank) const { return prefix_ + std::to_string(rank); }

  c10::intrusive_ptr<c10d::Store> store_;
  std::string prefix_;
  int rank_;
  std::vector<int> group_ranks_;
};

}  // namespace torch_maia::distributed
