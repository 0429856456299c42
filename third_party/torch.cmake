# Locates the PyTorch that the build's Python imports, without find_package(Torch):
# Torch's config guesses the CUDA toolkit from nvcc's folder and fails on the partial
# toolkits of our CPU machines (see shared BUILD-NOTES). We only need headers, a handful
# of libraries and the C++ ABI flag.
execute_process(
  COMMAND "${Python3_EXECUTABLE}" -c
    "import os, torch; print(os.path.dirname(torch.__file__)); print(int(torch._C._GLIBCXX_USE_CXX11_ABI)); print(torch.__version__)"
  OUTPUT_VARIABLE _fc_torch_info OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE _fc_torch_rc)
if(NOT _fc_torch_rc EQUAL 0)
  message(FATAL_ERROR "fusedconv: 'import torch' failed for ${Python3_EXECUTABLE}; install torch first")
endif()
string(REPLACE "\n" ";" _fc_torch_info "${_fc_torch_info}")
list(GET _fc_torch_info 0 FUSEDCONV_TORCH_DIR)
list(GET _fc_torch_info 1 _fc_torch_cxx11_abi)
list(GET _fc_torch_info 2 FUSEDCONV_TORCH_VERSION)
message(STATUS "fusedconv: torch ${FUSEDCONV_TORCH_VERSION} at ${FUSEDCONV_TORCH_DIR}")

set(_fc_torch_lib "${FUSEDCONV_TORCH_DIR}/lib")
add_library(fusedconv_torch INTERFACE)
target_include_directories(fusedconv_torch SYSTEM INTERFACE
  "${FUSEDCONV_TORCH_DIR}/include"
  "${FUSEDCONV_TORCH_DIR}/include/torch/csrc/api/include")
target_compile_definitions(fusedconv_torch INTERFACE _GLIBCXX_USE_CXX11_ABI=${_fc_torch_cxx11_abi})
target_link_libraries(fusedconv_torch INTERFACE
  "${_fc_torch_lib}/libc10.so" "${_fc_torch_lib}/libtorch_cpu.so" "${_fc_torch_lib}/libtorch.so")

# Link the C++ runtime torch uses, libstdc++.so.6, by path ahead of the driver's implicit
# -lstdc++. Where that would resolve to the static libstdc++.a (a missing libstdc++.so dev link,
# or -static-libstdc++ in the environment's flags), the op library would carry a private
# libstdc++ whose locale ids differ from the process's: seen on the lent H200 as a segfault
# in std::ostream formatting inside every TORCH_CHECK message.
execute_process(COMMAND "${CMAKE_CXX_COMPILER}" -print-file-name=libstdc++.so.6
  OUTPUT_VARIABLE FUSEDCONV_LIBSTDCXX OUTPUT_STRIP_TRAILING_WHITESPACE)
if(IS_ABSOLUTE "${FUSEDCONV_LIBSTDCXX}" AND EXISTS "${FUSEDCONV_LIBSTDCXX}")
  target_link_libraries(fusedconv_torch INTERFACE "${FUSEDCONV_LIBSTDCXX}")
else()
  message(WARNING "fusedconv: libstdc++.so.6 not found by ${CMAKE_CXX_COMPILER}; "
                  "the op library may end up with a static libstdc++")
endif()

if(FUSEDCONV_WITH_CUDA)
  add_library(fusedconv_torch_cuda INTERFACE)
  target_link_libraries(fusedconv_torch_cuda INTERFACE fusedconv_torch
    "${_fc_torch_lib}/libc10_cuda.so" "${_fc_torch_lib}/libtorch_cuda.so" CUDA::cudart)
  target_compile_definitions(fusedconv_torch_cuda INTERFACE USE_CUDA FUSEDCONV_WITH_CUDA)
endif()
