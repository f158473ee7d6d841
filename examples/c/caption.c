/* caption MODEL_DIR IMAGE [PROMPT]: captions an image with the smolvlm C API and prints the caption
 * alone on stdout, with the defaults of `smolvlm caption` (greedy, 256 new tokens at most, images
 * split as the model's preprocessor config says). Build against an installed engine with
 *   cc caption.c $(pkg-config --cflags --libs smolvlm) -o caption
 * or find_package(smolvlm) and target_link_libraries(caption smolvlm::smolvlm).
 * With SMOLVLM_PRINT_IDS set, the generated token ids follow on stderr, one line. */
#include <smolvlm.h>
#include <stdio.h>
#include <stdlib.h>

static int fail(const char* what, smolvlm_status status) {
  fprintf(stderr, "caption: %s: %s: %s\n", what, smolvlm_status_name(status), smolvlm_last_error());
  return (int)status;
}

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    fprintf(stderr, "usage: %s MODEL_DIR IMAGE [PROMPT]\n", argv[0]);
    return 2;
  }
  smolvlm_model* model = NULL;
  smolvlm_status st = smolvlm_model_load(argv[1], NULL, &model);
  if (st != SMOLVLM_OK) return fail("loading the model", st);

  /* One user message: the image, then the question. */
  smolvlm_part parts[2] = {{0}};
  parts[0].kind = SMOLVLM_PART_IMAGE;
  parts[0].image.kind = SMOLVLM_IMAGE_PATH;
  parts[0].image.path = argv[2];
  parts[1].kind = SMOLVLM_PART_TEXT;
  parts[1].text = argc == 4 ? argv[3] : "Describe this image.";
  smolvlm_message message = {SMOLVLM_ROLE_USER, parts, 2};

  smolvlm_request request;
  smolvlm_request_init(&request);
  request.messages = &message;
  request.n_messages = 1;

  smolvlm_result result;
  st = smolvlm_generate(model, &request, &result);
  if (st != SMOLVLM_OK) {
    smolvlm_model_free(model);
    return fail("captioning", st);
  }
  printf("%s\n", result.text);
  if (getenv("SMOLVLM_PRINT_IDS")) {
    for (size_t i = 0; i < result.n_tokens; ++i) fprintf(stderr, "%s%d", i ? " " : "", result.token_ids[i]);
    fprintf(stderr, "\n");
  }
  smolvlm_result_free(&result);
  smolvlm_model_free(model);
  return 0;
}
