/* libsmolvlm.so is made of the API's archive (linked whole); a shared library target needs a source. */
typedef int smolvlm_empty_translation_unit;
