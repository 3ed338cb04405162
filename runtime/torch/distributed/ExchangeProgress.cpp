#include "ExchangeProgress.h"

#include <c10/util/StringUtil.h>

namespace torch_maia::distributed {

ExchangeProgress::ExchangeProgress(c10::intrusive_ptr<c10d::Store> store, std::string prefix,
                                   int rank, std::vector<int> group_ranks)
    : store_(std::move(store)),
      prefix_(std::move(prefix)),
      rank_(rank),
      group_ranks_(std::move(group_ranks)) {}

void ExchangeProgress::reached(uint64_t count) {
  const std::string value = std::to_string(count);
  try {
    store_->set(key(rank_), std::vector<uint8_t>(value.begin(), value.end()));
  } catch (const std::exception&) {
    // Only the failure message loses its detail; the exchange goes on.
  }
}

std::string ExchangeProgress::absent(uint64_t count) const {
  std::vector<std::string> ranks, lasts;
  try {
    for (int peer = 0; peer < static_cast<int>(group_ranks_.size()); ++peer) {
      if (peer == rank_) continue;
      uint64_t last = 0;
      // check() does not wait: a rank that never reached any exchange has no key.
      if (store_->check({key(peer)})) {
        std::vector<uint8_t> bytes = store_->get(key(peer));
        last = std::stoull(std::string(bytes.begin(), bytes.end()));
      }
      if (last >= count) continue;
      ranks.push_back(std::to_string(group_ranks_[peer]));
      lasts.push_back(std::to_string(last));
    }
  } catch (const std::exception&) {
    return {};
  }
  if (ranks.empty()) return {};
  return c10::str("rank(s) ", c10::Join(", ", ranks),
                  " never reached this collective (Gloo exchange ", count,
                  " of the group; they reached ", c10::Join(", ", lasts), ")");
}

}  // namespace torch_maia::distributed
