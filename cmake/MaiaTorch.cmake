# Finds the torch of MAIA_PYTHON (the project's .venv) for the PyTorch
# integration. Included from the top level so that torch's imported targets
# are visible to runtime/torch, runtime/python and test/torch alike.
# Autoload off: torch_maia itself may not be built yet.
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env TORCH_DEVICE_BACKEND_AUTOLOAD=0
          "${MAIA_PYTHON}" -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
  OUTPUT_VARIABLE MAIA_TORCH_CMAKE_PREFIX OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE torch_found)
if(NOT torch_found EQUAL 0)
  message(FATAL_ERROR "cannot import torch with ${MAIA_PYTHON}: run tools/setup.sh first")
endif()
list(APPEND CMAKE_PREFIX_PATH "${MAIA_TORCH_CMAKE_PREFIX}")
find_package(Torch REQUIRED CONFIG)

