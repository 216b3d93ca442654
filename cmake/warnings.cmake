# One INTERFACE target carries the warning flags; every project target links it.
# -Wno-missing-field-initializers: designated initializers ({.keep = &trie}) leave out the
# members that have defaults on purpose; -Wextra would flag every one.
add_library(gpuadmit_warnings INTERFACE)
target_compile_options(gpuadmit_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                       -Wnon-virtual-dtor -Wold-style-cast -Woverloaded-virtual
                       -Wno-missing-field-initializers)
if(GPUADMIT_WERROR)
  target_compile_options(gpuadmit_warnings INTERFACE -Werror)
endif()
# GPUADMIT_DEBUG_INFO=lines: -g1 after the build type's -g, so it wins. Function names and line
# tables only: a sanitizer's or a crash's backtrace keeps its file:line, and every file compiles
# about a fifth faster (CI builds this way; see the Makefile).
if(GPUADMIT_DEBUG_INFO STREQUAL "lines")
  target_compile_options(gpuadmit_warnings INTERFACE -g1)
elseif(NOT GPUADMIT_DEBUG_INFO STREQUAL "full")
  message(FATAL_ERROR "GPUADMIT_DEBUG_INFO is '${GPUADMIT_DEBUG_INFO}': use full or lines")
endif()

# ASan + UBSan for every project target (a second build directory: make test-sanitize), through
# an INTERFACE target the warnings target carries. UBSan stops at the first finding, so a test
# fails instead of printing and going on.
add_library(gpuadmit_sanitizers INTERFACE)
if(GPUADMIT_SANITIZE)
  target_compile_options(gpuadmit_sanitizers INTERFACE -fsanitize=address,undefined
                         -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  target_link_options(gpuadmit_sanitizers INTERFACE -fsanitize=address,undefined)
endif()
# libFuzzer (clang only; make fuzz): every target gets the fuzzer's coverage instrumentation and
# the sanitizers; the fuzz targets themselves link the fuzzer's main (tests/fuzz).
if(GPUADMIT_FUZZ)
  target_compile_options(gpuadmit_sanitizers INTERFACE
                         -fsanitize=fuzzer-no-link,address,undefined
                         -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  target_link_options(gpuadmit_sanitizers INTERFACE -fsanitize=address,undefined)
endif()
target_link_libraries(gpuadmit_warnings INTERFACE gpuadmit_sanitizers)
