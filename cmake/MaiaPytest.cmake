# maia_add_pytest_files(PREFIX <name> TIMEOUT <seconds> ENVIRONMENT <var=value>...)
# adds one ctest test per test_*.py of the calling directory (so the ctest
# summary counts them), run by the project's Python after the extension is built.
function(maia_add_pytest_files)
  cmake_parse_arguments(ARG "" "PREFIX;TIMEOUT" "ENVIRONMENT" ${ARGN})
  file(GLOB test_files CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/test_*.py)
  foreach(test_file ${test_files})
    get_filename_component(test_name ${test_file} NAME_WE)
    set(environment ${ARG_ENVIRONMENT})
    string(REPLACE "@TEST@" "${test_name}" environment "${environment}")
    add_test(NAME ${ARG_PREFIX}.${test_name}
             COMMAND ${MAIA_PYTHON} -m pytest -q -p no:cacheprovider ${test_file}
             WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
    set_tests_properties(${ARG_PREFIX}.${test_name} PROPERTIES
      ENVIRONMENT "${environment}" TIMEOUT ${ARG_TIMEOUT} DEPENDS maia_python_ext)
  endforeach()
endfunction()
