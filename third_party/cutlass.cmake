# Locates the CUTLASS/CuTe headers. Default: the pinned nvidia-cutlass wheel, found
# without importing it (importing pulls in numpy/scipy).
set(FUSEDCONV_CUTLASS_VERSION "4.2.0")
set(FUSEDCONV_CUTLASS_DIR "" CACHE PATH
    "CUTLASS source root (contains include/cute); default: the nvidia-cutlass wheel")

if(NOT FUSEDCONV_CUTLASS_DIR)
  execute_process(
    COMMAND "${Python3_EXECUTABLE}" -c
      "import importlib.util as u; s = u.find_spec('cutlass_library'); print(s.submodule_search_locations[0] if s else '')"
    OUTPUT_VARIABLE _fc_cutlass_pkg OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _fc_cutlass_pkg)
    message(FATAL_ERROR "fusedconv: CUTLASS not found. Install it with "
      "'pip install nvidia-cutlass==${FUSEDCONV_CUTLASS_VERSION}.0' or pass -DFUSEDCONV_CUTLASS_DIR=<root>")
  endif()
  set(FUSEDCONV_CUTLASS_DIR "${_fc_cutlass_pkg}/source")
endif()

set(_fc_cutlass_version_h "${FUSEDCONV_CUTLASS_DIR}/include/cutlass/version.h")
if(NOT EXISTS "${FUSEDCONV_CUTLASS_DIR}/include/cute/tensor.hpp" OR NOT EXISTS "${_fc_cutlass_version_h}")
  message(FATAL_ERROR "fusedconv: ${FUSEDCONV_CUTLASS_DIR} holds no CUTLASS/CuTe headers")
endif()
file(STRINGS "${_fc_cutlass_version_h}" _fc_v REGEX "#define CUTLASS_(MAJOR|MINOR|PATCH) [0-9]+")
string(REGEX REPLACE ".*CUTLASS_MAJOR ([0-9]+).*" "\\1" _fc_major "${_fc_v}")
string(REGEX REPLACE ".*CUTLASS_MINOR ([0-9]+).*" "\\1" _fc_minor "${_fc_v}")
string(REGEX REPLACE ".*CUTLASS_PATCH ([0-9]+).*" "\\1" _fc_patch "${_fc_v}")
set(FUSEDCONV_CUTLASS_FOUND_VERSION "${_fc_major}.${_fc_minor}.${_fc_patch}")
if(NOT FUSEDCONV_CUTLASS_FOUND_VERSION VERSION_EQUAL FUSEDCONV_CUTLASS_VERSION)
  message(WARNING "fusedconv is pinned to CUTLASS ${FUSEDCONV_CUTLASS_VERSION}, found "
                  "${FUSEDCONV_CUTLASS_FOUND_VERSION} at ${FUSEDCONV_CUTLASS_DIR}")
endif()
message(STATUS "fusedconv: CUTLASS ${FUSEDCONV_CUTLASS_FOUND_VERSION} at ${FUSEDCONV_CUTLASS_DIR}")

add_library(fusedconv_cutlass INTERFACE)
target_include_directories(fusedconv_cutlass SYSTEM INTERFACE
  "${FUSEDCONV_CUTLASS_DIR}/include" "${FUSEDCONV_CUTLASS_DIR}/tools/util/include")
