// The tiny SmolVLM against two of its HF goldens, on every kernel path this CPU can run: per-stage
// max abs error (vision, connector, prefill logits, step logits) and greedy ids, plus the largest
// difference between paths.
#include <algorithm>
#include <cmath>
#include <exception>
#include <map>

#include "check/stages.h"
#include "core/error.h"
#include "core/sha256.h"
#include "image/idefics3.h"
#include "image/image.h"
#include "io/npy.h"
#include "kernels/cpu.h"
#include "runtime/generate.h"
#include "runtime/session.h"
#include "runtime/vision_input.h"

namespace smolvlm {

namespace {

struct CaseOutputs {
  std::vector<float> vision, connector, prefill, steps;
  std::vector<int64_t> ids;
};

struct StageRows {
  CheckRow vision, connector, prefill, steps, ids;
};

double max_abs_diff(const std::vector<float>& a, const float* b, size_t n, const std::string& what) {
  if (a.size() != n)
    throw bad_input(what + ": " + std::to_string(a.size()) + " values, the reference has " + std::to_string(n));
  double m = 0;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(double(a[i]) - double(b[i])));
  return m;
}

NpyArray golden(const CheckAssets& assets, const std::string& dir, const std::string& name) {
  return parse_npy(assets.bytes(dir + "/" + name), dir + "/" + name);
}

void compare(CheckRow& row, double err, const std::string& label) {
  ++row.cases;
  row.max_error = std::max(row.max_error, err);
  if (!(err <= row.bound)) record_failure(row, label + ": max error " + std::to_string(err));
}

// Runs one golden case on the active kernel path.
CaseOutputs run_case(const Model& model, const CheckAssets& assets, const std::string& dir,
                     const nlohmann::json& c, ThreadPool& pool, CheckRow& pixels_row) {
  std::vector<float> pixel_values;
  int64_t tiles = 0;
  for (const auto& name : c.at("images")) {
    std::string bytes = assets.bytes(dir + "/" + std::string(name));
    RgbImage img = load_image_from_memory(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), name);
    PreprocessedImage p = preprocess_idefics3(img, *model.config().image_processor, c.at("do_image_splitting").get<bool>());
    pixel_values.insert(pixel_values.end(), p.pixel_values.begin(), p.pixel_values.end());
    tiles += p.num_tiles;
  }
  ++pixels_row.cases;
  if (sha256_hex(pixel_values.data(), pixel_values.size() * sizeof(float)) != c.at("pixel_values_data_sha256"))
    record_failure(pixels_row, dir + ": pixel_values differ from the reference");

  CaseOutputs out;
  ImageFeatures f = encode_images(model, pixel_values.data(), tiles, pool, true);
  out.vision = f.vision_last_hidden;
  out.connector = f.image_hidden_states;
  std::vector<int64_t> ids = c.at("input_ids").get<std::vector<int64_t>>();
  std::vector<float> emb = prompt_embeddings(model, ids, f);
  int64_t max_new = c.at("max_new_tokens");
  Session session(model, pool, static_cast<int64_t>(ids.size()) + max_new + 1);
  auto logits = session.prefill_embeddings(emb.data(), static_cast<int64_t>(ids.size()));
  out.prefill.assign(logits.begin(), logits.end());
  GenerationOptions go;
  go.max_new_tokens = max_new;
  go.eos_token_ids = c.at("eos_token_ids").get<std::vector<int64_t>>();
  go.keep_step_logits = true;
  GenerationResult r = generate(session, ids, go);
  out.ids = r.ids;
  out.steps = r.step_logits;
  return out;
}

// Step logits: the reference keeps the top 32 (ids + values) and a vocabulary-wide probe (every 61st).
double step_error(const CaseOutputs& o, const NpyArray& topk_ids, const NpyArray& topk_values,
                  const NpyArray& probe, int64_t vocab) {
  int64_t steps = topk_ids.shape.at(0), k = topk_ids.shape.at(1), p = probe.shape.at(1);
  if (static_cast<int64_t>(o.steps.size()) < steps * vocab)
    throw bad_input("step logits: " + std::to_string(o.steps.size() / std::max<int64_t>(vocab, 1)) +
                    " steps, the reference has " + std::to_string(steps));
  double m = 0;
  const int64_t* ids = topk_ids.data<int64_t>();
  const float* vals = topk_values.data<float>();
  const float* pr = probe.data<float>();
  for (int64_t s = 0; s < steps; ++s) {
    const float* row = o.steps.data() + s * vocab;
    for (int64_t j = 0; j < k; ++j) m = std::max(m, std::fabs(double(row[ids[s * k + j]]) - vals[s * k + j]));
    for (int64_t j = 0; j < p; ++j) m = std::max(m, std::fabs(double(row[j * 61]) - pr[s * p + j]));
  }
  return m;
}

}  // namespace

void check_model(const CheckAssets& assets, int threads, CheckReport& report) {
  static const char* cases[] = {"goldens/tied_nosplit_square", "goldens/tied_two_images"};
  CheckRow pixels_row = make_row("pixel values", true);
  std::vector<CheckRow> rows;
  std::map<std::string, CaseOutputs> first_path;  // outputs of the first path, per case
  CheckRow agree = make_row("paths agree", false, "", kCheckBound);
  try {
    TempDir dir;
    assets.extract_model(dir.path());
    auto model = Model::load(dir.path());
    ThreadPool pool(std::max(1, threads));
    for (KernelPath path : supported_kernel_paths()) {
      set_kernel_path(path);
      report.paths_run.push_back(kernel_path_name(path));
      const char* pn = kernel_path_name(path);
      StageRows r{make_row("vision", false, pn, kCheckBound), make_row("connector", false, pn, kCheckBound),
                  make_row("prefill logits", false, pn, kCheckBound), make_row("step logits", false, pn, kCheckBound),
                  make_row("greedy ids", true, pn)};
      for (const char* dir_name : cases) {
        std::string d = dir_name;
        try {
          nlohmann::json c = assets.json(d + "/case.json");
          CaseOutputs o = run_case(*model, assets, d, c, pool, pixels_row);
          auto vh = golden(assets, d, "vision_last_hidden.npy");
          auto ih = golden(assets, d, "image_hidden_states.npy");
          auto pl = golden(assets, d, "prefill_logits_last.npy");
          compare(r.vision, max_abs_diff(o.vision, vh.data<float>(), vh.numel(), d + " vision"), d);
          compare(r.connector, max_abs_diff(o.connector, ih.data<float>(), ih.numel(), d + " connector"), d);
          compare(r.prefill, max_abs_diff(o.prefill, pl.data<float>(), pl.numel(), d + " prefill"), d);
          compare(r.steps,
                  step_error(o, golden(assets, d, "step_logits_topk_ids.npy"),
                             golden(assets, d, "step_logits_topk_values.npy"),
                             golden(assets, d, "step_logits_probe.npy"), pl.numel()),
                  d);
          ++r.ids.cases;
          if (o.ids != c.at("generated_ids").get<std::vector<int64_t>>())
            record_failure(r.ids, d + ": generated " + nlohmann::json(o.ids).dump() + ", reference " +
                                      c.at("generated_ids").dump());
          auto [it, fresh] = first_path.emplace(d, o);
          if (!fresh) {
            const CaseOutputs& a = it->second;
            double m = std::max({max_abs_diff(o.vision, a.vision.data(), a.vision.size(), d),
                                 max_abs_diff(o.connector, a.connector.data(), a.connector.size(), d),
                                 max_abs_diff(o.prefill, a.prefill.data(), a.prefill.size(), d)});
            compare(agree, m, d + " " + kernel_path_name(path) + " vs " + report.paths_run.front());
          }
        } catch (const std::exception& e) {
          for (CheckRow* row : {&r.vision, &r.connector, &r.prefill, &r.steps, &r.ids})
            record_failure(*row, d + ": " + e.what());
        }
      }
      rows.insert(rows.end(), {r.vision, r.connector, r.prefill, r.steps, r.ids});
    }
  } catch (const std::exception& e) {
    CheckRow fail = make_row("model", true);
    record_failure(fail, e.what());
    rows.push_back(fail);
  }
  reset_kernel_path();
  report.rows.push_back(pixels_row);
  report.rows.insert(report.rows.end(), rows.begin(), rows.end());
  if (report.paths_run.size() > 1) report.rows.push_back(agree);
}

}  // namespace smolvlm
