# FUSEDCONV_CUDA_ARCHS -> nvcc -gencode flags (Torch's CMake ignores CMAKE_CUDA_ARCHITECTURES,
# so we keep one knob of our own).  "90a" is needed for Hopper-only instructions.
set(FUSEDCONV_CUDA_GENCODE "")
foreach(_fc_arch IN LISTS FUSEDCONV_CUDA_ARCHS)
  if(_fc_arch MATCHES "^([0-9]+a?)-ptx$")
    list(APPEND FUSEDCONV_CUDA_GENCODE "-gencode=arch=compute_${CMAKE_MATCH_1},code=compute_${CMAKE_MATCH_1}")
  elseif(_fc_arch MATCHES "^[0-9]+a?$")
    list(APPEND FUSEDCONV_CUDA_GENCODE "-gencode=arch=compute_${_fc_arch},code=sm_${_fc_arch}")
  else()
    message(FATAL_ERROR "fusedconv: bad entry '${_fc_arch}' in FUSEDCONV_CUDA_ARCHS (want e.g. 80, 90a, 90-ptx)")
  endif()
endforeach()
message(STATUS "fusedconv: CUDA targets ${FUSEDCONV_CUDA_ARCHS}")
