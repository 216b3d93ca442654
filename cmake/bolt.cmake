# The gpuadmit binary laid out by llvm-bolt after each link (cmake/bolt-layout.sh): trained on
# reviews `gpuadmit serve` answers to curl, the blocks they ran packed together. On by default
# only in a Release build, the build the image ships (make release); a developer's link keeps the
# linker's layout. Off, without bolt-16, or when the training fails, the linker's layout stays.
if(CMAKE_BUILD_TYPE STREQUAL "Release")
  set(gpuadmit_bolt_default ON)
else()
  set(gpuadmit_bolt_default OFF)
endif()
option(GPUADMIT_BOLT "Lay out gpuadmit with llvm-bolt (Debian's bolt-16); on in Release builds"
       ${gpuadmit_bolt_default})
# GCC splits each function's cold blocks into a `.cold` fragment (-freorder-blocks-and-
# partition, on at -O2); BOLT's instrumentation of such fragments crashes the instrumented
# binary (a call lands in data), so the training never ran. BOLT does the hot/cold split itself.
if(GPUADMIT_BOLT AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND NOT GPUADMIT_SANITIZE
   AND NOT GPUADMIT_FUZZ)
  add_compile_options(-fno-reorder-blocks-and-partition)
endif()

function(gpuadmit_bolt_layout target)
  if(NOT GPUADMIT_BOLT)
    return()
  endif()
  if(GPUADMIT_SANITIZE OR GPUADMIT_FUZZ)
    return()  # instrumented code: nothing to lay out for speed
  endif()
  find_program(GPUADMIT_LLVM_BOLT llvm-bolt PATHS /usr/lib/llvm-16/bin NO_DEFAULT_PATH)
  find_program(GPUADMIT_CURL curl)  # the training's client
  if(NOT GPUADMIT_LLVM_BOLT OR NOT GPUADMIT_CURL)
    message(WARNING "llvm-bolt or curl not found (Debian's bolt-16 and curl; `make deps` "
                    "installs them): build/gpuadmit keeps the linker's layout, about a sixth "
                    "more CPU a review served. -DGPUADMIT_BOLT=OFF silences this.")
    return()
  endif()
  get_filename_component(tools ${GPUADMIT_LLVM_BOLT} DIRECTORY)
  set_property(GLOBAL PROPERTY GPUADMIT_BOLT_TOOLS ${tools})  # tests/image/bolt_layout_test.sh
  # Relocations kept in the output, so that BOLT may move whole functions.
  target_link_options(${target} PRIVATE -Wl,--emit-relocs)
  # Linked, and so laid out, again when the layout's script or its training changes.
  set(training cmake/bolt-layout.sh cmake/bolt-train/tls.crt cmake/bolt-train/tls.key
      manifests/examples/policy.yaml manifests/examples/demo-cluster.json
      bench/fixtures/pod-review-3k.json bench/fixtures/pod-review-cpu-3k.json
      tests/fixtures/gpu/kubectl-pod-whole-gpu.json tests/fixtures/gpu/kubectl-deployment.json)
  list(TRANSFORM training PREPEND ${PROJECT_SOURCE_DIR}/)
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${training})
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${PROJECT_SOURCE_DIR}/cmake/bolt-layout.sh $<TARGET_FILE:${target}> ${tools}
            ${PROJECT_SOURCE_DIR}
    COMMENT "Laying out ${target} with llvm-bolt (cmake/bolt-layout.sh)"
    VERBATIM)
endfunction()
