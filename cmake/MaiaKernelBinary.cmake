# maia_add_host_kernel_binary(<name> SOURCES <src>...)
#
# Builds a MAIA kernel binary (<name>.maiabin) from C/C++ sources with the
# host compiler. Until (and besides) the MLIR compiler, this is how tests,
# the demo and benchmarks get kernels: the sources follow the kernel ABI of
# DESIGN section 5 and embed their metadata JSON in section .maia.meta (see
# runtime/driver/include/maia/kernel_abi.h).
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

# maia_add_generated_kernel_binary(<name> GENERATOR <script.py> OUTPUTS <file>...)
#
# A kernel binary whose sources a Python generator writes into gen/ (the
# OUTPUTS, plus metadata.gen.cpp) from its kernel table, using
# runtime/kernels/kernel_binary_gen.py; built for x86-64-v3 with the eager
# kernels' headers (scalar types) on the path.
function(maia_add_generated_kernel_binary name)
  cmake_parse_arguments(ARG "" "GENERATOR" "OUTPUTS" ${ARGN})
  set(gen_dir ${CMAKE_CURRENT_BINARY_DIR}/gen)
  list(TRANSFORM ARG_OUTPUTS PREPEND ${gen_dir}/)
  list(APPEND ARG_OUTPUTS ${gen_dir}/metadata.gen.cpp)
  find_package(Python3 REQUIRED COMPONENTS Interpreter)
  add_custom_command(
    OUTPUT ${ARG_OUTPUTS}
    COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/${ARG_GENERATOR} ${gen_dir}
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${ARG_GENERATOR}
            ${PROJECT_SOURCE_DIR}/runtime/kernels/kernel_binary_gen.py
    COMMENT "Generating the sources of ${name}")
  maia_add_host_kernel_binary(${name}
    SOURCES ${ARG_OUTPUTS}
    COMPILE_OPTIONS -march=x86-64-v3 -fno-math-errno)
  target_include_directories(${name} PRIVATE
    ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/runtime/kernels/eager)
endfunction()
