# The installed engine: libsmolvlm.so (SONAME libsmolvlm.so.0.<minor>) exporting only the smolvlm_*
# C functions, libsmolvlm.a holding every module, include/smolvlm.h (+ smolvlm.hpp), a pkg-config file
# and a CMake package (find_package(smolvlm) -> smolvlm::smolvlm, smolvlm::smolvlm_static).
include(GNUInstallDirs)

# Before 1.0 a minor version may change the ABI (a struct the library fills grows), so the SONAME
# carries it: a program built against 0.2 never loads 0.3.
set(SMOLVLM_SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
set(smolvlm_modules smolvlm_api smolvlm_runtime smolvlm_model smolvlm_image smolvlm_text smolvlm_kernels
    smolvlm_hub smolvlm_io smolvlm_core)

# The shared library: the API's objects plus what they reach in the module archives.
add_library(smolvlm_shared SHARED ${CMAKE_SOURCE_DIR}/cmake/empty.c)
target_link_libraries(smolvlm_shared PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,smolvlm_api>" smolvlm_runtime smolvlm_hub)
target_link_options(smolvlm_shared PRIVATE -Wl,--version-script=${CMAKE_SOURCE_DIR}/cmake/smolvlm.map -Wl,--no-undefined)
set_target_properties(smolvlm_shared PROPERTIES OUTPUT_NAME smolvlm VERSION ${PROJECT_VERSION}
                      SOVERSION ${SMOLVLM_SOVERSION} LINK_DEPENDS ${CMAKE_SOURCE_DIR}/cmake/smolvlm.map
                      LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)

# The static library: every module archive merged into one (an ar MRI script).
set(static_lib ${CMAKE_BINARY_DIR}/lib/libsmolvlm.a)
set(mri_lines "CREATE ${static_lib}")
foreach(m ${smolvlm_modules})
  string(APPEND mri_lines "\nADDLIB $<TARGET_FILE:${m}>")
endforeach()
file(GENERATE OUTPUT ${CMAKE_BINARY_DIR}/libsmolvlm.mri CONTENT "${mri_lines}\nSAVE\nEND\n")
set(module_files)
foreach(m ${smolvlm_modules})
  list(APPEND module_files $<TARGET_FILE:${m}>)
endforeach()
add_custom_command(OUTPUT ${static_lib}
                   COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/lib
                   COMMAND ${CMAKE_COMMAND} -E rm -f ${static_lib}
                   COMMAND ${CMAKE_COMMAND} -DAR=${CMAKE_AR} -DMRI=${CMAKE_BINARY_DIR}/libsmolvlm.mri
                           -P ${CMAKE_SOURCE_DIR}/cmake/merge_archives.cmake
                   COMMAND ${CMAKE_RANLIB} ${static_lib}
                   DEPENDS ${smolvlm_modules} ${CMAKE_BINARY_DIR}/libsmolvlm.mri
                   COMMENT "Merging the module archives into libsmolvlm.a" VERBATIM)
add_custom_target(smolvlm_static ALL DEPENDS ${static_lib})

# Link flags a static user needs: the Debian libraries the modules use.
set(SMOLVLM_PC_REQUIRES_PRIVATE "libjpeg libpng libwebp libwebpdemux oniguruma libutf8proc libcurl libcrypto zlib")
set(SMOLVLM_STATIC_LIBS "-lgif -lstdc++ -lm -lpthread")

# Both files find the prefix relative to where they are installed, so `cmake --install --prefix P`
# works for any P.
file(RELATIVE_PATH SMOLVLM_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
file(RELATIVE_PATH SMOLVLM_CMAKE_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/cmake/smolvlm /prefix)
configure_file(${CMAKE_SOURCE_DIR}/cmake/smolvlm.pc.in ${CMAKE_BINARY_DIR}/smolvlm.pc @ONLY)
configure_file(${CMAKE_SOURCE_DIR}/cmake/smolvlm-config.cmake.in ${CMAKE_BINARY_DIR}/smolvlm-config.cmake @ONLY)
include(CMakePackageConfigHelpers)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/smolvlm-config-version.cmake VERSION ${PROJECT_VERSION}
                                 COMPATIBILITY SameMinorVersion)

install(TARGETS smolvlm_shared LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${static_lib} DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${CMAKE_SOURCE_DIR}/include/smolvlm.h ${CMAKE_SOURCE_DIR}/include/smolvlm.hpp
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${CMAKE_BINARY_DIR}/smolvlm.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
install(FILES ${CMAKE_BINARY_DIR}/smolvlm-config.cmake ${CMAKE_BINARY_DIR}/smolvlm-config-version.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/smolvlm)
