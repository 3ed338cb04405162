#include "MaiaGenerator.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/EmptyTensor.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/CallOnce.h>

#include <cstring>
#include <deque>
#include <mutex>

#include "MaiaFunctions.h"

namespace torch_maia {
namespace {

constexpr int64_t kStateBytes = 2 * sizeof(uint64_t);  // seed, offset

/// SplitMix64 finalizer: decorrelates neighbouring (seed, offset) pairs.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

MaiaGeneratorImpl::MaiaGeneratorImpl(c10::DeviceIndex device_index)
    : c10::GeneratorImpl(c10::Device(c10::DeviceType::PrivateUse1, device_index),
                         c10::DispatchKeySet(c10::DispatchKey::PrivateUse1)),
      seed_(c10::default_rng_seed_val) {}

void MaiaGeneratorImpl::set_current_seed(uint64_t seed) {
  seed_ = seed;
  offset_ = 0;
}

void MaiaGeneratorImpl::set_offset(uint64_t offset) { offset_ = offset; }
uint64_t MaiaGeneratorImpl::get_offset() const { return offset_; }
uint64_t MaiaGeneratorImpl::current_seed() const { return seed_; }

uint64_t MaiaGeneratorImpl::seed() {
  uint64_t random = c10::detail::getNonDeterministicRandom(false);
  set_current_seed(random);
  return random;
}

void MaiaGeneratorImpl::set_state(const c10::TensorImpl& new_state) {
  at::detail::check_rng_state(new_state);
  TORCH_CHECK(new_state.numel() == kStateBytes,
              "a maia generator state is ", kStateBytes, " bytes (seed, offset), got ",
              new_state.numel());
  uint64_t values[2];
  std::memcpy(values, new_state.data(), kStateBytes);
  seed_ = values[0];
  offset_ = values[1];
}

c10::intrusive_ptr<c10::TensorImpl> MaiaGeneratorImpl::get_state() const {
  auto state = at::detail::empty_cpu({kStateBytes}, at::ScalarType::Byte);
  uint64_t values[2] = {seed_, offset_};
  std::memcpy(state.data_ptr(), values, kStateBytes);
  return state.getIntrusivePtr();
}

at::Generator MaiaGeneratorImpl::nextHostGenerator() {
  uint64_t stream_seed = mix(seed_ ^ mix(offset_));
  ++offset_;
  return at::make_generator<at::CPUGeneratorImpl>(stream_seed);
}

std::pair<uint64_t, uint64_t> MaiaGeneratorImpl::nextDeviceStream() {
  return {seed_, offset_++};
}

MaiaGeneratorImpl* MaiaGeneratorImpl::clone_impl() const {
  auto* copy = new MaiaGeneratorImpl(device().index());
  copy->seed_ = seed_;
  copy->offset_ = offset_;
  return copy;
}

const at::Generator& defaultGenerator(c10::DeviceIndex index) {
  static std::once_flag once;
  static std::deque<at::Generator>* generators = nullptr;
  std::call_once(once, [] {
    generators = new std::deque<at::Generator>();  // outlive exit-time users
    for (c10::DeviceIndex i = 0; i < deviceCount(); ++i) {
      generators->push_back(at::make_generator<MaiaGeneratorImpl>(i));
      generators->back().set_current_seed(c10::default_rng_seed_val);
    }
  });
  index = resolveDevice(index);
  return (*generators)[index];
}

at::Generator newGenerator(c10::DeviceIndex index) {
  return at::make_generator<MaiaGeneratorImpl>(resolveDevice(index));
}

}  // namespace torch_maia
