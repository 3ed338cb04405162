// maiaLaunchKernel: validates a launch against the kernel's metadata and
// queues it; KernelCommand runs its program ids in contiguous blocks.
#include <bit>
#include <cstddef>
#include <cstring>

#include "activity.h"
#include "device.h"
#include "fault.h"
#include "module.h"
#include "recycling_pool.h"
#include "scheduler.h"

namespace maia::driver {
namespace {

// The program id the current thread is running (for fault messages).
thread_local int64_t t_program_id[3] = {0, 0, 0};

class KernelCommand final : public Command, public PooledAllocation<KernelCommand> {
 public:
  /// words: 64-bit words of all argument descriptors and scalars. The usual
  /// few memrefs fit inline: a launch then allocates nothing but the
  /// command, and that from a pool.
  KernelCommand(std::shared_ptr<Module> module, const maiaKernel* kernel, const int64_t grid[3],
                int64_t chunks, size_t words, size_t num_args)
      : Command(chunks), module_(std::move(module)), kernel_(kernel) {
    programs_ = grid[0] * grid[1] * grid[2];
    for (int d = 0; d < 3; ++d) grid_[d] = grid[d];
    std::byte* slots = inline_slots_;
    if (num_args + words > kInlineSlots) {
      spilled_ = std::make_unique<std::byte[]>((num_args + words) * kSlotBytes);
      slots = spilled_.get();
    }
    args_ = reinterpret_cast<void**>(slots);
    words_ = reinterpret_cast<int64_t*>(args_ + num_args);
  }

  /// Binds argument i to the words at offset; returns them for the launch
  /// to fill in.
  int64_t* bindArgument(size_t i, size_t offset) {
    args_[i] = words_ + offset;
    return words_ + offset;
  }

  void runChunk(int64_t index) override {
    // A contiguous block of program ids per chunk, not interleaved ids:
    // neighbouring programs touch neighbouring memory, so each core streams
    // through its own range instead of sharing cache lines with the others.
    int64_t begin = programs_ * index / totalChunks();
    int64_t end = programs_ * (index + 1) / totalChunks();
    maia_grid_t grid;
    for (int d = 0; d < 3; ++d) grid.num_programs[d] = grid_[d];
    grid.program_id[0] = begin % grid_[0];
    grid.program_id[1] = (begin / grid_[0]) % grid_[1];
    grid.program_id[2] = begin / (grid_[0] * grid_[1]);
    maia_kernel_fn entry = kernel_->entry;
    void* const* args = args_;
    for (int64_t id = begin; id < end; ++id) {
      std::memcpy(t_program_id, grid.program_id, sizeof(t_program_id));
      {
        KernelCodeScope in_kernel;  // faults in here are the kernel's (fault.h)
        entry(args, &grid);
      }
      if (++grid.program_id[0] == grid_[0]) {
        grid.program_id[0] = 0;
        if (++grid.program_id[1] == grid_[1]) {
          grid.program_id[1] = 0;
          ++grid.program_id[2];
        }
      }
    }
  }

  int activityKind() const override { return maiaActivityKernel; }
  const char* activityName() const override { return kernel_->name.c_str(); }

  std::string describe() const override {
    return "kernel '" + kernel_->name + "' of " + module_->origin() + " at program id (" +
           std::to_string(t_program_id[0]) + ", " + std::to_string(t_program_id[1]) + ", " +
           std::to_string(t_program_id[2]) + ")";
  }

 private:
  // Argument pointers and words: six rank-4 memrefs (11 words each) and a
  // few scalars.
  static constexpr size_t kInlineSlots = 84;
  static constexpr size_t kSlotBytes = 8;
  static_assert(sizeof(void*) == kSlotBytes && sizeof(int64_t) == kSlotBytes);

  std::shared_ptr<Module> module_;  // keeps the code mapped while queued
  const maiaKernel* kernel_;
  int64_t grid_[3];
  int64_t programs_;
  void** args_;     // per argument, where its words start
  int64_t* words_;  // memref descriptors and scalars, after args_
  std::unique_ptr<std::byte[]> spilled_;
  alignas(kSlotBytes) std::byte inline_slots_[kInlineSlots * kSlotBytes];
};

/// Words of argument spec in a launch: a scalar, or a memref descriptor
/// {allocated, aligned, offset, sizes, strides}.
size_t argumentWords(const ArgSpec& spec) {
  return spec.kind == maiaArgScalar ? 1 : 3 + 2 * static_cast<size_t>(spec.rank);
}

uint16_t floatToHalf(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  uint32_t sign = (bits >> 16) & 0x8000u;
  int32_t exponent = static_cast<int32_t>((bits >> 23) & 0xff) - 127 + 15;
  uint32_t mantissa = bits & 0x7fffffu;
  if (((bits >> 23) & 0xff) == 0xff)  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00u | (mantissa ? 0x200u : 0u));
  if (exponent >= 31) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exponent <= 0) {
    if (exponent < -10) return static_cast<uint16_t>(sign);
    mantissa |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - exponent);
    uint32_t half = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) ++half;  // may carry into inf
  return static_cast<uint16_t>(half);
}

uint16_t floatToBFloat16(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  bits += 0x7fffu + ((bits >> 16) & 1u);  // round to nearest even
  return static_cast<uint16_t>(bits >> 16);
}

/// Writes a scalar argument in the kernel's representation into slot.
void encodeScalar(const maiaKernelArg& arg, int64_t* slot) {
  *slot = 0;
  auto put = [&](auto value) { std::memcpy(slot, &value, sizeof(value)); };
  switch (arg.dtype) {
    case maiaDtypeI1: put(static_cast<uint8_t>(arg.scalar.i != 0)); break;
    case maiaDtypeI8: put(static_cast<int8_t>(arg.scalar.i)); break;
    case maiaDtypeU8: put(static_cast<uint8_t>(arg.scalar.i)); break;
    case maiaDtypeI16: put(static_cast<int16_t>(arg.scalar.i)); break;
    case maiaDtypeI32: put(static_cast<int32_t>(arg.scalar.i)); break;
    case maiaDtypeI64:
    case maiaDtypeIndex: put(arg.scalar.i); break;
    case maiaDtypeF16: put(floatToHalf(static_cast<float>(arg.scalar.f))); break;
    case maiaDtypeBF16: put(floatToBFloat16(static_cast<float>(arg.scalar.f))); break;
    case maiaDtypeF32: put(static_cast<float>(arg.scalar.f)); break;
    case maiaDtypeF64: put(arg.scalar.f); break;
    case maiaDtypeC64:
    case maiaDtypeC128: break;  // memref element types only: no scalar slot holds one
  }
}

/// Checks one memref argument against its spec and the stream's device;
/// writes its descriptor {allocated, aligned, offset, sizes, strides} to out.
Status encodeMemref(const maiaKernel& kernel, int index, const maiaKernelArg& arg,
                    const ArgSpec& spec, Device* device, int64_t* out) {
  auto where = [&] {
    return "argument " + std::to_string(index) + " of kernel '" + kernel.name + "'";
  };
  if (arg.rank != spec.rank)
    return makeError(maiaErrorInvalidLaunch, where(), " has rank ", arg.rank,
                     ", the kernel expects rank ", spec.rank);
  int64_t low = 0, high = 0;  // element offsets reached, relative to offset
  bool empty = false;
  for (int d = 0; d < spec.rank; ++d) {
    if (arg.sizes[d] < 0)
      return makeError(maiaErrorInvalidLaunch, where(), " has negative size ", arg.sizes[d],
                       " in dimension ", d);
    if (spec.strides[d] != kDynamicStride && arg.sizes[d] > 1 &&
        arg.strides[d] != spec.strides[d])
      return makeError(maiaErrorInvalidLaunch, where(), " has stride ", arg.strides[d],
                       " in dimension ", d, ", the kernel was compiled for stride ",
                       spec.strides[d]);
    if (arg.sizes[d] == 0) empty = true;
    int64_t reach = (arg.sizes[d] - 1) * arg.strides[d];
    (reach < 0 ? low : high) += reach;
  }
  void* alias = nullptr;
  if (!empty) {
    Device* owner = deviceOwning(arg.data);
    if (owner == nullptr)
      return makeError(maiaErrorInvalidLaunch, where(), " (", arg.data,
                       ") is not device memory");
    if (owner != device)
      return makeError(maiaErrorInvalidLaunch, where(), " is on maia:", owner->index(),
                       " but the stream is on maia:", device->index());
    size_t element = dtypeSize(arg.dtype);
    int64_t first = arg.offset + low, last = arg.offset + high;
    if (first < 0)
      return makeError(maiaErrorInvalidLaunch, where(), " reaches element ", first,
                       " before its data pointer");
    uintptr_t base = 0;
    size_t size = 0;
    auto* start = static_cast<char*>(arg.data) + first * static_cast<int64_t>(element);
    const size_t bytes = static_cast<size_t>(last - first + 1) * element;
    // The argument's name is built only to report an error: a string per
    // memref would be a heap allocation on every launch.
    if (!owner->arena().findAllocation(start, bytes, "", &base, &size).ok())
      return owner->arena().findAllocation(start, bytes, where().c_str(), &base, &size);
    alias = owner->arena().hostAlias(arg.data);
  }
  // The view's offset is folded into the aligned pointer and the descriptor's
  // offset is 0: a kernel whose memref type has the identity layout (static
  // offset 0, what Inductor emits) and one that reads a dynamic offset then
  // both address the view's first element. The verifier refuses kernel
  // arguments with a static non-zero offset.
  auto allocated = reinterpret_cast<int64_t>(alias);
  int64_t aligned = allocated;
  if (alias != nullptr)
    aligned += arg.offset * static_cast<int64_t>(dtypeSize(arg.dtype));
  *out++ = allocated;
  *out++ = aligned;
  *out++ = 0;
  for (int d = 0; d < spec.rank; ++d) *out++ = arg.sizes[d];
  for (int d = 0; d < spec.rank; ++d) *out++ = arg.strides[d];
  return {};
}

Status launch(maiaKernel_t handle, const int64_t grid[3], const maiaKernelArg* args,
              int num_args, maiaStream_t stream_handle) {
  std::shared_ptr<Module> module;
  MAIA_RETURN_IF_ERROR(lookupKernel(handle, &module));
  const maiaKernel& kernel = *handle;
  if (grid == nullptr) return makeError(maiaErrorInvalidValue, "the grid is NULL");
  for (int d = 0; d < 3; ++d) {
    if (grid[d] < 1)
      return makeError(maiaErrorInvalidLaunch, "grid (", grid[0], ", ", grid[1], ", ", grid[2],
                       ") of kernel '", kernel.name,
                       "' has no programs: every dimension must be at least 1");
  }
  if (grid[0] > (int64_t{1} << 40) / grid[1] / grid[2])
    return makeError(maiaErrorInvalidLaunch, "grid of kernel '", kernel.name,
                     "' has more than 2^40 programs");
  if (num_args != static_cast<int>(kernel.args.size()))
    return makeError(maiaErrorInvalidLaunch, "kernel '", kernel.name, "' takes ",
                     kernel.args.size(), " arguments, the launch passes ", num_args);
  if (num_args > 0 && args == nullptr)
    return makeError(maiaErrorInvalidValue, "the argument array is NULL");
  std::shared_ptr<Stream> stream;
  MAIA_RETURN_IF_ERROR(resolveStream(stream_handle, &stream));

  size_t words = 0;
  for (const ArgSpec& spec : kernel.args) words += argumentWords(spec);
  int64_t programs = grid[0] * grid[1] * grid[2];
  int64_t chunks = std::min<int64_t>(programs, scheduler().cores());
  auto command = std::make_unique<KernelCommand>(std::move(module), &kernel, grid, chunks, words,
                                                 static_cast<size_t>(num_args));
  size_t offset = 0;
  for (int i = 0; i < num_args; ++i) {
    const ArgSpec& spec = kernel.args[i];
    const maiaKernelArg& arg = args[i];
    if (arg.kind != spec.kind)
      return makeError(maiaErrorInvalidLaunch, "argument ", i, " of kernel '", kernel.name,
                       "' must be a ", spec.kind == maiaArgMemref ? "memref" : "scalar",
                       ", the launch passes a ", arg.kind == maiaArgMemref ? "memref" : "scalar");
    if (arg.dtype != spec.dtype)
      return makeError(maiaErrorInvalidLaunch, "argument ", i, " of kernel '", kernel.name,
                       "' has dtype ", dtypeName(arg.dtype), ", the kernel expects ",
                       dtypeName(spec.dtype));
    int64_t* out = command->bindArgument(i, offset);
    offset += argumentWords(spec);
    if (spec.kind == maiaArgScalar) {
      encodeScalar(arg, out);
      continue;
    }
    MAIA_RETURN_IF_ERROR(encodeMemref(kernel, i, arg, spec, stream->device, out));
  }
  return enqueue(stream.get(), std::move(command));
}

}  // namespace
}  // namespace maia::driver

using namespace maia::driver;

extern "C" maiaError_t maiaLaunchKernel(maiaKernel_t kernel, const int64_t grid[3],
                                        const maiaKernelArg* args, int num_args,
                                        maiaStream_t stream) {
  MAIA_API_ENTER();
  return report(launch(kernel, grid, args, num_args, stream));
}
