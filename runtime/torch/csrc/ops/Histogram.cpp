// histogram and histogramdd on maia. ATen's own operator functions run for
// maia (checks, bin edges by linspace, output shapes, density) and reach the
// device through the PrivateUse1 entries of ATen's histogram dispatch
// stubs: the NN binary's histogramdd kernel counts
// (runtime/kernels/nn/histogram.h), and the outer edges of an unranged
// histogram are a device aminmax. histc keeps its own path (Bucketing.cpp).
#include <ATen/native/DispatchStub.h>
#include <ATen/native/Histogram.h>
#include <ATen/ops/aminmax.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/histogram_native.h>
#include <ATen/ops/_histogramdd_bin_edges_native.h>
#include <ATen/ops/_histogramdd_from_bin_cts_native.h>
#include <ATen/ops/_histogramdd_from_bin_tensors_native.h>
#include <ATen/ops/zeros.h>
#include <torch/library.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"
#include "ops/OpUtils.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;
using OptionalTensor = std::optional<Tensor>;
using Range = std::optional<c10::ArrayRef<double>>;

/// The kernel's bin searches (BinSearch in histogram.h).
enum class BinSearch : int64_t { Linear = 0, LinearLocal = 1, Binary = 2 };

/// Fills hist (shaped by ATen: one dimension per input column) with the
/// counts, or weight sums, of the input's points, normalized to a density
/// by the CPU's formula when asked.
void histogramddOnDevice(const Tensor& self, const OptionalTensor& weight, bool density,
                         Tensor& hist, const at::TensorList& bin_edges, BinSearch search) {
  TORCH_CHECK(at::isFloatingType(self.scalar_type()), "torch.histogramdd: input of dtype ",
              self.scalar_type(), " is not supported (floating-point dtypes only)");
  const int64_t dims = self.size(-1);
  if (dims == 0) return;  // hist is empty
  const int64_t points = self.numel() / dims;
  std::vector<Tensor> edges;
  std::vector<int64_t> edge_offsets{0};
  for (const Tensor& e : bin_edges) {
    edges.push_back(e.reshape({-1}));
    edge_offsets.push_back(edge_offsets.back() + e.numel());
  }
  const int64_t bins = hist.numel();
  const int64_t programs =
      std::min<int64_t>(programsFor(points, points * dims), std::max(deviceCores(), 1));
  Tensor partial = at::zeros({programs, bins}, hist.options().dtype(at::kDouble));
  if (points > 0 && bins > 0) {
    const Tensor input = self.reshape({points, dims});
    const Tensor weights = weight.has_value() ? weight->reshape({points}) : input.select(1, 0);
    const Tensor offsets = int64Tensor(edge_offsets, self.device());
    const Tensor all_edges = at::cat(edges);
    launchNn("histogramdd", self.scalar_type(),
             {memrefOf(partial), memrefOf(input), memrefOf(weights), memrefOf(all_edges),
              memrefOf(offsets), intArg(weight.has_value()), intArg(static_cast<int64_t>(search))},
             programs, self.device());
  }
  hist.copy_(partial.sum(0).view(hist.sizes()));
  if (!density) return;
  hist.div_(hist.sum());
  for (int64_t d = 0; d < dims; ++d) {
    std::vector<int64_t> shape(dims, 1);
    shape[d] = bin_edges[d].numel() - 1;
    hist.div_(bin_edges[d].diff().reshape(shape));
  }
}

void binarySearchHistogram(const Tensor& self, const OptionalTensor& weight, bool density,
                           Tensor& hist, const at::TensorList& bin_edges) {
  histogramddOnDevice(self, weight, density, hist, bin_edges, BinSearch::Binary);
}

void linearHistogram(const Tensor& self, const OptionalTensor& weight, bool density, Tensor& hist,
                     const at::TensorList& bin_edges, bool local_search) {
  histogramddOnDevice(self, weight, density, hist, bin_edges,
                      local_search ? BinSearch::LinearLocal : BinSearch::Linear);
}

/// The data's extremes per column of an (M, N) input: the default outer
/// edges (one device reduction and one read, as the CPU's).
void outerBinEdges(const Tensor& input, const int64_t columns, std::vector<double>& leftmost,
                   std::vector<double>& rightmost) {
  TORCH_CHECK(input.scalar_type() == at::kFloat || input.scalar_type() == at::kDouble,
              "torch.histogramdd: inferring bin edges of dtype ", input.scalar_type(),
              " is not supported (float32 and float64, as on the CPU)");
  auto [low, high] = at::aminmax(input, 0);
  const Tensor low_host = low.to(at::kCPU, at::kDouble), high_host = high.to(at::kCPU, at::kDouble);
  std::copy_n(low_host.const_data_ptr<double>(), columns, leftmost.begin());
  std::copy_n(high_host.const_data_ptr<double>(), columns, rightmost.begin());
}

}  // namespace
}  // namespace torch_maia::ops

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(histogramdd_stub, &torch_maia::ops::binarySearchHistogram)
REGISTER_PRIVATEUSE1_DISPATCH(histogramdd_linear_stub, &torch_maia::ops::linearHistogram)
REGISTER_PRIVATEUSE1_DISPATCH(histogram_select_outer_bin_edges_stub,
                              &torch_maia::ops::outerBinEdges)
}  // namespace at::native

namespace torch_maia::ops {
MAIA_NATIVE_KERNELS(m) {
  m.impl("histogram.bins_tensor",
         [](const Tensor& self, const Tensor& bins, const OptionalTensor& weight, bool density) {
           return at::native::histogram(self, bins, weight, density);
         });
  m.impl("histogram.bins_tensor_out",
         [](const Tensor& self, const Tensor& bins, const OptionalTensor& weight, bool density,
            Tensor& hist, Tensor& bin_edges) {
           return at::native::histogram_out(self, bins, weight, density, hist, bin_edges);
         });
  m.impl("histogram.bin_ct", [](const Tensor& self, int64_t bins, Range range,
                                const OptionalTensor& weight, bool density) {
    return at::native::histogram(self, bins, range, weight, density);
  });
  m.impl("histogram.bin_ct_out", [](const Tensor& self, int64_t bins, Range range,
                                    const OptionalTensor& weight, bool density, Tensor& hist,
                                    Tensor& bin_edges) {
    return at::native::histogram_out(self, bins, range, weight, density, hist, bin_edges);
  });
  m.impl("_histogramdd_bin_edges", [](const Tensor& self, c10::IntArrayRef bins, Range range,
                                      const OptionalTensor& weight, bool density) {
    return at::native::histogramdd_bin_edges(self, bins, range, weight, density);
  });
  m.impl("_histogramdd_from_bin_cts", [](const Tensor& self, c10::IntArrayRef bins, Range range,
                                         const OptionalTensor& weight, bool density) {
    return at::native::_histogramdd(self, bins, range, weight, density);
  });
  m.impl("_histogramdd_from_bin_tensors", [](const Tensor& self, at::TensorList bins,
                                             const OptionalTensor& weight, bool density) {
    return at::native::_histogramdd(self, bins, weight, density);
  });
}
}  // namespace torch_maia::ops
