#include "MonitoredBarrier.h"

#include <c10/util/Exception.h>
#include <c10/util/StringUtil.h>

#include <vector>

namespace torch_maia::distributed {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kOk[] = "ok";
constexpr char kFailed[] = "failed: ";

std::string arrivedKey(const std::string& prefix, int rank) {
  return prefix + "arrived/" + std::to_string(rank);
}

std::string verdictKey(const std::string& prefix) { return prefix + "verdict"; }

/// Whether key is in store within timeout (checked once if the timeout is
/// spent: a store wait of 0 ms would wait forever).
bool waitForKey(c10d::Store& store, const std::string& key, std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) return store.check({key});
  try {
    store.wait({key}, timeout);
    return true;
  } catch (const c10::DistStoreError&) {
    return store.check({key});
  }
}

std::string joinRanks(const std::vector<int>& ranks) {
  std::string text;
  for (int r : ranks) text += (text.empty() ? "" : ", ") + std::to_string(r);
  return text;
}

/// Rank 0: the ranks that did not arrive within args.timeout (the first in
/// rank order only, unless wait_all_ranks).
std::vector<int> lateRanks(c10d::Store& store, const MonitoredBarrierArgs& args) {
  const auto start = Clock::now();
  auto remaining = [&] {
    return args.timeout -
           std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
  };
  std::vector<int> late;
  for (int r = 1; r < args.size; ++r) {
    // With wait_all_ranks, the ranks after a late one are still given the
    // rest of the timeout: the first wait used it up.
    if (waitForKey(store, arrivedKey(args.key_prefix, r), remaining())) continue;
    late.push_back(r);
    if (!args.wait_all_ranks) break;
  }
  return late;
}

}  // namespace

void monitoredBarrier(c10d::Store& store, const MonitoredBarrierArgs& args) {
  if (args.size < 2) return;
  const std::string verdict = verdictKey(args.key_prefix);
  if (args.rank != 0) {
    store.set(arrivedKey(args.key_prefix, args.rank), std::vector<uint8_t>{1});
    if (!waitForKey(store, verdict, args.verdict_timeout))
      C10_THROW_ERROR(DistBackendError,
                      c10::str("maia c10d: ", args.label, " failed on rank ", args.rank, " of ",
                               args.size, ": rank 0, which checks the barrier, gave no verdict "
                               "within ", args.verdict_timeout.count(), " ms"));
    std::vector<uint8_t> bytes = store.get(verdict);
    std::string text(bytes.begin(), bytes.end());
    if (text == kOk) return;
    C10_THROW_ERROR(DistBackendError,
                    c10::str("maia c10d: ", args.label, " failed on rank ", args.rank, " of ",
                             args.size, ": rank 0 reports: ", text.substr(sizeof(kFailed) - 1)));
  }
  std::vector<int> late = lateRanks(store, args);
  if (!late.empty()) {
    std::string report = c10::str(late.size() == 1 ? "rank " : "ranks ", joinRanks(late),
                                  " did not reach it within ",
                                  args.timeout.count(), " ms");
    std::string text = kFailed + report;
    store.set(verdict, std::vector<uint8_t>(text.begin(), text.end()));
    C10_THROW_ERROR(DistBackendError,
                    c10::str("maia c10d: ", args.label, " failed on rank 0 of ", args.size, ": ",
                             report));
  }
  store.set(verdict, std::vector<uint8_t>(kOk, kOk + sizeof(kOk) - 1));
  // Every rank has arrived here, so every rank has read the previous verdict.
  for (int r = 1; r < args.size; ++r) store.deleteKey(arrivedKey(args.key_prefix, r));
  if (!args.previous_key_prefix.empty()) store.deleteKey(verdictKey(args.previous_key_prefix));
}

}  // namespace torch_maia::distributed
