# maia_add_host_kernel_binary(<name> SOURCES <src>...)
#
# Builds a MAIA kernel binary (<name>.maiabin) from C/C++ sources with the
# host compiler. Until (and besides) the MLIR compiler, this is how tests,
# the demo and benchmarks get kernels: the sources follow the kernel ABI of
# DESIGN section 5 and embed their metadata JSON in section .maia.meta (see
# test/runtime/kernels/maia_kernel_abi.h).
function(maia_add_host_kernel_binary name)
  cmake_parse_arguments(ARG "" "" "SOURCES;COMPILE_OPTIONS" ${ARGN})
  add_library(${name} MODULE ${ARG_SOURCES})
  set_target_properties(${name} PROPERTIES
    PREFIX ""
    SUFFIX ".maiabin"
    CXX_STANDARD 20
    CXX_STANDARD_REQUIRED ON
    CXX_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/kernels)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/runtime/driver/include)
  # Kernels are device code: they run on driver threads, so they must not
  # depend on sanitizer runtimes that the loading process may not carry.
  target_compile_options(${name} PRIVATE -O3 -fno-sanitize=all ${ARG_COMPILE_OPTIONS})
  target_link_options(${name} PRIVATE -fno-sanitize=all -Wl,-z,defs
                      -Wl,--no-undefined)
endfunction()
