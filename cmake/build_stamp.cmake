# Writes OUT, the header that says which source this binary was built from:
#   cmake -DSOURCE_DIR=... -DOUT=.../gpuadmit_build_stamp.h -P cmake/build_stamp.cmake
# Run at every build (a target that is always out of date); the file is rewritten only when its
# text changes, so an unchanged checkout recompiles nothing.
#
# The revision: $GPUADMIT_REVISION if set (a build from a tarball, the Dockerfile), else git's
# 12-digit HEAD with "-dirty" when tracked files differ from it, else "unknown".
# The build date: $SOURCE_DATE_EPOCH if set, else the commit's time, so two builds of one commit
# say the same date and an image built from it is reproducible (reproducible-builds.org).
if(DEFINED ENV{GPUADMIT_REVISION} AND NOT "$ENV{GPUADMIT_REVISION}" STREQUAL "")
  set(revision "$ENV{GPUADMIT_REVISION}")
else()
  execute_process(COMMAND git -C ${SOURCE_DIR} rev-parse --short=12 HEAD
                  OUTPUT_VARIABLE revision OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE failed ERROR_QUIET)
  if(failed OR revision STREQUAL "")
    set(revision "unknown")
  else()
    execute_process(COMMAND git -C ${SOURCE_DIR} diff-index --quiet HEAD --
                    RESULT_VARIABLE dirty ERROR_QUIET)
    if(dirty)
      string(APPEND revision "-dirty")
    endif()
  endif()
endif()
if(NOT DEFINED ENV{SOURCE_DATE_EPOCH} OR "$ENV{SOURCE_DATE_EPOCH}" STREQUAL "")
  execute_process(COMMAND git -C ${SOURCE_DIR} log -1 --format=%ct
                  OUTPUT_VARIABLE epoch OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE failed ERROR_QUIET)
  if(NOT failed AND NOT epoch STREQUAL "")
    set(ENV{SOURCE_DATE_EPOCH} "${epoch}")
  endif()
endif()
if(DEFINED ENV{SOURCE_DATE_EPOCH} AND NOT "$ENV{SOURCE_DATE_EPOCH}" STREQUAL "")
  string(TIMESTAMP date "%Y-%m-%dT%H:%M:%SZ" UTC)  # reads SOURCE_DATE_EPOCH
else()
  set(date "unknown")
endif()
set(text "// Written by cmake/build_stamp.cmake at build time; not in the source tree.
#pragma once
#define GPUADMIT_REVISION \"${revision}\"
#define GPUADMIT_BUILD_DATE \"${date}\"
")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${text}")
  file(WRITE ${OUT} "${text}")
endif()
