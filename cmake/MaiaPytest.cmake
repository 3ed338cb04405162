# maia_add_pytest_files(PREFIX <name> TIMEOUT <seconds> ENVIRONMENT <var=value>...)
# adds one ctest test per test_*.py of the calling directory (so the ctest
# summary counts them), run by the project's Python after the extension is built.
# Builds other than release import their own torch_maia package overlay
# (MAIA_PYTHON_OVERLAY, runtime/python/CMakeLists.txt) through PYTHONPATH, which
# the test maia_python_overlay checks first; sanitizer builds run each test with
# the sanitizer runtime preloaded (cmake/MaiaSanitizers.cmake).
function(maia_add_pytest_files)
  cmake_parse_arguments(ARG "" "PREFIX;TIMEOUT" "ENVIRONMENT" ${ARGN})
  set(common_environment ${MAIA_SANITIZER_ENVIRONMENT})
  set(fixture "")
  if(MAIA_PYTHON_OVERLAY)
    list(APPEND common_environment PYTHONPATH=${MAIA_PYTHON_OVERLAY})
    set(fixture maia_python_overlay)
    get_property(overlay_checked GLOBAL PROPERTY MAIA_PYTHON_OVERLAY_CHECKED)
    if(NOT overlay_checked)
      set_property(GLOBAL PROPERTY MAIA_PYTHON_OVERLAY_CHECKED ON)
      set(launcher "")
      if(MAIA_SANITIZER_LAUNCHER)
        set(launcher ${MAIA_SANITIZER_LAUNCHER} maia_python_overlay)
      endif()
      add_test(NAME maia_python_overlay
               COMMAND ${launcher} ${MAIA_PYTHON} ${PROJECT_SOURCE_DIR}/tools/sanitizers/check_overlay.py
                       ${MAIA_PYTHON_OVERLAY})
      set_tests_properties(maia_python_overlay PROPERTIES
        ENVIRONMENT "${common_environment}" TIMEOUT 120 FIXTURES_SETUP ${fixture})
    endif()
  endif()
  set(timeout ${ARG_TIMEOUT})
  if(NOT MAIA_SANITIZE STREQUAL "")
    math(EXPR timeout "${timeout} * 3")  # instrumented runtime, instrumented maia-compile
  endif()
  file(GLOB test_files CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/test_*.py)
  foreach(test_file ${test_files})
    get_filename_component(test_name ${test_file} NAME_WE)
    set(environment ${ARG_ENVIRONMENT} ${common_environment})
    string(REPLACE "@TEST@" "${test_name}" environment "${environment}")
    set(launcher "")
    if(MAIA_SANITIZER_LAUNCHER)
      set(launcher ${MAIA_SANITIZER_LAUNCHER} ${ARG_PREFIX}.${test_name})
    endif()
    add_test(NAME ${ARG_PREFIX}.${test_name}
             COMMAND ${launcher} ${MAIA_PYTHON} -m pytest -q -p no:cacheprovider ${test_file}
             WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
    set_tests_properties(${ARG_PREFIX}.${test_name} PROPERTIES
      ENVIRONMENT "${environment}" TIMEOUT ${timeout} DEPENDS maia_python_ext)
    if(fixture)
      set_tests_properties(${ARG_PREFIX}.${test_name} PROPERTIES FIXTURES_REQUIRED ${fixture})
    endif()
  endforeach()
endfunction()
