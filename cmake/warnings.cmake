# One INTERFACE target carries the warning flags; every project target links it.
add_library(gpuadmit_warnings INTERFACE)
target_compile_options(gpuadmit_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                       -Wnon-virtual-dtor -Wold-style-cast -Woverloaded-virtual)
if(GPUADMIT_WERROR)
  target_compile_options(gpuadmit_warnings INTERFACE -Werror)
endif()
