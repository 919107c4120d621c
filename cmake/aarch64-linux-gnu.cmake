# Cross-compiling backplane for 64-bit Arm Linux (aarch64) on an x86-64 Debian host:
#   cmake -S . -B build-arm -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# The compiler is Debian's gcc-aarch64-linux-gnu; the target's libraries (cmocka, cJSON,
# OpenBLAS) are Debian's arm64 packages installed beside the host's through multiarch
# (dpkg --add-architecture arm64), so they live in /usr/lib/aarch64-linux-gnu and the
# aarch64 loader in /lib/ld-linux-aarch64.so.1. ctest runs every test program through
# qemu-user (CMAKE_CROSSCOMPILING_EMULATOR); QEMU_CPU picks the emulated CPU model.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(BP_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${BP_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${BP_CROSS_TRIPLE}-g++)

# The multiarch root: headers in /usr/include (and /usr/include/aarch64-linux-gnu),
# libraries in /usr/lib/aarch64-linux-gnu. Programs (cmake, pkg-config) are the host's.
set(CMAKE_FIND_ROOT_PATH /usr/${BP_CROSS_TRIPLE})
set(CMAKE_LIBRARY_ARCHITECTURE ${BP_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# pkg-config reads the arm64 .pc files only.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/${BP_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

find_program(BP_QEMU_AARCH64 qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${BP_QEMU_AARCH64})
