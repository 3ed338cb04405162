// The LSTM and GRU cells ATen calls for accelerator tensors: nn.LSTM and
// nn.GRU route PrivateUse1 inputs to _thnn_fused_lstm_cell /
// _thnn_fused_gru_cell (CUDA's kernels; the CPU has none), and the host
// fallback cannot run them. Here each cell is composed from maia
// operators (a handful of elementwise kernels per step, not one fused
// kernel), with CUDA's workspace layout and backward formulas so
// autograd's derivatives for these ops apply unchanged:
//   LSTM workspace [i f g o], the gates after their activations;
//   GRU workspace [r z n hx hn], hn the hidden n-gate with its bias.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <optional>
#include <tuple>

#include "ops/HostRouting.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

bool defined(const std::optional<Tensor>& t) {
  return t.has_value() && t->defined();
}

Tensor withBias(const Tensor& gates, const std::optional<Tensor>& bias) {
  return defined(bias) ? gates + *bias : gates;
}

void checkBiases(const char* op, const std::optional<Tensor>& input_bias,
                 const std::optional<Tensor>& hidden_bias) {
  TORCH_CHECK(defined(input_bias) == defined(hidden_bias), op,
              ": input_bias and hidden_bias must both be given or both be absent");
}

std::tuple<Tensor, Tensor, Tensor> lstmCell(const Tensor& input_gates,
                                            const Tensor& hidden_gates, const Tensor& cx,
                                            const std::optional<Tensor>& input_bias,
                                            const std::optional<Tensor>& hidden_bias) {
  checkBiases("_thnn_fused_lstm_cell", input_bias, hidden_bias);
  TORCH_CHECK(input_gates.sizes() == hidden_gates.sizes() && input_gates.dim() == 2 &&
                  input_gates.size(1) == 4 * cx.size(-1),
              "_thnn_fused_lstm_cell: expected gates of shape [batch, 4 * ", cx.size(-1),
              "], got ", input_gates.sizes(), " and ", hidden_gates.sizes());
  Tensor gates = withBias(input_gates, input_bias) + withBias(hidden_gates, hidden_bias);
  auto chunks = gates.chunk(4, 1);
  Tensor i = chunks[0].sigmoid(), f = chunks[1].sigmoid(), g = chunks[2].tanh(),
         o = chunks[3].sigmoid();
  Tensor cy = f * cx + i * g;
  Tensor hy = o * cy.tanh();
  return {hy, cy, at::cat({i, f, g, o}, 1)};
}

std::tuple<Tensor, Tensor, Tensor> lstmCellBackward(const std::optional<Tensor>& grad_hy,
                                                    const std::optional<Tensor>& grad_cy,
                                                    const Tensor& cx, const Tensor& cy,
                                                    const Tensor& workspace, bool has_bias) {
  if (!defined(grad_hy) && !defined(grad_cy)) return {Tensor(), Tensor(), Tensor()};
  auto chunks = workspace.chunk(4, 1);
  const Tensor &i = chunks[0], &f = chunks[1], &g = chunks[2], &o = chunks[3];
  Tensor tanh_cy = cy.tanh();
  Tensor gcx = defined(grad_cy) ? grad_cy->clone() : at::zeros_like(cy);
  Tensor go = at::zeros_like(o);
  if (defined(grad_hy)) {
    gcx = gcx + *grad_hy * o * (1 - tanh_cy * tanh_cy);
    go = *grad_hy * tanh_cy * o * (1 - o);
  }
  Tensor gi = gcx * g * i * (1 - i);
  Tensor gf = gcx * cx * f * (1 - f);
  Tensor gg = gcx * i * (1 - g * g);
  Tensor grad_gates = at::cat({gi, gf, gg, go}, 1);
  Tensor grad_bias = has_bias ? grad_gates.sum(0) : Tensor();
  return {grad_gates, gcx * f, grad_bias};
}

std::tuple<Tensor, Tensor> gruCell(const Tensor& input_gates, const Tensor& hidden_gates,
                                   const Tensor& hx, const std::optional<Tensor>& input_bias,
                                   const std::optional<Tensor>& hidden_bias) {
  checkBiases("_thnn_fused_gru_cell", input_bias, hidden_bias);
  TORCH_CHECK(input_gates.sizes() == hidden_gates.sizes() && input_gates.dim() == 2 &&
                  input_gates.size(1) == 3 * hx.size(-1),
              "_thnn_fused_gru_cell: expected gates of shape [batch, 3 * ", hx.size(-1),
              "], got ", input_gates.sizes(), " and ", hidden_gates.sizes());
  auto in = withBias(input_gates, input_bias).chunk(3, 1);
  auto hidden = withBias(hidden_gates, hidden_bias).chunk(3, 1);
  Tensor r = (in[0] + hidden[0]).sigmoid();
  Tensor z = (in[1] + hidden[1]).sigmoid();
  Tensor n = (in[2] + r * hidden[2]).tanh();
  Tensor hy = n + z * (hx - n);
  return {hy, at::cat({r, z, n, hx, hidden[2]}, 1)};
}

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> gruCellBackward(const Tensor& grad_hy,
                                                                   const Tensor& workspace,
                                                                   bool has_bias) {
  auto chunks = workspace.chunk(5, 1);
  const Tensor &r = chunks[0], &z = chunks[1], &n = chunks[2], &hx = chunks[3],
               &hn = chunks[4];
  Tensor gz = grad_hy * (hx - n) * z * (1 - z);
  Tensor gn = grad_hy * (1 - z) * (1 - n * n);
  Tensor gr = gn * hn * r * (1 - r);
  Tensor grad_input_gates = at::cat({gr, gz, gn}, 1);
  Tensor grad_hidden_gates = at::cat({gr, gz, gn * r}, 1);
  Tensor grad_input_bias = has_bias ? grad_input_gates.sum(0) : Tensor();
  Tensor grad_hidden_bias = has_bias ? grad_hidden_gates.sum(0) : Tensor();
  return {grad_input_gates, grad_hidden_gates, grad_hy * z, grad_input_bias, grad_hidden_bias};
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("_thnn_fused_lstm_cell", TORCH_FN(lstmCell));
  m.impl("_thnn_fused_lstm_cell_backward_impl", TORCH_FN(lstmCellBackward));
  m.impl("_thnn_fused_gru_cell", TORCH_FN(gruCell));
  m.impl("_thnn_fused_gru_cell_backward", TORCH_FN(gruCellBackward));
}

}  // namespace
}  // namespace torch_maia::ops
