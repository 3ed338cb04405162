// flip and roll on maia (and so fliplr, flipud, rot90, fft.fftshift and
// their out= forms, which ATen builds from them): one launch of the NN
// kernel binary's roll kernel (runtime/kernels/nn/roll.h), a copy in which
// each output index reads the input at a cyclic shift per dimension. A
// flipped dimension is the input read backwards: its memref stride is
// negated and its offset moved to the last element, no copy made.
//
// Before the launch, dimensions of size 1 are dropped and neighbours that
// are contiguous in both tensors merge (a shift of the outer one becomes a
// shift of the merged one), so a roll of a contiguous tensor along one
// dimension is a copy of two runs per row.
#include <ATen/WrapDimUtils.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <torch/library.h>

#include <bitset>
#include <optional>
#include <vector>

#include "WorkSplit.h"
#include "ops/EagerKernels.h"
#include "ops/HostRouting.h"
#include "ops/MaiaOps.h"

namespace torch_maia::ops {
namespace {

using at::Tensor;

constexpr int kRank = 8;  // the kernel's memref rank (roll.h)

/// One dimension of the copy: its size, both tensors' strides (the input's
/// negated if flipped) and the input's shift, in [0, size).
struct Dim {
  int64_t size, out_stride, in_stride, shift;
};

/// dims without size-1 dimensions, contiguous neighbours merged.
std::vector<Dim> coalesce(const std::vector<Dim>& dims) {
  std::vector<Dim> merged;
  for (const Dim& d : dims) {
    if (d.size == 1) continue;
    if (!merged.empty()) {
      Dim& outer = merged.back();
      if (d.shift == 0 && outer.out_stride == d.out_stride * d.size &&
          outer.in_stride == d.in_stride * d.size) {
        outer = {outer.size * d.size, d.out_stride, d.in_stride, outer.shift * d.size};
        continue;
      }
    }
    merged.push_back(d);
  }
  return merged;
}

/// Launches the copy of dims (outermost first) from in's storage at
/// in_offset into out's at out_offset; more than kRank dimensions go one
/// index of the outermost at a time.
void launchCopy(const Tensor& out, int64_t out_offset, const Tensor& in, int64_t in_offset,
                c10::ArrayRef<Dim> dims) {
  if (dims.size() > static_cast<size_t>(kRank)) {
    const Dim& d = dims[0];
    for (int64_t i = 0; i < d.size; ++i) {
      const int64_t source = (i + d.shift) % d.size;
      launchCopy(out, out_offset + i * d.out_stride, in, in_offset + source * d.in_stride,
                 dims.slice(1));
    }
    return;
  }
  maiaKernelArg out_arg = unshapedMemref(out, kRank), in_arg = unshapedMemref(in, kRank);
  out_arg.offset = out_offset;
  in_arg.offset = in_offset;
  std::vector<maiaKernelArg> shifts;
  const size_t pad = kRank - dims.size();
  int64_t numel = 1;
  for (size_t d = 0; d < static_cast<size_t>(kRank); ++d) {
    const Dim dim = d < pad ? Dim{1, 0, 0, 0} : dims[d - pad];
    out_arg.sizes[d] = in_arg.sizes[d] = dim.size;
    out_arg.strides[d] = dim.out_stride;
    in_arg.strides[d] = dim.in_stride;
    shifts.push_back(intArg(dim.shift));
    numel *= dim.size;
  }
  std::vector<maiaKernelArg> args{out_arg, in_arg};
  args.insert(args.end(), shifts.begin(), shifts.end());
  launchNn("roll", out.scalar_type(), args, programsFor(numel, numel), out.device());
}

/// out (self's sizes) = self with `flipped` dimensions reversed and each
/// dimension d read at shift[d] (in [0, size)): out[i] = self[i + shift].
void rollInto(const Tensor& out, const Tensor& self, const std::vector<bool>& flipped,
              const std::vector<int64_t>& shift) {
  if (self.numel() == 0) return;
  std::vector<Dim> dims;
  int64_t in_offset = self.storage_offset();
  for (int64_t d = 0; d < self.dim(); ++d) {
    int64_t in_stride = self.stride(d);
    if (flipped[d]) {
      in_offset += (self.size(d) - 1) * in_stride;
      in_stride = -in_stride;
    }
    dims.push_back({self.size(d), out.stride(d), in_stride, shift[d]});
  }
  launchCopy(out, out.storage_offset(), self, in_offset, coalesce(dims));
}

Tensor flip(const Tensor& self, at::IntArrayRef dims) {
  const std::bitset<at::dim_bitset_size> flips = at::dim_list_to_bitset(dims, self.dim());
  Tensor out = at::empty_like(self, c10::MemoryFormat::Preserve);
  std::vector<bool> flipped(self.dim());
  for (int64_t d = 0; d < self.dim(); ++d) flipped[d] = flips[d];
  rollInto(out, self, flipped, std::vector<int64_t>(self.dim(), 0));
  return out;
}

/// The CPU's start of a roll of a dimension of `size` by `shift`: its
/// result is the input from `start` on, then the input before it, so
/// out[i] reads in[(i + start) mod size].
int64_t rollStart(int64_t shift, int64_t size) {
  const int64_t start = (size - shift) % size;
  return start < 0 ? start + size : start;
}

/// The memory format cat gives its result (the CPU's roll is cat of two
/// narrowed pieces per rolled dimension): a format all pieces suggest, else
/// contiguous.
c10::MemoryFormat catFormat(std::initializer_list<Tensor> pieces) {
  std::optional<c10::MemoryFormat> format;
  for (const Tensor& t : pieces) {
    const c10::MemoryFormat f = t.suggest_memory_format();
    if (f == c10::MemoryFormat::Contiguous || (format && *format != f))
      return c10::MemoryFormat::Contiguous;
    format = f;
  }
  return *format;
}

/// The layout of the CPU's result of rolling self's dims one after the
/// other, each by its start: the format each step's cat gives, followed
/// through meta tensors of that format.
c10::MemoryFormat rollFormat(const Tensor& self, at::IntArrayRef dims,
                             const std::vector<int64_t>& starts) {
  Tensor current = self;
  c10::MemoryFormat format = c10::MemoryFormat::Contiguous;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t size = current.size(dims[i]);
    format = catFormat({current.narrow(dims[i], starts[i], size - starts[i]),
                        current.narrow(dims[i], 0, starts[i])});
    current = at::empty(self.sizes(), self.options().device(c10::kMeta).memory_format(format));
  }
  return format;
}

Tensor roll(const Tensor& self, c10::SymIntArrayRef shifts_sym, at::IntArrayRef dims) {
  const at::IntArrayRef shifts = C10_AS_INTARRAYREF_SLOW(shifts_sym);
  TORCH_CHECK(!shifts.empty(), "`shifts` required");
  if (dims.empty() && shifts.size() == 1) {  // the flattened tensor, rolled
    Tensor out = newEmpty(self.sizes(), self.options());
    if (self.numel() == 0) return out;
    Tensor flat = self.contiguous();
    rollInto(out.view({-1}), flat.view({-1}), {false}, {rollStart(shifts[0], self.numel())});
    return out;
  }
  TORCH_CHECK(shifts.size() == dims.size(), "shifts and dimensions must align. shifts: ",
              shifts.size(), ", dims:", dims.size());
  if (self.numel() == 0) return at::empty_like(self, c10::MemoryFormat::Preserve);
  std::vector<int64_t> shift(self.dim(), 0), starts;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t size = self.size(dims[i]);  // the CPU's error for a bad dimension
    const int64_t d = c10::maybe_wrap_dim(dims[i], self.dim());
    starts.push_back(rollStart(shifts[i], size));
    shift[d] = (shift[d] + starts.back()) % size;
  }
  Tensor out = at::empty(self.sizes(), self.options().memory_format(
                                           rollFormat(self, dims, starts)));
  rollInto(out, self, std::vector<bool>(self.dim(), false), shift);
  return out;
}

MAIA_NATIVE_KERNELS(m) {
  m.impl("flip", TORCH_FN(flip));
  m.impl("roll", TORCH_FN(roll));
}

}  // namespace
}  // namespace torch_maia::ops
