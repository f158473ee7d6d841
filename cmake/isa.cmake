# Kernels for one instruction set live in files named *_avx2.cpp / *_avx512.cpp and are compiled
# for that set only; the dispatcher picks one at run time, so the binary runs on any x86-64.
# Source file properties belong to the directory that sets them: every directory that builds such
# files calls this on its own sources.
function(smolvlm_isa_compile_options)
  foreach(src ${ARGN})
    if(src MATCHES "_avx512\\.cpp$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS
        "-mavx512f;-mavx512bw;-mavx512vl;-mavx512dq;-mavx512bf16;-mfma;-mf16c;-mavx2")
    elseif(src MATCHES "_avx2\\.cpp$")
      set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "-mavx2;-mfma;-mf16c")
    endif()
  endforeach()
endfunction()
