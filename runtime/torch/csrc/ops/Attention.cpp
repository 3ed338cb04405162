// F.scaled_dot_product_attention on maia: the PrivateUse1 "overrideable"
// SDPA backend. ATen's composite scaled_dot_product_attention asks
// _fused_sdp_choice_stub which backend to use; for inputs the fused kernels
// take (4-D, or 3-D as a batch of one) we answer SDPBackend::overrideable,
// and ATen calls _scaled_dot_product_fused_attention_overrideable (a boolean
// mask already turned into an additive one of the query's dtype), whose
// derivative is ..._overrideable_backward. Anything else (dropout, masks
// that need a gradient, other ranks or dtypes) gets SDPBackend::math:
// matmul, softmax, matmul on maia's own kernels.
//
// The kernels are sdpa_fwd and sdpa_bwd (or sdpa_bwd_kv + sdpa_bwd_q) of the
// attention kernel binary (runtime/kernels/nn/attention.h; AVX-512 where the
// driver accepts it, else AVX2), launched on the current stream over blocks
// of 64 queries (or keys) per work unit, split across the cores. Inductor
// lowers both operators as fallback kernels, so compiled graphs call these
// very functions.
#include <ATen/Context.h>
#include <ATen/SDPBackend.h>
#include <ATen/native/DispatchStub.h>
#include <ATen/native/transformers/attention.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>
#include <ATen/ops/mul.h>
#include <torch/library.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/MaiaOps.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

constexpr int64_t kBlock = 64;  // queries (or keys) per work unit: attention.h's kBlockQ/K
/// Floats of dQ a program of the one-pass backward may keep (16 MiB).
constexpr int64_t kMaxFusedBackwardScratch = int64_t{4} << 20;

bool fusedDtype(c10::ScalarType dtype) {
  return dtype == at::kFloat || dtype == at::kHalf || dtype == at::kBFloat16;
}

/// Whether mask broadcasts to (batch, heads, seq_q, seq_k).
bool broadcastsTo(const Tensor& mask, std::array<c10::SymInt, 4> shape) {
  if (mask.dim() > 4) return false;
  const int64_t pad = 4 - mask.dim();
  for (int64_t d = 0; d < mask.dim(); ++d) {
    const c10::SymInt& size = mask.sym_size(d);
    if (size != 1 && size != shape[d + pad]) return false;
  }
  return true;
}

/// Whether the fused kernels compute SDPA for these arguments (shapes may be
/// symbolic while Dynamo traces: comparisons then guard).
bool fitsFusedKernels(const Tensor& q, const Tensor& k, const Tensor& v,
                      const std::optional<Tensor>& mask, double dropout_p, bool enable_gqa) {
  if (dropout_p != 0.0) return false;
  if (q.is_nested() || k.is_nested() || v.is_nested()) return false;
  // 3-D (heads, seq, dim) inputs run as one batch; the meta function sizes
  // their output like the query only when the value has the query's width.
  if (q.dim() == 3 && k.dim() == 3 && v.dim() == 3 && v.sym_size(2) == q.sym_size(2))
    return fitsFusedKernels(q.unsqueeze(0), k.unsqueeze(0), v.unsqueeze(0), mask, dropout_p,
                            enable_gqa);
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4) return false;
  if (!fusedDtype(q.scalar_type()) || k.scalar_type() != q.scalar_type() ||
      v.scalar_type() != q.scalar_type())
    return false;
  if (k.device() != q.device() || v.device() != q.device()) return false;
  const c10::SymInt &batch = q.sym_size(0), &heads = q.sym_size(1), &seq_q = q.sym_size(2),
                   &dim = q.sym_size(3);
  const c10::SymInt &kv_heads = k.sym_size(1), &seq_k = k.sym_size(2);
  if (k.sym_size(0) != batch || v.sym_size(0) != batch || v.sym_size(1) != kv_heads ||
      v.sym_size(2) != seq_k || k.sym_size(3) != dim)
    return false;
  if (seq_q == 0 || seq_k == 0 || dim == 0 || v.sym_size(3) == 0 || batch == 0 ||
      kv_heads == 0)
    return false;
  if (kv_heads != heads && !(enable_gqa && heads % kv_heads == 0)) return false;
  if (mask && mask->defined()) {
    if (mask->requires_grad()) return false;  // no grad_attn_bias from the fused kernels
    if (mask->scalar_type() != at::kBool && mask->scalar_type() != q.scalar_type())
      return false;
    if (mask->device() != q.device()) return false;
    if (!broadcastsTo(*mask, {batch, heads, seq_q, seq_k})) return false;
  }
  return true;
}

int64_t chooseSdpBackend(const Tensor& query, const Tensor& key, const Tensor& value,
                         const std::optional<Tensor>& attn_mask, double dropout_p,
                         bool is_causal, std::optional<double> scale, bool enable_gqa) {
  const at::Context& context = at::globalContext();
  if (context.userEnabledOverrideableSDP() &&
      fitsFusedKernels(query, key, value, attn_mask, dropout_p, enable_gqa))
    return static_cast<int64_t>(at::SDPBackend::overrideable);
  return static_cast<int64_t>(at::SDPBackend::math);
}

/// The default scale, 1/sqrt(head_dim), or the caller's.
double softmaxScale(const Tensor& query, std::optional<double> scale) {
  return scale ? *scale : 1.0 / std::sqrt(static_cast<double>(query.size(-1)));
}

/// A result of shape `sizes` laid out like query, as the meta function
/// (torch/_meta_registrations.py, alloc_with_matching_layout) declares it:
/// compiled graphs check fallback outputs against those strides.
Tensor emptyLike(const Tensor& query, c10::IntArrayRef sizes) {
  if (query.sizes() == sizes) return at::empty_like(query);
  std::array<int64_t, 4> order{0, 1, 2, 3};
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return query.stride(a) > query.stride(b); });
  std::array<int64_t, 4> strides{};
  int64_t stride = 1;
  for (int i = 3; i >= 0; --i) {
    strides[order[i]] = stride;
    stride *= sizes[order[i]];
  }
  return at::empty_strided(sizes, strides, query.options());
}

void checkInputs(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                 const Tensor& bias, double dropout_p) {
  TORCH_CHECK(dropout_p == 0.0, op, ": maia's fused attention has no dropout (dropout_p=",
              dropout_p, "); SDPA picks the math path for it");
  TORCH_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, op,
              ": expects 4-D (batch, heads, seq, head_dim) or 3-D (heads, seq, head_dim) query, "
              "key and value");
  TORCH_CHECK(fusedDtype(q.scalar_type()) && k.scalar_type() == q.scalar_type() &&
                  v.scalar_type() == q.scalar_type(),
              op, ": expects float32, float16 or bfloat16 query, key and value of one dtype");
  TORCH_CHECK(k.size(0) == q.size(0) && v.size(0) == q.size(0) && k.size(1) == v.size(1) &&
                  k.size(2) == v.size(2) && k.size(3) == q.size(3) && k.size(1) > 0 &&
                  q.size(1) % k.size(1) == 0,
              op, ": incompatible shapes: query ", q.sizes(), ", key ", k.sizes(), ", value ",
              v.sizes());
  if (bias.defined())
    TORCH_CHECK(bias.scalar_type() == q.scalar_type() && bias.dim() <= 4, op,
                ": attn_bias must be of the query's dtype and at most 4-D, not ",
                bias.scalar_type(), " ", bias.sizes());
}

/// attn_bias broadcast to (batch, heads, seq_q, seq_k), or any 4-D memref
/// when there is none (has_bias says which).
maiaKernelArg biasArg(const Tensor& bias, const Tensor& q, const Tensor& k) {
  if (!bias.defined()) return memrefOf(q);
  return memrefOf(bias.expand({q.size(0), q.size(1), q.size(2), k.size(2)}));
}

/// float32 (batch, heads, seq) contiguous view of t (a copy when it is not).
Tensor rowStats(const Tensor& t) {
  return t.scalar_type() == at::kFloat ? t : t.to(at::kFloat);
}

/// A 3-D (heads, seq, dim) tensor as a batch of one, as the meta function
/// takes it; others unchanged.
Tensor batched(const Tensor& t) { return t.defined() && t.dim() == 3 ? t.unsqueeze(0) : t; }

std::tuple<Tensor, Tensor, Tensor, Tensor, c10::SymInt, c10::SymInt, Tensor, Tensor, Tensor>
fusedAttention(const Tensor& query_in, const Tensor& key_in, const Tensor& value_in,
               const std::optional<Tensor>& attn_bias, double dropout_p, bool is_causal,
               bool return_debug_mask, std::optional<double> scale) {
  const char* op = "_scaled_dot_product_fused_attention_overrideable";
  const bool unbatched = query_in.dim() == 3;
  const Tensor query = batched(query_in), key = batched(key_in), value = batched(value_in);
  const Tensor bias = attn_bias ? *attn_bias : Tensor();
  checkInputs(op, query, key, value, bias, dropout_p);
  TORCH_CHECK(!return_debug_mask, op, ": maia has no debug attention mask");
  const int64_t batch = query.size(0), heads = query.size(1), seq_q = query.size(2),
                seq_k = key.size(2), dim_v = value.size(3);
  Tensor out = emptyLike(query, {batch, heads, seq_q, dim_v});
  Tensor lse = newEmpty({batch, heads, seq_q}, query.options().dtype(at::kFloat));
  if (out.numel() > 0) {
    TORCH_CHECK(seq_k > 0, op, ": no keys to attend to");
    const int64_t units = batch * heads * ((seq_q + kBlock - 1) / kBlock);
    launchPrograms(attentionKernel("sdpa_fwd", query.scalar_type()),
                   {memrefOf(out), memrefOf(lse), memrefOf(query), memrefOf(key),
                    memrefOf(value), biasArg(bias, query, key),
                    maiaKernelArgFloat(maiaDtypeF64, softmaxScale(query, scale)),
                    intArg(is_causal), intArg(bias.defined())},
                   programsFor(units, units * kBlock * seq_k * (query.size(3) + dim_v)),
                   query.device().index());
  }
  // Dropout is off: the philox seed and offset are placeholders, as the
  // meta function's.
  const at::TensorOptions longs = query.options().dtype(at::kLong);
  return {unbatched ? out.squeeze(0) : out,
          lse,
          Tensor(),
          Tensor(),
          c10::SymInt(seq_q),
          c10::SymInt(seq_k),
          newEmpty({}, longs),
          newEmpty({}, longs),
          Tensor()};
}

std::tuple<Tensor, Tensor, Tensor, Tensor> fusedAttentionBackward(
    const Tensor& grad_out_in, const Tensor& query_in, const Tensor& key_in,
    const Tensor& value_in, const Tensor& attn_bias, std::array<bool, 4> grad_input_mask,
    const Tensor& out_in,
    const Tensor& logsumexp, const Tensor& cum_seq_q, const Tensor& cum_seq_k,
    c10::SymInt max_q, c10::SymInt max_k, double dropout_p, bool is_causal,
    const Tensor& philox_seed, const Tensor& philox_offset, std::optional<double> scale) {
  const char* op = "_scaled_dot_product_fused_attention_overrideable_backward";
  const Tensor query = batched(query_in), key = batched(key_in), value = batched(value_in);
  const Tensor grad_out = batched(grad_out_in), out = batched(out_in);
  checkInputs(op, query, key, value, attn_bias, dropout_p);
  TORCH_CHECK(!grad_input_mask[3], op,
              ": maia's fused attention computes no gradient of attn_bias; SDPA picks the "
              "math path for masks that require grad");
  // Laid out like the inputs (the meta function's empty_like); the kernels
  // write 3-D ones through batch-of-one views.
  Tensor grad_q_out = at::empty_like(query_in), grad_k_out = at::empty_like(key_in),
         grad_v_out = at::empty_like(value_in);
  if (query.numel() == 0 || key.numel() == 0) {
    grad_q_out.zero_();
    grad_k_out.zero_();
    grad_v_out.zero_();
    return {grad_q_out, grad_k_out, grad_v_out, Tensor()};
  }
  const Tensor grad_q = batched(grad_q_out), grad_k = batched(grad_k_out),
               grad_v = batched(grad_v_out);
  const c10::ScalarType dtype = query.scalar_type();
  Tensor dout = grad_out.scalar_type() == dtype ? grad_out : grad_out.to(dtype);
  // delta = rowsum(dO * O), the softmax backward's correction term.
  Tensor delta = at::mul(rowStats(dout), rowStats(out)).sum(-1);
  Tensor lse = rowStats(logsumexp);
  const maiaKernelArg bias = biasArg(attn_bias, query, key);
  const maiaKernelArg scale_arg = maiaKernelArgFloat(maiaDtypeF64, softmaxScale(query, scale));
  const int64_t batch = query.size(0), heads = query.size(1), seq_q = query.size(2),
                seq_k = key.size(2), dims = query.size(3) + value.size(3);
  const int64_t kv_heads = key.size(1), group = heads / kv_heads;
  // One pass (sdpa_bwd: 5 products) when the (batch, kv head) pairs, its
  // units, keep every core busy and their dQ fits a program's scratch;
  // else dK/dV and dQ in two race-free passes (7 products) over blocks.
  if (batch * kv_heads >= 2 * deviceCores() &&
      group * seq_q * query.size(3) <= kMaxFusedBackwardScratch) {
    launchPrograms(attentionKernel("sdpa_bwd", dtype),
                   {memrefOf(grad_q), memrefOf(grad_k), memrefOf(grad_v), memrefOf(query),
                    memrefOf(key), memrefOf(value), memrefOf(dout), bias, memrefOf(lse),
                    memrefOf(delta), scale_arg, intArg(is_causal), intArg(attn_bias.defined())},
                   programsFor(batch * kv_heads, batch * heads * seq_q * seq_k * dims),
                   query.device().index());
    return {grad_q_out, grad_k_out, grad_v_out, Tensor()};
  }
  const int64_t kv_units = batch * kv_heads * ((seq_k + kBlock - 1) / kBlock);
  launchPrograms(attentionKernel("sdpa_bwd_kv", dtype),
                 {memrefOf(grad_k), memrefOf(grad_v), memrefOf(query), memrefOf(key),
                  memrefOf(value), memrefOf(dout), bias, memrefOf(lse), memrefOf(delta),
                  scale_arg, intArg(is_causal), intArg(attn_bias.defined())},
                 programsFor(kv_units, kv_units * kBlock * seq_q * dims),
                 query.device().index());
  const int64_t q_units = batch * heads * ((seq_q + kBlock - 1) / kBlock);
  launchPrograms(attentionKernel("sdpa_bwd_q", dtype),
                 {memrefOf(grad_q), memrefOf(query), memrefOf(key), memrefOf(value),
                  memrefOf(dout), bias, memrefOf(lse), memrefOf(delta), scale_arg,
                  intArg(is_causal), intArg(attn_bias.defined())},
                 programsFor(q_units, q_units * kBlock * seq_k * dims),
                 query.device().index());
  return {grad_q_out, grad_k_out, grad_v_out, Tensor()};
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_scaled_dot_product_fused_attention_overrideable", TORCH_FN(fusedAttention));
  m.impl("_scaled_dot_product_fused_attention_overrideable_backward",
         TORCH_FN(fusedAttentionBackward));
}

}  // namespace
}  // namespace torch_maia::ops

namespace at::native {
REGISTER_PRIVATEUSE1_DISPATCH(_fused_sdp_choice_stub, &torch_maia::ops::chooseSdpBackend)
}  // namespace at::native
