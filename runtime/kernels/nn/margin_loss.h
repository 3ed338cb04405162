// The multi-class margin losses, multi_margin_loss (hinge over every
// non-target class, p = 1 or 2, optional class weights) and
// multilabel_margin_loss (hinge between every target class and every
// other), with their backwards. float32/float64, computed in the storage
// type with accumulations in acc_t, in the CPU kernel's order
// (ATen/native/LossMultiMargin.cpp, LossMultiLabelMargin.cpp), so sums
// round alike.
//
// Frames are (N, C) rows. Unreduced forwards and the backwards split rows
// over programs; a reduced forward runs on program 0 alone, summing in
// frame order like the CPU. A target out of range traps (a sticky device
// error, as nll_loss's), as CUDA's device assert does.
#pragma once

#include <cstdint>

#include <maia/kernel_abi.h>

#include "nn.h"

namespace maia_nn {

/// Rows of the program's share; all of them on program 0 when `serial`.
inline maia_kernel::Slice frameSlice(const maia_grid_t* grid, int64_t rows, bool serial) {
  if (!serial) return maia_kernel::programSlice(grid, rows);
  if (maia_kernel::linearProgramId(grid) == 0) return {0, rows};
  return {0, 0};
}

template <typename T>
T multiMarginFrame(const MemRef<T, 2>& in, int64_t row, int64_t target, const MemRef<T, 1>& weight,
                   bool has_weight, int64_t p, T margin) {
  const int64_t classes = in.sizes[1];
  const T input_target = in.at(row, target);
  T sum = 0;
  for (int64_t d = 0; d < classes; ++d) {
    if (d == target) continue;
    const T z = margin - input_target + in.at(row, d);
    if (z > 0) {
      T h = p == 1 ? z : z * z;
      if (has_weight) h *= at1(weight, target);
      sum += h;
    }
  }
  return sum / static_cast<T>(classes);
}

// args: out (N unreduced, else 1), in (N, C), target (N), weight (C or
// empty), p, margin, has_weight, reduction (0 none, 1 mean, 2 sum).
template <typename T>
void multiMarginLoss(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, 1>(args, 0);
  const auto& in = memref<T, 2>(args, 1);
  const auto& target = memref<int64_t, 1>(args, 2);
  const auto& weight = memref<T, 1>(args, 3);
  const int64_t p = scalar<int64_t>(args, 4);
  const T margin = static_cast<T>(scalar<double>(args, 5));
  const bool has_weight = scalar<int64_t>(args, 6) != 0;
  const int64_t reduction = scalar<int64_t>(args, 7);
  const int64_t rows = in.sizes[0];
  const auto slice = frameSlice(grid, rows, reduction != 0);
  acc_t<T> sum = 0;
  for (int64_t row = slice.begin; row < slice.end; ++row) {
    const int64_t t = at1(target, row);
    checkIndex(t, in.sizes[1]);
    const T loss = multiMarginFrame(in, row, t, weight, has_weight, p, margin);
    if (reduction == 0) {
      at1(out, row) = loss;
    } else {
      sum += loss;
    }
  }
  if (reduction != 0 && slice.end > slice.begin)
    at1(out, 0) = static_cast<T>(reduction == 1 ? sum / rows : sum);
}

/// The factor of row's gradient: grad_output's element for it, or its
/// only element.
template <typename T>
T outputGradient(const MemRef<T, 1>& grad_output, int64_t row, bool per_frame) {
  return at1(grad_output, per_frame ? row : 0);
}

// args: grad_input (N, C; fully written), grad_output (N or 1), in,
// target, weight, p, margin, has_weight, reduction, grad_output per frame.
template <typename T>
void multiMarginLossBackward(void* const* args, const maia_grid_t* grid) {
  const auto& grad_input = memref<T, 2>(args, 0);
  const auto& grad_output = memref<T, 1>(args, 1);
  const auto& in = memref<T, 2>(args, 2);
  const auto& target = memref<int64_t, 1>(args, 3);
  const auto& weight = memref<T, 1>(args, 4);
  const int64_t p = scalar<int64_t>(args, 5);
  const T margin = static_cast<T>(scalar<double>(args, 6));
  const bool has_weight = scalar<int64_t>(args, 7) != 0;
  const int64_t reduction = scalar<int64_t>(args, 8);
  const bool per_frame = scalar<int64_t>(args, 9) != 0;
  const int64_t rows = in.sizes[0], classes = in.sizes[1];
  const T g = static_cast<T>(reduction == 1 ? 1. / static_cast<double>(rows * classes)
                                            : 1. / static_cast<double>(classes));
  const auto slice = maia_kernel::programSlice(grid, rows);
  for (int64_t row = slice.begin; row < slice.end; ++row) {
    const int64_t t = at1(target, row);
    checkIndex(t, classes);
    const T input_target = in.at(row, t), scale = outputGradient(grad_output, row, per_frame);
    T grad_target = 0;
    for (int64_t d = 0; d < classes; ++d) {
      if (d == t) continue;
      const T z = margin - input_target + in.at(row, d);
      T h = 0;
      if (z > 0) {
        h = p == 1 ? g : 2 * g * z;
        if (has_weight) h *= at1(weight, t);
        grad_target -= h;
      }
      grad_input.at(row, d) = h * scale;
    }
    grad_input.at(row, t) = grad_target * scale;
  }
}

/// Marks row's targets (up to the first -1) in is_target; the row's
/// count of them. Every entry must be in [-1, C), as on the CPU.
template <typename T>
int64_t markTargets(const MemRef<int64_t, 2>& target, const MemRef<T, 2>& is_target, int64_t row) {
  const int64_t classes = target.sizes[1];
  int64_t count = classes;
  for (int64_t d = 0; d < classes; ++d) is_target.at(row, d) = 0;
  for (int64_t d = 0; d < classes; ++d) {
    const int64_t t = target.at(row, d);
    checkIndex(t + 1, classes + 1);
    if (t < 0 && count == classes) count = d;
  }
  for (int64_t d = 0; d < count; ++d) is_target.at(row, target.at(row, d)) = 1;
  return count;
}

// args: out (N unreduced, else 1), is_target (N, C; written), in (N, C),
// target (N, C), reduction, output per frame.
template <typename T>
void multilabelMarginLoss(void* const* args, const maia_grid_t* grid) {
  const auto& out = memref<T, 1>(args, 0);
  const auto& is_target = memref<T, 2>(args, 1);
  const auto& in = memref<T, 2>(args, 2);
  const auto& target = memref<int64_t, 2>(args, 3);
  const int64_t reduction = scalar<int64_t>(args, 4);
  const bool per_frame = scalar<int64_t>(args, 5) != 0;
  const int64_t rows = in.sizes[0], classes = in.sizes[1];
  const auto slice = frameSlice(grid, rows, !per_frame);
  acc_t<T> total = 0;
  for (int64_t row = slice.begin; row < slice.end; ++row) {
    const int64_t count = markTargets(target, is_target, row);
    acc_t<T> sum = 0;
    for (int64_t j = 0; j < count; ++j) {
      const T input_target = in.at(row, target.at(row, j));
      for (int64_t d = 0; d < classes; ++d) {
        if (is_target.at(row, d) != 0) continue;
        const T z = 1 - input_target + in.at(row, d);
        if (z > 0) sum += z;
      }
    }
    if (per_frame) {
      at1(out, row) = static_cast<T>(sum) / static_cast<T>(classes);
    } else {
      total += sum;
    }
  }
  if (!per_frame && slice.end > slice.begin) {
    total /= classes;
    if (reduction == 1) total /= rows;
    at1(out, 0) = static_cast<T>(total);
  }
}

// args: grad_input (N, C; fully written), grad_output (N or 1), in,
// target, is_target, reduction, grad_output per frame.
template <typename T>
void multilabelMarginLossBackward(void* const* args, const maia_grid_t* grid) {
  const auto& grad_input = memref<T, 2>(args, 0);
  const auto& grad_output = memref<T, 1>(args, 1);
  const auto& in = memref<T, 2>(args, 2);
  const auto& target = memref<int64_t, 2>(args, 3);
  const auto& is_target = memref<T, 2>(args, 4);
  const int64_t reduction = scalar<int64_t>(args, 5);
  const bool per_frame = scalar<int64_t>(args, 6) != 0;
  const int64_t rows = in.sizes[0], classes = in.sizes[1];
  const T g = static_cast<T>(reduction == 1 ? 1. / static_cast<double>(rows * classes)
                                            : 1. / static_cast<double>(classes));
  const auto slice = maia_kernel::programSlice(grid, rows);
  for (int64_t row = slice.begin; row < slice.end; ++row) {
    for (int64_t d = 0; d < classes; ++d) grad_input.at(row, d) = 0;
    for (int64_t j = 0; j < classes; ++j) {
      const int64_t t = target.at(row, j);
      if (t < 0) break;
      checkIndex(t, classes);
      const T input_target = in.at(row, t);
      for (int64_t d = 0; d < classes; ++d) {
        if (is_target.at(row, d) != 0) continue;
        const T z = 1 - input_target + in.at(row, d);
        if (z > 0) {
          grad_input.at(row, t) -= g;
          grad_input.at(row, d) += g;
        }
      }
    }
    const T scale = outputGradient(grad_output, row, per_frame);
    for (int64_t d = 0; d < classes; ++d) grad_input.at(row, d) *= scale;
  }
}

}  // namespace maia_nn
