# What a Python process needs to run our sanitized libraries (the torch_maia
# extension, libmaia_torch, the driver) in a sanitizer build. Python and
# libtorch are not instrumented, so the sanitizer runtime must be the first
# library loaded: it is preloaded. Sets
#   MAIA_SANITIZER_ENVIRONMENT  var=value list for the pytest suites (empty
#                               outside sanitizer builds)
#   MAIA_SANITIZER_LAUNCHER     command prefix (then the test's name) that
#                               collects the reports of the test and of its
#                               children (maia-compile, whose stderr the
#                               plugin discards) and fails on any
set(MAIA_SANITIZER_ENVIRONMENT "")
set(MAIA_SANITIZER_LAUNCHER "")
if(NOT MAIA_SANITIZE STREQUAL "")
  set(supp ${PROJECT_SOURCE_DIR}/tools/sanitizers)
  if(MAIA_SANITIZE STREQUAL "address")
    set(runtime_lib libasan.so)
  else()
    set(runtime_lib libtsan.so)
  endif()
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=${runtime_lib}
                  OUTPUT_VARIABLE runtime_path OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT IS_ABSOLUTE "${runtime_path}" OR NOT EXISTS "${runtime_path}")
    message(FATAL_ERROR "${CMAKE_CXX_COMPILER} does not know ${runtime_lib}")
  endif()
  # libstdc++ too: python does not link it, and the sanitizer looks up the
  # real __cxa_throw when it starts (without it: "CHECK failed ...
  # real___cxa_throw" at the first C++ exception). libubsan needs no
  # preloading: a dependency of our libraries, it works when loaded late.
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so.6
                  OUTPUT_VARIABLE libstdcxx_path OUTPUT_STRIP_TRAILING_WHITESPACE)
  get_filename_component(libstdcxx_path "${libstdcxx_path}" REALPATH)
  list(APPEND MAIA_SANITIZER_ENVIRONMENT "LD_PRELOAD=${runtime_path}:${libstdcxx_path}")
  if(MAIA_SANITIZE STREQUAL "address")
    # detect_leaks=0: CPython and libtorch do not free their globals at exit
    # by design, so LeakSanitizer would report them in every process.
    list(APPEND MAIA_SANITIZER_ENVIRONMENT
      "ASAN_OPTIONS=detect_leaks=0:abort_on_error=0:halt_on_error=1:suppressions=${supp}/asan.supp"
      "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:suppressions=${supp}/ubsan.supp")
  else()
    list(APPEND MAIA_SANITIZER_ENVIRONMENT
      "TSAN_OPTIONS=halt_on_error=0:second_deadlock_stack=1:ignore_noninstrumented_modules=1:suppressions=${supp}/tsan.supp")
  endif()
  set(MAIA_SANITIZER_LAUNCHER ${supp}/run-sanitized.sh ${CMAKE_BINARY_DIR}/sanitizer-logs)
endif()
