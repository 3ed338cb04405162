// channel_shuffle on maia (nn.ChannelShuffle, ShuffleNet): the channels
// viewed as (groups, C / groups), transposed and made contiguous, which is
// one device copy; the checks are ATen's.
#include <torch/library.h>

#include "ops/HostRouting.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

Tensor channelShuffle(const Tensor& self, c10::SymInt groups_sym) {
  const int64_t groups = groups_sym.guard_int(__FILE__, __LINE__);
  TORCH_CHECK(self.dim() > 2, "channel_shuffle expects input to have at least 3 dimensions, "
              "but got input with sizes ", self.sizes());
  TORCH_CHECK(groups > 0, "Number of groups to divide channels in must be positive.",
              " Value of groups:", groups);
  const int64_t channels = self.size(1);
  TORCH_CHECK(channels % groups == 0, "Number of channels must be divisible by groups. Got ",
              channels, " channels and ", groups, " groups.");
  if (self.numel() == 0) return self.clone();
  return self.reshape({self.size(0), groups, channels / groups, -1})
      .transpose(1, 2)
      .contiguous()
      .reshape(self.sizes());
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("channel_shuffle", TORCH_FN(channelShuffle));
  m.impl("native_channel_shuffle", [](const Tensor& self, c10::SymInt groups) {
    return channelShuffle(self, std::move(groups));
  });
}

}  // namespace
}  // namespace torch_maia::ops
