# Runs PROGRAM, which must exit 1 and print exactly the message docs/testing.md shows.
execute_process(COMMAND ${PROGRAM} RESULT_VARIABLE rc OUTPUT_VARIABLE out)
set(expected "arenastat::exception_test: test_resource 'example/name_list': after the exception at allocation 2 of the run (limit 1), 5 blocks (390 bytes) in use, 4 blocks (270 bytes) before the run; left by the run: #5 (120 bytes)\n")
if(NOT rc EQUAL 1 OR NOT out STREQUAL expected)
  message(FATAL_ERROR "exit ${rc}, printed:\n${out}\nexpected:\n${expected}")
endif()
