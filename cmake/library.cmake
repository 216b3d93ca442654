# gpuadmit_library: one static library per source folder, whose include path holds only the
# folders it declares, so an #include that runs against the architecture fails to compile
# instead of passing review (docs/architecture.md draws the arrows).
#
#   gpuadmit_library(gpuadmit_core_plan FOLDER core/plan
#     SOURCES planner.cc placement.cc ...
#     DEPS gpuadmit_core_policy gpuadmit_core_inventory)
#
# Includes are written from the repository root ("core/plan/planner.h"), as everywhere. The
# library's include root is build/include/NAME/, holding one symbolic link, FOLDER -> the source
# folder; it is PUBLIC, so a library sees its own headers and those of every library it declares
# in DEPS (and, through their PUBLIC DEPS, theirs), and nothing else: `core/json` cannot reach
# `core/policy/policy.h` because no path on its command line leads there. PRIVATE_DEPS are for
# what only the .cc files use (third-party parsers): consumers neither see nor inherit them.
#
# FOLDER may also name a single header (core/result.h): without SOURCES the library is INTERFACE.
function(gpuadmit_library name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "FOLDER" "SOURCES;DEPS;PRIVATE_DEPS")
  if(NOT arg_FOLDER)
    message(FATAL_ERROR "gpuadmit_library(${name}): FOLDER is required")
  endif()
  set(root ${PROJECT_BINARY_DIR}/include/${name})
  get_filename_component(parent ${root}/${arg_FOLDER} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${arg_FOLDER} ${root}/${arg_FOLDER} SYMBOLIC)
  if(arg_SOURCES)
    list(TRANSFORM arg_SOURCES PREPEND ${PROJECT_SOURCE_DIR}/${arg_FOLDER}/)
    add_library(${name} STATIC ${arg_SOURCES})
    target_include_directories(${name} PUBLIC ${root})
    target_link_libraries(${name} PUBLIC ${arg_DEPS} PRIVATE ${arg_PRIVATE_DEPS} gpuadmit_warnings)
  else()
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${root})
    target_link_libraries(${name} INTERFACE ${arg_DEPS})
  endif()
endfunction()
