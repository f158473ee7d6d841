# Cross-building for aarch64 Linux with Debian's GCC (g++-aarch64-linux-gnu) against an arm64 sysroot
# made by scripts/arm64-sysroot.sh; the tests run through qemu user-mode (qemu-user-static):
#   scripts/arm64-sysroot.sh build-arm64/sysroot
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# The sysroot is SMOLVLM_SYSROOT (a cache variable or the environment), else build-arm64/sysroot of
# the source tree.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

if(NOT SMOLVLM_SYSROOT)
  if(DEFINED ENV{SMOLVLM_SYSROOT})
    set(SMOLVLM_SYSROOT $ENV{SMOLVLM_SYSROOT})
  else()
    get_filename_component(SMOLVLM_SYSROOT ${CMAKE_CURRENT_LIST_DIR}/../build-arm64/sysroot ABSOLUTE)
  endif()
endif()
if(NOT EXISTS ${SMOLVLM_SYSROOT}/usr/include/aarch64-linux-gnu)
  message(FATAL_ERROR "no arm64 sysroot at ${SMOLVLM_SYSROOT}: run scripts/arm64-sysroot.sh first")
endif()
# try_compile projects read this file again: hand them the same sysroot.
set(SMOLVLM_SYSROOT ${SMOLVLM_SYSROOT} CACHE PATH "the arm64 sysroot (scripts/arm64-sysroot.sh)")
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES SMOLVLM_SYSROOT)

set(CMAKE_SYSROOT ${SMOLVLM_SYSROOT})
set(CMAKE_FIND_ROOT_PATH ${SMOLVLM_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(ENV{PKG_CONFIG_SYSROOT_DIR} ${SMOLVLM_SYSROOT})
set(ENV{PKG_CONFIG_LIBDIR} ${SMOLVLM_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${SMOLVLM_SYSROOT}/usr/share/pkgconfig)

# Tests (gtest discovery included) run under qemu with the sysroot's libraries, on a CPU with NEON
# (and fp16, bf16, dotprod) but without SVE: the baseline every arm64 CPU has, as the kernels assume.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static;-cpu;max,sve=off;-L;${SMOLVLM_SYSROOT})
