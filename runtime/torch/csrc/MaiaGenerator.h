// The maia random number generator: counter-based, one default per device.
//
// Its state is (seed, offset). Each random operation consumes one counter
// value: its random stream is fully determined by (seed, offset), and the
// offset advances. So the same seed gives the same numbers run after run,
// and get_state/set_state replay exactly. Device kernels (dropout) key a
// counter-based generator with (seed, offset) directly; operations that run
// on the host draw from a CPU generator seeded from (seed, offset).
#pragma once

#include <ATen/core/Generator.h>
#include <c10/core/GeneratorImpl.h>

#include <utility>

namespace torch_maia {

class MaiaGeneratorImpl : public c10::GeneratorImpl {
 public:
  explicit MaiaGeneratorImpl(c10::DeviceIndex device_index);

  void set_current_seed(uint64_t seed) override;
  void set_offset(uint64_t offset) override;
  uint64_t get_offset() const override;
  uint64_t current_seed() const override;
  uint64_t seed() override;
  void set_state(const c10::TensorImpl& new_state) override;
  c10::intrusive_ptr<c10::TensorImpl> get_state() const override;
  static c10::DeviceType device_type() { return c10::DeviceType::PrivateUse1; }

  /// A CPU generator determined by (seed, offset), then advances the
  /// offset: the random stream for one operation computed on the host.
  /// The caller holds mutex_.
  at::Generator nextHostGenerator();

  /// The (seed, offset) that key one random operation computed on the
  /// device, then advances the offset. The caller holds mutex_.
  std::pair<uint64_t, uint64_t> nextDeviceStream();

 private:
  MaiaGeneratorImpl* clone_impl() const override;

  uint64_t seed_;
  uint64_t offset_ = 0;
};

/// The default generator of device index (-1: current device).
const at::Generator& defaultGenerator(c10::DeviceIndex index = -1);
at::Generator newGenerator(c10::DeviceIndex index = -1);

}  // namespace torch_maia
