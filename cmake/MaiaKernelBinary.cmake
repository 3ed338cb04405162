# maia_add_host_kernel_binary(<name> SOURCES <src>...)
#
# Builds a MAIA kernel binary (<name>.maiabin) from C/C++ sources with the
# host compiler. Besides the MLIR compiler, this is how the eager kernels,
# tests, the demo and benchmarks get kernels: the sources follow the kernel
# ABI of DESIGN section 5 and embed their metadata JSON in section .maia.meta
# (see runtime/driver/include/maia/kernel_abi.h).
function(maia_add_host_kernel_binary name)
  cmake_parse_arguments(ARG "" "" "SOURCES;COMPILE_OPTIONS" ${ARGN})
  add_library(${name} MODULE ${ARG_SOURCES})
  set_target_properties(${name} PROPERTIES
    PREFIX ""
    SUFFIX ".maiabin"
    CXX_STANDARD 20
    CXX_STANDARD_REQUIRED ON
    CXX_VISIBILITY_PRESET hidden
    C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/kernels)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/runtime/driver/include)
  # Kernels are device code: they run on driver threads, so they must not
  # depend on sanitizer runtimes that the loading process may not carry.
  target_compile_options(${name} PRIVATE -O3 -fno-sanitize=all ${ARG_COMPILE_OPTIONS})
  target_link_options(${name} PRIVATE -fno-sanitize=all -Wl,-z,defs
                      -Wl,--no-undefined)
endfunction()

# maia_add_generated_kernel_binary(<name> GENERATOR <script.py> [ISA <level>]
#                                  [OUTPUTS <file>...] [SOURCES <src>...]
#                                  [COMPILE_OPTIONS <option>...])
#
# A product kernel binary whose metadata.gen.cpp, and the OUTPUTS, a Python
# generator writes into gen/<name>/ from its kernel table, through
# runtime/kernels/kernel_binary_gen.py: the one writer of the metadata of
# host-built binaries. The generator runs as `<script.py> <dir> <level>`, so
# the metadata declares the target features of the -march level the binary
# is compiled for (ISA, default x86-64-v3). Hand-written SOURCES are
# compiled with the OUTPUTS, with the eager kernels' headers (scalar types)
# on the path. -fno-trapping-math: kernels never read the floating-point
# exception flags, and without it GCC will not if-convert a float comparison
# (it might trap), so no loop with a clamp or a NaN test vectorizes; results
# are unchanged (no reassociation).
function(maia_add_generated_kernel_binary name)
  cmake_parse_arguments(ARG "" "GENERATOR;ISA" "OUTPUTS;SOURCES;COMPILE_OPTIONS" ${ARGN})
  if(NOT ARG_ISA)
    set(ARG_ISA x86-64-v3)
  endif()
  set(gen_dir ${CMAKE_CURRENT_BINARY_DIR}/gen/${name})
  list(TRANSFORM ARG_OUTPUTS PREPEND ${gen_dir}/)
  list(APPEND ARG_OUTPUTS ${gen_dir}/metadata.gen.cpp)
  find_package(Python3 REQUIRED COMPONENTS Interpreter)
  add_custom_command(
    OUTPUT ${ARG_OUTPUTS}
    COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/${ARG_GENERATOR} ${gen_dir}
            ${ARG_ISA}
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/${ARG_GENERATOR}
            ${PROJECT_SOURCE_DIR}/runtime/kernels/kernel_binary_gen.py
    COMMENT "Generating the sources of ${name}")
  maia_add_host_kernel_binary(${name}
    SOURCES ${ARG_SOURCES} ${ARG_OUTPUTS}
    COMPILE_OPTIONS -march=${ARG_ISA} -fno-math-errno -fno-trapping-math ${ARG_COMPILE_OPTIONS})
  # compiler/include: maia/Transforms/MathCoefficients.h, the polynomials the
  # compiled kernels share with the eager ones (plain constexpr data).
  target_include_directories(${name} PRIVATE
    ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/runtime/kernels/eager
    ${PROJECT_SOURCE_DIR}/compiler/include)
endfunction()
