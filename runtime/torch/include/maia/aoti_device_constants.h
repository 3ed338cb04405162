// Spliced into AOTInductor wrappers compiled for maia, after
// torch/csrc/inductor/aoti_runtime/utils.h and maia/aoti.h.
//
// Upstream's model container runs only on the devices it names
// (parse_device_str in aoti_runtime/model_base.h: cpu, cuda, xpu, mps), so
// a maia model runs as a "cpu" container and its constants are loaded into
// host memory. Each model keeps a device copy of every maia constant, made
// at the first run and again whenever the container hands it another host
// tensor (update_constant_buffer + swap_constant_buffer).
#pragma once

#include <vector>

class MaiaDeviceConstants {
 public:
  torch::aot_inductor::ConstantHandle get(size_t index,
                                          const torch::aot_inductor::ConstantHandle& host) {
    if (index >= entries_.size()) entries_.resize(index + 1);
    Entry& entry = entries_[index];
    if (entry.device.get() == nullptr || entry.host != host.get() ||
        entry.host_data != host.data_ptr()) {
      AtenTensorHandle copy = nullptr;
      maia_aoti_check(maia_aoti_constant_to_device(host.get(), &copy), "maia constant");
      entry.device = torch::aot_inductor::RAIIAtenTensorHandle(copy);
      entry.host = host.get();
      entry.host_data = host.data_ptr();
    }
    return torch::aot_inductor::ConstantHandle(entry.device.get());
  }

 private:
  struct Entry {
    AtenTensorHandle host = nullptr;
    void* host_data = nullptr;
    torch::aot_inductor::RAIIAtenTensorHandle device;
  };
  std::vector<Entry> entries_;
};
