// Chat turns in OpenAI's message shape (for --messages): roles system/user/assistant, content a
// string or a list of text and image_url parts, images as local files only.
#pragma once

#include <smolvlm.hpp>

#include <string>

namespace smolvlm::cli {

// Adds the turns of a messages file to `chat`; api::Error(BAD_INPUT) naming the file, the message
// and what is wrong.
void add_messages_file(const std::string& path, api::Chat& chat);
// The same for JSON text already read; `path` names it in messages.
void add_messages_json(const std::string& text, const std::string& path, api::Chat& chat);
const char* messages_help();
// The bytes of a file named on the command line; api::Error(IO) naming it when it cannot be read.
std::string read_text_file(const std::string& path);

}  // namespace smolvlm::cli
