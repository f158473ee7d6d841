// The translation prompts of the HY-MT1.5 model card: its languages (code, English and Chinese name)
// and the three templates (terminology, Chinese, English) around the text to translate.
#pragma once

#include <string>
#include <vector>

namespace smolvlm {

struct TranslationLanguage {
  const char* code;
  const char* english;  // the name the English template writes
  const char* chinese;  // the name the Chinese templates write
};

// A model card code, an English name (any case) or a Chinese name; Error(BadInput) naming the
// codes for any other.
const TranslationLanguage& find_translation_language(const std::string& name);

// Every code of the model card, comma separated.
std::string translation_language_codes();

struct TranslationTerm {
  std::string source, target;
};

// The model card's prompt: the terminology template when terms are given, the Chinese one when either
// side is Chinese, the English one otherwise. `from` may be null (it only picks the template).
std::string translation_prompt(const std::string& text, const TranslationLanguage& to, const TranslationLanguage* from,
                               const std::vector<TranslationTerm>& terms);

}  // namespace smolvlm
