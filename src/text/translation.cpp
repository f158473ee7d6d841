#include "text/translation.h"

#include <cctype>

#include "core/error.h"

namespace smolvlm {

namespace {

constexpr TranslationLanguage kLanguages[] = {
    {"zh", "Chinese", "中文"},          {"en", "English", "英语"},          {"fr", "French", "法语"},
    {"pt", "Portuguese", "葡萄牙语"},   {"es", "Spanish", "西班牙语"},      {"ja", "Japanese", "日语"},
    {"tr", "Turkish", "土耳其语"},      {"ru", "Russian", "俄语"},          {"ar", "Arabic", "阿拉伯语"},
    {"ko", "Korean", "韩语"},           {"th", "Thai", "泰语"},             {"it", "Italian", "意大利语"},
    {"de", "German", "德语"},           {"vi", "Vietnamese", "越南语"},     {"ms", "Malay", "马来语"},
    {"id", "Indonesian", "印尼语"},     {"tl", "Filipino", "菲律宾语"},     {"hi", "Hindi", "印地语"},
    {"zh-Hant", "Traditional Chinese", "繁体中文"}, {"pl", "Polish", "波兰语"}, {"cs", "Czech", "捷克语"},
    {"nl", "Dutch", "荷兰语"},          {"km", "Khmer", "高棉语"},          {"my", "Burmese", "缅甸语"},
    {"fa", "Persian", "波斯语"},        {"gu", "Gujarati", "古吉拉特语"},   {"ur", "Urdu", "乌尔都语"},
    {"te", "Telugu", "泰卢固语"},       {"mr", "Marathi", "马拉地语"},      {"he", "Hebrew", "希伯来语"},
    {"bn", "Bengali", "孟加拉语"},      {"ta", "Tamil", "泰米尔语"},        {"uk", "Ukrainian", "乌克兰语"},
    {"bo", "Tibetan", "藏语"},          {"kk", "Kazakh", "哈萨克语"},       {"mn", "Mongolian", "蒙古语"},
    {"ug", "Uyghur", "维吾尔语"},       {"yue", "Cantonese", "粤语"},
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_chinese(const TranslationLanguage* l) {
  return l && (std::string(l->code) == "zh" || std::string(l->code) == "zh-Hant");
}

}  // namespace

std::string translation_language_codes() {
  std::string s;
  for (const TranslationLanguage& l : kLanguages) s += (s.empty() ? "" : ", ") + std::string(l.code);
  return s;
}

const TranslationLanguage& find_translation_language(const std::string& name) {
  const std::string key = lower(name);
  for (const TranslationLanguage& l : kLanguages)
    if (key == lower(l.code) || key == lower(l.english) || name == l.chinese) return l;
  throw bad_input("language \"" + name + "\" is not one of the model card's (codes: " + translation_language_codes() +
                  "; English or Chinese names work too)");
}

std::string translation_prompt(const std::string& text, const TranslationLanguage& to, const TranslationLanguage* from,
                               const std::vector<TranslationTerm>& terms) {
  if (!terms.empty()) {
    std::string p = "参考下面的翻译：\n";
    for (const TranslationTerm& t : terms) p += t.source + " 翻译成 " + t.target + "\n";
    return p + "\n将以下文本翻译为" + to.chinese + "，注意只需要输出翻译后的结果，不要额外解释：\n" + text;
  }
  if (is_chinese(&to) || is_chinese(from))
    return std::string("将以下文本翻译为") + to.chinese + "，注意只需要输出翻译后的结果，不要额外解释：\n\n" + text;
  return std::string("Translate the following segment into ") + to.english + ", without additional explanation.\n\n" +
         text;
}

}  // namespace smolvlm
