# cmake -DAR=... -DMRI=... -P merge_archives.cmake: runs `ar -M` on an MRI script (which names the
# output archive and the archives merged into it).
execute_process(COMMAND ${AR} -M INPUT_FILE ${MRI} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ar -M ${MRI} failed: ${rc}")
endif()
