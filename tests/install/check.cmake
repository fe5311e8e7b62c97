# ctest script: builds and runs the consumer project against arenastat, either
# installed into a fresh prefix (MODE=install), installed from a fresh build
# tree in which only what scripts/demo.sh builds was built (MODE=demo: the
# README's install command right after its build command), or as a checkout
# (MODE=subdir).
# WITHOUT_BENCHMARK=ON (MODE=install): the consumer is configured as if Google
# Benchmark were not installed, and must build without arenastat::bench.
#   cmake -DMODE=install|demo|subdir -DSOURCE=<checkout> -DBINARY=<build dir> -DWORK=<scratch>
#         [-DRELWITHDEBINFO_FLAGS=<flags of the tree under test>] [-DWITHOUT_BENCHMARK=ON] -P check.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()
if(MODE STREQUAL "install")
  run(${CMAKE_COMMAND} --install ${BINARY} --prefix ${WORK}/prefix)
  if(WITHOUT_BENCHMARK)
    run(${CMAKE_COMMAND} -S ${SOURCE}/tests/install/consumer -B ${WORK}/build -DCMAKE_PREFIX_PATH=${WORK}/prefix
        -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=TRUE)
    if(NOT last_output MATCHES "consumer: without arenastat::bench")
      message(FATAL_ERROR "without Google Benchmark the package still gave arenastat::bench:\n${last_output}")
    endif()
  else()
    run(${CMAKE_COMMAND} -S ${SOURCE}/tests/install/consumer -B ${WORK}/build -DCMAKE_PREFIX_PATH=${WORK}/prefix)
    if(NOT last_output MATCHES "consumer: with arenastat::bench")
      message(FATAL_ERROR "the installed package did not give arenastat::bench:\n${last_output}")
    endif()
  endif()
elseif(MODE STREQUAL "demo")
  # The configure and build lines of scripts/demo.sh, read from it, into a
  # fresh tree; then the README's `cmake --install`.
  file(STRINGS ${SOURCE}/scripts/demo.sh build_line REGEX "^cmake --build .* --target ")
  if(NOT build_line MATCHES "--target ([^#]*)")
    message(FATAL_ERROR "no 'cmake --build ... --target' line in scripts/demo.sh")
  endif()
  string(STRIP "${CMAKE_MATCH_1}" targets)
  separate_arguments(targets UNIX_COMMAND "${targets}")
  # With the compiler flags of the tree under test (scripts/test.sh builds
  # with line tables only): the same code, compiled as that tree was.
  set(flags "")
  if(NOT "${RELWITHDEBINFO_FLAGS}" STREQUAL "")
    set(flags "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=${RELWITHDEBINFO_FLAGS}")
  endif()
  run(${CMAKE_COMMAND} -S ${SOURCE} -B ${WORK}/tree -DCMAKE_BUILD_TYPE=RelWithDebInfo ${flags})
  run(${CMAKE_COMMAND} --build ${WORK}/tree -j2 --target ${targets})
  run(${CMAKE_COMMAND} --install ${WORK}/tree --prefix ${WORK}/prefix)
  run(${CMAKE_COMMAND} -S ${SOURCE}/tests/install/consumer -B ${WORK}/build -DCMAKE_PREFIX_PATH=${WORK}/prefix)
else()
  run(${CMAKE_COMMAND} -S ${SOURCE}/tests/install/consumer -B ${WORK}/build -DARENASTAT_CHECKOUT=${SOURCE})
endif()
run(${CMAKE_COMMAND} --build ${WORK}/build -j2 --target consumer)
run(${WORK}/build/consumer)
if(NOT last_output MATCHES "consumer: ok")
  message(FATAL_ERROR "consumer printed: ${last_output}")
endif()
if(EXISTS ${WORK}/build/consumer_catch2)   # built where Catch2 is installed
  run(${WORK}/build/consumer_catch2)
endif()
message(STATUS "consumer (${MODE}): ok")
