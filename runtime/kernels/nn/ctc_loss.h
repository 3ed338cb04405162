// The connectionist temporal classification loss (Graves et al. 2006) and
// its gradient, in log space, as the CPU's kernel computes them: the alpha
// recursion forward, the beta recursion backward, each a log-sum-exp of up
// to three predecessors shifted by their maximum, in the storage type
// (float32 or float64). One program per batch element.
//
// Shared argument conventions: log_probs (input_length, batch, labels),
// targets int64 flat (the host makes them contiguous), target_offsets
// (batch: where element b's targets start), input_lengths and
// target_lengths (batch), log_alpha (batch, input_length, 2 * max target
// length + 1). The extended target l' has the blank at even positions and
// target s / 2 at odd ones.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include <maia/kernel_abi.h>

#include "nn.h"

namespace maia_nn {

namespace ctc_detail {

struct Targets {
  const int64_t* data;
  int64_t offset, blank;
  int64_t prime(int64_t s) const { return s % 2 == 0 ? blank : data[offset + s / 2]; }
};

/// args[3..6] of both kernels: targets, target_offsets, input_lengths,
/// target_lengths.
struct Alignments {
  const MemRef<int64_t, 1>& targets;
  const MemRef<int64_t, 1>& offsets;
  const MemRef<int64_t, 1>& input_lengths;
  const MemRef<int64_t, 1>& target_lengths;

  explicit Alignments(void* const* args)
      : targets(memref<int64_t, 1>(args, 3)), offsets(memref<int64_t, 1>(args, 4)),
        input_lengths(memref<int64_t, 1>(args, 5)), target_lengths(memref<int64_t, 1>(args, 6)) {}

  /// Batch element b's extended target.
  Targets of(int64_t b, int64_t blank) const {
    return {targets.aligned + targets.offset, offsets.at(b), blank};
  }
};

/// log(exp(a) + exp(b) + exp(c)) shifted by the largest (0 when all are
/// -inf, so no -inf - -inf is formed).
template <typename T>
T logSumExp3(T a, T b, T c) {
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  T largest = std::max(a, std::max(b, c));
  if (largest == kNegInf) largest = 0;
  return std::log(std::exp(a - largest) + std::exp(b - largest) + std::exp(c - largest)) + largest;
}

}  // namespace ctc_detail

// args: neg_log_likelihood (batch), log_alpha, log_probs, targets,
// target_offsets, input_lengths, target_lengths, blank. Rows of log_alpha
// past an element's input length, and states past its target, are not
// written (the CPU leaves them unset too), except row 0, all -inf first.
template <typename T>
void ctcLoss(void* const* args, const maia_grid_t* grid) {
  using namespace ctc_detail;
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const auto& nll = memref<T, 1>(args, 0);
  const auto& alpha = memref<T, 3>(args, 1);
  const auto& lp = memref<T, 3>(args, 2);
  const Alignments alignments(args);
  const int64_t blank = scalar<int64_t>(args, 7);
  auto slice = maia_kernel::programSlice(grid, nll.sizes[0]);
  for (int64_t b = slice.begin; b < slice.end; ++b) {
    const Targets tg = alignments.of(b, blank);
    const int64_t length = alignments.input_lengths.at(b);
    const int64_t target_length = alignments.target_lengths.at(b);
    if (alpha.sizes[1] > 0)
      for (int64_t s = 0; s < alpha.sizes[2]; ++s) at3(alpha, b, 0, s) = kNegInf;
    if (length == 0) {
      nll.at(b) = target_length == 0 ? T(0) : std::numeric_limits<T>::infinity();
      continue;
    }
    at3(alpha, b, 0, 0) = at3(lp, 0, b, blank);
    if (target_length > 0) at3(alpha, b, 0, 1) = at3(lp, 0, b, tg.prime(1));
    for (int64_t t = 1; t < length; ++t) {
      for (int64_t s = 0; s < 2 * target_length + 1; ++s) {
        const int64_t label = tg.prime(s);
        const T a1 = at3(alpha, b, t - 1, s);
        const T a2 = s > 0 ? at3(alpha, b, t - 1, s - 1) : kNegInf;
        const T a3 = (s > 1 && tg.prime(s - 2) != label) ? at3(alpha, b, t - 1, s - 2) : kNegInf;
        at3(alpha, b, t, s) = logSumExp3(a1, a2, a3) + at3(lp, t, b, label);
      }
    }
    if (target_length == 0) {
      nll.at(b) = -at3(alpha, b, length - 1, 0);
    } else {
      nll.at(b) = -logSumExp3(at3(alpha, b, length - 1, 2 * target_length),
                              at3(alpha, b, length - 1, 2 * target_length - 1), kNegInf);
    }
  }
}

// args: grad (input_length, batch, labels; every element written), grad_out
// (batch), log_probs, targets, target_offsets, input_lengths,
// target_lengths, neg_log_likelihood, log_alpha, log_beta (scratch shaped
// as log_alpha), blank, zero_infinity. grad = (exp(lp) - exp(log sum over
// the states s with l'[s] = c of alpha * beta + nll - lp)) * grad_out for
// t below the input length, 0 after it, and 0 for an element whose loss is
// infinite when zero_infinity.
template <typename T>
void ctcLossBackward(void* const* args, const maia_grid_t* grid) {
  using namespace ctc_detail;
  constexpr T kNegInf = -std::numeric_limits<T>::infinity();
  const auto& grad = memref<T, 3>(args, 0);
  const auto& grad_out = memref<T, 1>(args, 1);
  const auto& lp = memref<T, 3>(args, 2);
  const Alignments alignments(args);
  const auto& nll = memref<T, 1>(args, 7);
  const auto& alpha = memref<T, 3>(args, 8);
  const auto& beta = memref<T, 3>(args, 9);
  const int64_t blank = scalar<int64_t>(args, 10);
  const bool zero_infinity = scalar<int64_t>(args, 11) != 0;
  const int64_t steps = grad.sizes[0], labels = grad.sizes[2];
  auto slice = maia_kernel::programSlice(grid, grad.sizes[1]);
  for (int64_t b = slice.begin; b < slice.end; ++b) {
    const T loss = nll.at(b);
    const bool zeroed = zero_infinity && loss == std::numeric_limits<T>::infinity();
    const int64_t length = zeroed ? 0 : alignments.input_lengths.at(b);
    for (int64_t t = 0; t < steps; ++t)
      for (int64_t c = 0; c < labels; ++c) at3(grad, t, b, c) = t < length ? kNegInf : T(0);
    if (length == 0) continue;
    const Targets tg = alignments.of(b, blank);
    const int64_t target_length = alignments.target_lengths.at(b), last = 2 * target_length;
    for (int64_t s = 0; s < beta.sizes[2]; ++s) at3(beta, b, length - 1, s) = kNegInf;
    at3(beta, b, length - 1, last) = at3(lp, length - 1, b, blank);
    at3(grad, length - 1, b, blank) = at3(alpha, b, length - 1, last) + at3(beta, b, length - 1, last);
    if (target_length > 0) {
      const int64_t label = tg.prime(last - 1);
      at3(beta, b, length - 1, last - 1) = at3(lp, length - 1, b, label);
      at3(grad, length - 1, b, label) =
          at3(alpha, b, length - 1, last - 1) + at3(beta, b, length - 1, last - 1);
    }
    for (int64_t t = length - 2; t >= 0; --t) {
      for (int64_t s = last; s >= 0; --s) {
        const int64_t label = tg.prime(s);
        const T b1 = at3(beta, b, t + 1, s);
        const T b2 = s < last ? at3(beta, b, t + 1, s + 1) : kNegInf;
        const T b3 = (s < last - 1 && tg.prime(s + 2) != label) ? at3(beta, b, t + 1, s + 2)
                                                                  : kNegInf;
        at3(beta, b, t, s) = logSumExp3(b1, b2, b3) + at3(lp, t, b, label);
        const T alpha_beta = at3(alpha, b, t, s) + at3(beta, b, t, s);
        T& collected = at3(grad, t, b, label);
        if (collected == kNegInf) {
          collected = alpha_beta;
        } else {
          const T largest = std::max(collected, alpha_beta);
          collected = std::log(std::exp(collected - largest) + std::exp(alpha_beta - largest)) +
                      largest;
        }
      }
    }
    const T scale = grad_out.at(b);
    for (int64_t t = 0; t < length; ++t) {
      for (int64_t c = 0; c < labels; ++c) {
        T& g = at3(grad, t, b, c);
        const T log_prob = at3(lp, t, b, c);
        g = (std::exp(log_prob) - std::exp(g + loss - log_prob)) * scale;
      }
    }
  }
}

}  // namespace maia_nn
