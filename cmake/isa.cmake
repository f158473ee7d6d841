# Kernels for one instruction set live in files named *_avx2.cpp / *_avxvnni.cpp / *_avx512.cpp
# (x86-64) or *_neon.cpp / *_dotprod.cpp (aarch64) and are compiled for that set only, and only for a
# target of that architecture; the dispatcher (src/kernels/cpu.h) picks one at run time, so the binary runs on any
# CPU of the architecture. Other targets build the portable (scalar) path alone.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64|x64)$")
  set(SMOLVLM_ISA x86_64)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  set(SMOLVLM_ISA aarch64)
else()
  set(SMOLVLM_ISA portable)
endif()

# Removes from the list variable `var` the ISA files this target cannot build.
function(smolvlm_isa_filter var)
  set(kept)
  foreach(src ${${var}})
    if(src MATCHES "_(avx2|avxvnni|avx512)\\.cpp$" AND NOT SMOLVLM_ISA STREQUAL "x86_64")
      continue()
    endif()
    if(src MATCHES "_(neon|dotprod)\\.cpp$" AND NOT SMOLVLM_ISA STREQUAL "aarch64")
      continue()
    endif()
    list(APPEND kept ${src})
  endforeach()
  set(${var} ${kept} PARENT_SCOPE)
endfunction()

# Source file properties belong to the directory that sets them: every directory that builds such
# files calls this on its own sources. NEON is part of Armv8.0: the *_neon.cpp files need no flag;
# *_dotprod.cpp take Armv8.2's sdot (called only where the CPU has it).
function(smolvlm_isa_compile_options)
  foreach(src ${ARGN})
    if(SMOLVLM_ISA STREQUAL "aarch64" AND src MATCHES "_dotprod\\.cpp$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-march=armv8.2-a+dotprod")
    endif()
    if(NOT SMOLVLM_ISA STREQUAL "x86_64")
      continue()
    endif()
    if(src MATCHES "_avx512\\.cpp$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS
        "-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512bf16;-mfma;-mf16c;-mavx2")
    elseif(src MATCHES "_avxvnni\\.cpp$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c;-mavxvnni")
    elseif(src MATCHES "_avx2\\.cpp$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
    endif()
  endforeach()
endfunction()
