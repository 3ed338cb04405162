// Runs an AOTInductor package compiled for maia from C++, without Python:
//   maia_aoti_run <model.pt2> <cases.pt> [--time <calls>]
// cases.pt (torch.save in Python, tools/bench/aoti_packages.py) holds
// {"inputs": [[tensor, ...], ...], "expected": [tensor, ...]}: each case's
// inputs go to maia:0, run through torch::inductor::AOTIModelPackageLoader
// (which finds maia's runner in its registry), and the first output is
// compared with the expected one. --time N then prints the mean time of N
// calls on the first case ("per_call_us <value>"), device work included.
// Exit status: 0 all cases match, 1 one does not, 2 on an exception.
#include <ATen/DeviceAccelerator.h>
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#include <torch/serialize.h>
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

c10::IValue loadPickle(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  TORCH_CHECK(file, "cannot open ", path);
  std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  return torch::pickle_load(bytes);
}

c10::IValue member(const c10::IValue& dict, const std::string& key) {
  const auto& entries = dict.toGenericDict();
  auto it = entries.find(key);
  TORCH_CHECK(it != entries.end(), "cases file: no '", key, "' entry");
  return it->value();
}

std::vector<at::Tensor> onDevice(const c10::IValue& list, const c10::Device& device) {
  std::vector<at::Tensor> tensors;
  for (const c10::IValue& value : list.toListRef()) tensors.push_back(value.toTensor().to(device));
  return tensors;
}

double perCallMicroseconds(torch::inductor::AOTIModelPackageLoader& loader,
                           const std::vector<at::Tensor>& inputs, int calls) {
  for (int i = 0; i < 10; ++i) loader.run(inputs);  // warm up (kernel loads, weight copies)
  at::accelerator::synchronizeDevice(0);
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < calls; ++i) loader.run(inputs);
  at::accelerator::synchronizeDevice(0);
  const std::chrono::duration<double, std::micro> elapsed =
      std::chrono::steady_clock::now() - start;
  return elapsed.count() / calls;
}

int run(int argc, char** argv) {
  if (argc != 3 && !(argc == 5 && std::string(argv[3]) == "--time")) {
    std::fprintf(stderr, "usage: %s <model.pt2> <cases.pt> [--time <calls>]\n", argv[0]);
    return 2;
  }
  const c10::Device device(c10::DeviceType::PrivateUse1, 0);
  torch::inductor::AOTIModelPackageLoader loader(argv[1], "model", false, 1, device.index());
  const c10::IValue cases = loadPickle(argv[2]);
  const auto inputs = member(cases, "inputs").toListRef();
  const auto expected = member(cases, "expected").toListRef();
  TORCH_CHECK(inputs.size() == expected.size() && !inputs.empty(), "cases file: ",
              inputs.size(), " inputs for ", expected.size(), " expected outputs");
  int failures = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::vector<at::Tensor> outputs = loader.run(onDevice(inputs[i], device));
    const at::Tensor want = expected[i].toTensor();
    const at::Tensor got = outputs.at(0);
    const bool ok = got.device() == device && got.sizes() == want.sizes() &&
                    at::allclose(got.cpu(), want, /*rtol=*/2e-4, /*atol=*/2e-4);
    std::printf("%s  case %zu: output %s on %s\n", ok ? "ok  " : "FAIL", i,
                c10::str(got.sizes()).c_str(), got.device().str().c_str());
    if (!ok) {
      ++failures;
      if (got.sizes() == want.sizes())
        std::printf("      max abs difference %g\n",
                    (got.cpu() - want).abs().max().item<double>());
    }
  }
  if (argc == 5) {
    const double us = perCallMicroseconds(loader, onDevice(inputs[0], device), std::atoi(argv[4]));
    std::printf("per_call_us %.3f\n", us);
  }
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 2;
  }
}
