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
