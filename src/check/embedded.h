// Files compiled into the binary (assets/check/, see cmake/embed.cmake): what `smolvlm check`
// needs to prove exactness without the reference data.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace smolvlm {

// Bytes of assets/check/<name>, or nullopt.
std::optional<std::span<const uint8_t>> embedded_file(std::string_view name);
std::vector<std::string> embedded_file_names();

}  // namespace smolvlm
