// _smolvlm: the Python extension over the engine's C API (include/smolvlm.h). python/smolvlm/__init__.py
// gives it its public face (signatures, docstrings); this file converts Python values to requests,
// runs them with the GIL released and maps the engine's status codes to exception classes.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <smolvlm.hpp>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "cli/batch.h"
#include "cli/messages.h"

namespace py = pybind11;
using smolvlm::api::Error;

namespace {

// ---- errors -------------------------------------------------------------------------------------

struct ErrorClasses {
  PyObject* base = nullptr;
  std::map<smolvlm_status, PyObject*> by_status;
};
ErrorClasses& error_classes() {
  static ErrorClasses c;
  return c;
}

PyObject* new_error_class(py::module_& m, const char* name, PyObject* bases, const char* doc) {
  PyObject* cls = PyErr_NewExceptionWithDoc((std::string("smolvlm.") + name).c_str(), doc, bases, nullptr);
  if (!cls) throw py::error_already_set();
  m.add_object(name, py::handle(cls));
  return cls;
}

void register_errors(py::module_& m) {
  ErrorClasses& c = error_classes();
  c.base = new_error_class(m, "Error", PyExc_Exception,
                           "Base of every error the engine reports; .status is its status code (the CLI's exit "
                           "code), .code its name (bad_input, unsupported, io, state, internal).");
  auto sub = [&](const char* name, smolvlm_status s, PyObject* builtin, const char* doc) {
    PyObject* bases = PyTuple_Pack(2, c.base, builtin);
    c.by_status[s] = new_error_class(m, name, bases, doc);
    Py_DECREF(bases);
  };
  sub("BadInputError", SMOLVLM_ERR_BAD_INPUT, PyExc_ValueError,
      "Malformed or inconsistent input: a file, config, image, prompt or option.");
  sub("UnsupportedError", SMOLVLM_ERR_UNSUPPORTED, PyExc_ValueError, "Valid input the engine does not handle.");
  sub("IOError", SMOLVLM_ERR_IO, PyExc_OSError, "The operating system refused (open, read, write, map), or out of memory.");
  sub("StateError", SMOLVLM_ERR_STATE, PyExc_RuntimeError, "Misuse: e.g. generating with a model loaded without weights.");
  sub("InternalError", SMOLVLM_ERR_INTERNAL, PyExc_RuntimeError, "A bug of the engine.");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      const ErrorClasses& c = error_classes();
      auto it = c.by_status.find(e.status());
      PyObject* cls = it == c.by_status.end() ? c.base : it->second;
      const std::string msg = e.what();
      py::object text = py::reinterpret_steal<py::object>(
          PyUnicode_DecodeUTF8(msg.data(), static_cast<Py_ssize_t>(msg.size()), "replace"));
      py::object exc = py::reinterpret_borrow<py::object>(cls)(text);
      exc.attr("status") = static_cast<int>(e.status());
      exc.attr("code") = smolvlm::cli::error_code_name(e.status());
      PyErr_SetObject(cls, exc.ptr());
    }
  });
}

[[noreturn]] void bad_input(const std::string& message) { throw Error(SMOLVLM_ERR_BAD_INPUT, message); }

// ---- requests -------------------------------------------------------------------------------------

// A request and everything it points to (image bytes, strings), built while holding the GIL.
struct Request {
  smolvlm::api::Chat chat;
  std::deque<std::string> buffers;  // image bytes; a deque keeps each one where it is
  std::string prompt;
  std::vector<std::string> stops;
  std::vector<const char*> stop_ptrs;
  std::vector<int32_t> stop_ids;
  smolvlm_request req{};
  Request() { smolvlm_request_init(&req); }
};

// A path, encoded bytes, a numpy uint8 [H, W, 3] array or a PIL image.
void add_image(Request& r, py::handle obj, size_t index) {
  const std::string where = "image " + std::to_string(index) + ": ";
  if (py::isinstance<py::str>(obj) || py::hasattr(obj, "__fspath__")) {
    r.chat.image_file(py::str(py::module_::import("os").attr("fspath")(obj)).cast<std::string>());
    return;
  }
  smolvlm_image im{};
  if (PyBytes_Check(obj.ptr()) || PyByteArray_Check(obj.ptr()) || PyMemoryView_Check(obj.ptr())) {
    // bytes and bytearray are contiguous; a memoryview may not be: tobytes() copies it in order.
    py::object contiguous = PyMemoryView_Check(obj.ptr()) ? obj.attr("tobytes")() : py::reinterpret_borrow<py::object>(obj);
    const py::buffer_info b = py::reinterpret_borrow<py::buffer>(contiguous).request();
    r.buffers.emplace_back(static_cast<const char*>(b.ptr), static_cast<size_t>(b.size * b.itemsize));
    im.kind = SMOLVLM_IMAGE_ENCODED;
  } else if (py::isinstance<py::array>(obj)) {
    auto a = py::reinterpret_borrow<py::array>(obj);
    if (a.dtype().kind() != 'u' || a.itemsize() != 1)
      bad_input(where + "a numpy array must be uint8, not " + py::str(a.dtype()).cast<std::string>());
    if (a.ndim() != 3 || a.shape(2) != 3)
      bad_input(where + "a numpy array must be [height, width, 3] (RGB), not of shape " +
                py::str(py::tuple(obj.attr("shape"))).cast<std::string>());
    auto c = py::array_t<uint8_t, py::array::c_style>::ensure(a);
    r.buffers.emplace_back(reinterpret_cast<const char*>(c.data()), static_cast<size_t>(c.size()));
    im.kind = SMOLVLM_IMAGE_RGB8;
    im.height = static_cast<int32_t>(a.shape(0));
    im.width = static_cast<int32_t>(a.shape(1));
  } else if (py::hasattr(obj, "convert") && py::hasattr(obj, "tobytes") && py::hasattr(obj, "size")) {
    py::object rgb = obj.attr("convert")("RGB");  // what HF's load_image does with a PIL image
    r.buffers.push_back(rgb.attr("tobytes")().cast<std::string>());
    auto size = rgb.attr("size").cast<std::pair<int32_t, int32_t>>();
    im.kind = SMOLVLM_IMAGE_RGB8;
    im.width = size.first;
    im.height = size.second;
  } else {
    throw py::type_error(where + "expected a path, bytes, a numpy uint8 [H, W, 3] array or a PIL image, not " +
                         py::str(obj.get_type().attr("__name__")).cast<std::string>());
  }
  im.data = reinterpret_cast<const uint8_t*>(r.buffers.back().data());
  im.size = r.buffers.back().size();
  r.chat.image(im);
}

// Generation options, named as in the API; an unknown one is a TypeError.
void apply_options(Request& r, const py::dict& opts) {
  smolvlm_request& q = r.req;
  for (auto [k, v] : opts) {
    const std::string key = py::str(k);
    if (v.is_none()) continue;
    if (key == "max_new_tokens") q.max_new_tokens = v.cast<int64_t>();
    else if (key == "split") q.split = v.cast<bool>() ? 1 : 0;
    else if (key == "temperature") q.sampling.temperature = v.cast<float>();
    else if (key == "top_k") q.sampling.top_k = v.cast<int32_t>();
    else if (key == "top_p") q.sampling.top_p = v.cast<float>();
    else if (key == "min_p") q.sampling.min_p = v.cast<float>();
    else if (key == "repetition_penalty") q.sampling.repetition_penalty = v.cast<float>();
    else if (key == "seed") q.sampling.seed = v.cast<uint64_t>();
    else if (key == "context") q.context = v.cast<int64_t>();
    else if (key == "ignore_eos") q.ignore_eos = v.cast<bool>() ? 1 : 0;
    else if (key == "stop") {
      if (py::isinstance<py::str>(v)) r.stops.push_back(v.cast<std::string>());
      else r.stops = v.cast<std::vector<std::string>>();
    } else if (key == "stop_ids") r.stop_ids = v.cast<std::vector<int32_t>>();
    else throw py::type_error("unexpected keyword argument '" + key + "'");
  }
  for (const auto& s : r.stops) r.stop_ptrs.push_back(s.c_str());
  q.stop = r.stop_ptrs.data();
  q.n_stop = r.stop_ptrs.size();
  q.stop_ids = r.stop_ids.data();
  q.n_stop_ids = r.stop_ids.size();
}

std::unique_ptr<Request> caption_request(const py::object& images, const std::string& prompt, const py::dict& opts) {
  auto r = std::make_unique<Request>();
  r->chat.add(SMOLVLM_ROLE_USER);
  // One image on its own, or a list of them.
  if (py::isinstance<py::list>(images) || py::isinstance<py::tuple>(images)) {
    size_t i = 0;
    for (auto im : images) add_image(*r, im, i++);
  } else {
    add_image(*r, images, 0);
  }
  r->chat.text(prompt);
  r->chat.fill(r->req);
  apply_options(*r, opts);
  return r;
}

std::unique_ptr<Request> chat_request(const py::object& messages, const py::dict& opts) {
  auto r = std::make_unique<Request>();
  const std::string json = py::module_::import("json").attr("dumps")(messages).cast<std::string>();
  smolvlm::cli::add_messages_json(json, "messages", r->chat);
  r->chat.fill(r->req);
  apply_options(*r, opts);
  return r;
}

std::unique_ptr<Request> prompt_request(const std::string& prompt, const py::dict& opts) {
  auto r = std::make_unique<Request>();
  r->prompt = prompt;
  r->req.prompt = r->prompt.c_str();
  apply_options(*r, opts);
  return r;
}

// ---- results --------------------------------------------------------------------------------------

struct Result {
  std::string text;
  std::vector<int32_t> token_ids;
  int64_t prompt_tokens = 0, image_tiles = 0;
  std::string finish_reason, kernel_path;
  std::map<std::string, double> timings;

  explicit Result(const smolvlm_result& r)
      : text(r.text ? r.text : "", r.text_size),
        token_ids(r.token_ids, r.token_ids + r.n_tokens),
        prompt_tokens(r.prompt_tokens),
        image_tiles(r.image_tiles),
        finish_reason(smolvlm_finish_reason_name(r.finish_reason)),
        kernel_path(r.kernel_path ? r.kernel_path : ""),
        timings{{"load_s", r.timings.load_s},
                {"preprocess_s", r.timings.preprocess_s},
                {"vision_s", r.timings.vision_s},
                {"prefill_s", r.timings.prefill_s},
                {"decode_s", r.timings.decode_s}} {}
};

// ---- models and streams ------------------------------------------------------------------------------

using ModelPtr = std::shared_ptr<smolvlm::api::Model>;

// Ctrl-C during a call on the main thread: between tokens the callback takes the GIL to run Python's
// signal handlers; a KeyboardInterrupt (or any exception they raise) cancels the generation and is
// raised when the call returns.
struct InterruptCheck {
  bool raised = false;
  static int on_piece(const char*, size_t, void* user) {
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() == 0) return 1;
    static_cast<InterruptCheck*>(user)->raised = true;
    return 0;
  }
};

bool on_main_thread() {
  static const auto main_id = py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
  return PyThread_get_thread_ident() == main_id;
}

Result run(const ModelPtr& model, Request& r) {
  InterruptCheck check;
  if (on_main_thread()) {
    r.req.on_piece = &InterruptCheck::on_piece;
    r.req.user_data = &check;
  }
  std::optional<Result> out;
  {
    py::gil_scoped_release nogil;
    out.emplace(model->generate(r.req).raw());
  }
  if (check.raised) throw py::error_already_set();
  return std::move(*out);
}

// Generation on a thread of its own; pieces are handed to the iterating Python thread, at most
// kMaxBufferedPieces ahead of it (a reader that pauses pauses the generation). Closing (or dropping)
// the stream cancels the generation at its next piece and waits for it to end.
class Stream {
 public:
  static constexpr size_t kMaxBufferedPieces = 4;

  Stream(ModelPtr model, std::unique_ptr<Request> r) : model_(std::move(model)), r_(std::move(r)) {
    r_->req.on_piece = &Stream::on_piece;
    r_->req.user_data = this;
    thread_ = std::thread([this] { work(); });
  }
  ~Stream() {
    py::gil_scoped_release nogil;
    stop();
  }

  py::str next() {
    std::string piece;
    bool got = false;
    {
      py::gil_scoped_release nogil;
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return !pieces_.empty() || finished_; });
      if (!pieces_.empty()) {
        piece = std::move(pieces_.front());
        pieces_.pop_front();
        got = true;
        cv_.notify_all();  // room for the generation's next piece
      }
    }
    if (got)
      return py::reinterpret_steal<py::str>(PyUnicode_DecodeUTF8(piece.data(), static_cast<Py_ssize_t>(piece.size()), "replace"));
    if (error_) throw *error_;
    throw py::stop_iteration();
  }

  void close() {
    py::gil_scoped_release nogil;
    stop();
  }

  std::optional<Result> result() {
    std::lock_guard lock(mu_);
    return result_;
  }

 private:
  static int on_piece(const char* piece, size_t size, void* user) {
    auto* s = static_cast<Stream*>(user);
    std::unique_lock lock(s->mu_);
    s->cv_.wait(lock, [&] { return s->cancel_ || s->pieces_.size() < kMaxBufferedPieces; });
    if (s->cancel_) return 0;
    if (size > 0) s->pieces_.emplace_back(piece, size);
    s->cv_.notify_all();
    return 1;
  }

  void work() {
    std::optional<Result> result;
    std::optional<Error> error;
    try {
      result.emplace(model_->generate(r_->req).raw());
    } catch (const Error& e) {
      error = e;
    } catch (const std::exception& e) {
      error = Error(SMOLVLM_ERR_INTERNAL, e.what());
    }
    std::lock_guard lock(mu_);
    result_ = std::move(result);
    error_ = std::move(error);
    finished_ = true;
    cv_.notify_all();
  }

  void stop() {
    {
      std::lock_guard lock(mu_);
      cancel_ = true;
    }
    cv_.notify_all();  // a generation waiting for room sees the cancel
    if (thread_.joinable()) thread_.join();
  }

  ModelPtr model_;
  std::unique_ptr<Request> r_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> pieces_;
  bool finished_ = false, cancel_ = false;
  std::optional<Result> result_;
  std::optional<Error> error_;
  std::thread thread_;
};

py::dict model_info(const ModelPtr& m) {
  const smolvlm_model_info i = m->info();
  py::dict d;
  d["architecture"] = i.architecture;
  d["path"] = i.path;
  d["kernel_path"] = i.kernel_path;
  d["precision"] = i.precision;
  d["threads"] = i.threads;
  d["has_vision"] = i.has_vision != 0;
  d["max_context"] = i.max_context;
  d["max_position_embeddings"] = i.max_position_embeddings;
  d["vocab_size"] = i.vocab_size;
  d["hidden_size"] = i.hidden_size;
  d["intermediate_size"] = i.intermediate_size;
  d["num_layers"] = i.num_layers;
  d["num_heads"] = i.num_heads;
  d["num_kv_heads"] = i.num_kv_heads;
  d["head_dim"] = i.head_dim;
  d["params"] = py::dict(py::arg("vision") = i.params_vision, py::arg("connector") = i.params_connector,
                         py::arg("text") = i.params_text, py::arg("lm_head") = i.params_lm_head,
                         py::arg("total") = i.params_total);
  if (i.has_vision)
    d["vision"] = py::dict(py::arg("image_size") = i.vision_image_size, py::arg("patch_size") = i.vision_patch_size,
                           py::arg("hidden_size") = i.vision_hidden_size,
                           py::arg("intermediate_size") = i.vision_intermediate_size,
                           py::arg("num_layers") = i.vision_num_layers, py::arg("num_channels") = i.vision_num_channels,
                           py::arg("scale_factor") = i.scale_factor,
                           py::arg("image_tokens_per_tile") = i.image_tokens_per_tile);
  d["file_bytes"] = i.file_bytes;
  d["decode_bytes"] = i.decode_bytes;
  d["decode_products"] = i.decode_products ? i.decode_products : "";
  d["weight_memory"] = i.weight_memory ? i.weight_memory : "";
  d["recommended_sampling"] =
      py::dict(py::arg("temperature") = i.recommended_temperature, py::arg("top_k") = i.recommended_top_k,
               py::arg("top_p") = i.recommended_top_p, py::arg("repetition_penalty") = i.recommended_repetition_penalty);
  return d;
}

ModelPtr load_model(const std::string& path, std::optional<int> threads, std::optional<int64_t> ctx,
                    std::optional<std::string> kernels, bool load_weights, std::optional<std::string> precision,
                    std::optional<std::string> weight_memory) {
  smolvlm_model_options o;
  smolvlm_model_options_init(&o);
  if (threads) o.threads = *threads;
  if (ctx) o.max_context = *ctx;
  if (kernels) o.kernel_path = kernels->c_str();
  if (precision) o.precision = precision->c_str();
  if (weight_memory) o.weight_memory = weight_memory->c_str();
  o.load_weights = load_weights ? 1 : 0;
  py::gil_scoped_release nogil;
  return std::make_shared<smolvlm::api::Model>(smolvlm::api::Model::load(path, &o));
}

py::dict run_batch(const ModelPtr& model, const std::string& input, const std::string& output, int64_t shard_index,
                   int64_t shard_count, bool resume, bool progress, std::optional<std::string> prompt,
                   const py::dict& defaults) {
  smolvlm::cli::BatchOptions o;
  o.input = input;
  o.output = output;
  o.shard_index = shard_index;
  o.shard_count = shard_count;
  o.resume = resume;
  // Job defaults: the same names as a job's keys.
  Request probe;
  apply_options(probe, defaults);
  if (probe.req.n_stop || probe.req.n_stop_ids || probe.req.context || probe.req.ignore_eos)
    throw py::type_error("batch defaults are prompt, max_new_tokens, split and the sampling options");
  if (prompt) o.defaults.prompt = *prompt;
  o.defaults.max_new_tokens = probe.req.max_new_tokens;
  o.defaults.split = probe.req.split;
  o.defaults.sampling = probe.req.sampling;
  if (progress) o.on_progress = smolvlm::cli::progress_bar(stderr);
  smolvlm::cli::BatchSummary s;
  {
    py::gil_scoped_release nogil;
    s = smolvlm::cli::run_batch(*model, o);
  }
  return py::dict(py::arg("lines") = s.lines, py::arg("in_shard") = s.in_shard, py::arg("skipped") = s.skipped,
                  py::arg("done") = s.done, py::arg("errors") = s.errors, py::arg("seconds") = s.seconds);
}

py::dict preprocess_image(const std::string& model, const py::object& image, std::optional<bool> split) {
  Request r;
  add_image(r, image, 0);
  r.chat.fill(r.req);
  smolvlm_pixels px{};
  px.struct_size = sizeof px;
  const smolvlm_image im = r.req.messages[0].parts[0].image;
  {
    py::gil_scoped_release nogil;
    smolvlm::api::check(smolvlm_preprocess_image(model.c_str(), &im, split ? (*split ? 1 : 0) : -1, &px));
  }
  const std::vector<py::ssize_t> shape{px.tiles, 3, px.tile_size, px.tile_size};
  py::array_t<float> pixel_values(shape);
  py::array_t<uint8_t> tiles(shape);
  std::memcpy(pixel_values.mutable_data(), px.pixel_values, static_cast<size_t>(pixel_values.size()) * sizeof(float));
  std::memcpy(tiles.mutable_data(), px.tiles_u8, static_cast<size_t>(tiles.size()));
  py::dict d;
  d["width"] = px.width;
  d["height"] = px.height;
  d["rows"] = px.rows;
  d["cols"] = px.cols;
  d["pixel_values"] = pixel_values;
  d["tiles_u8"] = tiles;
  smolvlm_pixels_free(&px);
  return d;
}

}  // namespace

PYBIND11_MODULE(_smolvlm, m) {
  m.doc() = "The smolvlm engine's C API (include/smolvlm.h) for Python; use the `smolvlm` package.";
  m.attr("__version__") = smolvlm_version();
  register_errors(m);

  py::class_<Result>(m, "Result", "A finished request's output.")
      .def_readonly("text", &Result::text, "the generated text (special tokens skipped, stop strings trimmed)")
      .def_readonly("token_ids", &Result::token_ids, "every generated token id (an eos included)")
      .def_readonly("prompt_tokens", &Result::prompt_tokens, "tokens of the prompt (image tokens included)")
      .def_readonly("image_tiles", &Result::image_tiles, "tiles through the vision tower")
      .def_readonly("finish_reason", &Result::finish_reason, "eos, length, stop, cancelled or context_full")
      .def_readonly("kernel_path", &Result::kernel_path, "the kernels that ran: scalar, avx2, avx512 or neon")
      .def_readonly("timings", &Result::timings, "seconds per stage: load_s, preprocess_s, vision_s, prefill_s, decode_s")
      .def("to_dict", [](const Result& r) {
        return py::dict(py::arg("text") = r.text, py::arg("token_ids") = r.token_ids,
                        py::arg("prompt_tokens") = r.prompt_tokens, py::arg("image_tiles") = r.image_tiles,
                        py::arg("finish_reason") = r.finish_reason, py::arg("kernel_path") = r.kernel_path,
                        py::arg("timings") = r.timings);
      }, "the fields as a dict (JSON-ready)")
      .def("__repr__", [](const Result& r) {
        return "Result(text=" + py::repr(py::str(r.text)).cast<std::string>() + ", " +
               std::to_string(r.token_ids.size()) + " tokens, finish_reason='" + r.finish_reason + "')";
      });

  py::class_<Stream>(m, "Stream", "Pieces of text as they are generated; close() (or dropping it) cancels.")
      .def("__iter__", [](Stream& s) -> Stream& { return s; })
      .def("__next__", &Stream::next)
      .def("close", &Stream::close, "cancel the generation (if still running) and wait for it to end")
      .def("__enter__", [](Stream& s) -> Stream& { return s; })
      .def("__exit__", [](Stream& s, py::args) { s.close(); })
      .def_property_readonly("result", &Stream::result,
                             "the Result once the stream is exhausted or closed (finish_reason 'cancelled' when "
                             "closed early), else None");

  py::class_<smolvlm::api::Model, ModelPtr>(m, "_Model")
      .def(py::init(&load_model), py::arg("path"), py::arg("threads") = py::none(), py::arg("ctx") = py::none(),
           py::arg("kernels") = py::none(), py::arg("load_weights") = true, py::arg("precision") = py::none(),
           py::arg("weight_memory") = py::none())
      .def("info", &model_info)
      .def("caption", [](const ModelPtr& m, const py::object& images, const std::string& prompt, const py::dict& opts) {
        return run(m, *caption_request(images, prompt, opts));
      })
      .def("chat", [](const ModelPtr& m, const py::object& messages, const py::dict& opts) {
        return run(m, *chat_request(messages, opts));
      })
      .def("generate", [](const ModelPtr& m, const std::string& prompt, const py::dict& opts) {
        return run(m, *prompt_request(prompt, opts));
      })
      .def("stream_caption", [](const ModelPtr& m, const py::object& images, const std::string& prompt,
                                const py::dict& opts) { return std::make_unique<Stream>(m, caption_request(images, prompt, opts)); })
      .def("stream_chat", [](const ModelPtr& m, const py::object& messages, const py::dict& opts) {
        return std::make_unique<Stream>(m, chat_request(messages, opts));
      })
      .def("stream_generate", [](const ModelPtr& m, const std::string& prompt, const py::dict& opts) {
        return std::make_unique<Stream>(m, prompt_request(prompt, opts));
      })
      .def("tokenize", [](const ModelPtr& m, const std::string& text, bool add_special_tokens) {
        py::gil_scoped_release nogil;
        return m->tokenizer().tokenize(text, add_special_tokens);
      })
      .def("detokenize", [](const ModelPtr& m, const std::vector<int32_t>& ids, bool skip_special_tokens) {
        py::gil_scoped_release nogil;
        return m->tokenizer().detokenize(ids, skip_special_tokens);
      })
      .def("token_to_string", [](const ModelPtr& m, int32_t id) { return m->tokenizer().token_string(id); })
      .def("render_prompt", [](const ModelPtr& m, const py::object& messages, const py::dict& opts) {
        auto r = chat_request(messages, opts);
        char* text = nullptr;
        int32_t* ids = nullptr;
        size_t n = 0;
        {
          py::gil_scoped_release nogil;
          smolvlm::api::check(smolvlm_render_prompt(m->get(), &r->req, &text, &ids, &n));
        }
        std::string t = smolvlm::api::take_string(text);
        return py::make_tuple(t, smolvlm::api::take_ids(ids, n));
      });

  m.def("_batch", &run_batch);
  m.def("_merge", [](const std::string& input, const std::vector<std::string>& parts, const std::string& output) {
    smolvlm::cli::MergeSummary s;
    {
      py::gil_scoped_release nogil;
      s = smolvlm::cli::merge_outputs(input, parts, output);
    }
    return py::dict(py::arg("written") = s.written, py::arg("missing") = s.missing, py::arg("duplicates") = s.duplicates);
  });
  m.def("_preprocess_image", &preprocess_image);
  m.def("_translation_prompt", [](const std::string& text, const std::string& to, std::optional<std::string> from,
                                  const std::vector<std::pair<std::string, std::string>>& terms) {
    std::vector<smolvlm_term> refs;
    for (const auto& t : terms) refs.push_back({t.first.c_str(), t.second.c_str()});
    char* prompt = nullptr;
    smolvlm::api::check(smolvlm_translation_prompt(text.c_str(), to.c_str(), from ? from->c_str() : nullptr,
                                                   refs.data(), refs.size(), &prompt));
    return smolvlm::api::take_string(prompt);
  });
  m.def("translation_languages", [] { return std::string(smolvlm_translation_languages()); },
        "the HY-MT model card's language codes, comma separated");
  m.def("supported_kernel_paths", [] { return std::string(smolvlm_supported_kernel_paths()); },
        "the kernel paths this CPU can run, best last, e.g. 'scalar avx2 avx512'");
  m.def("default_model", [] { return std::string(smolvlm_default_model()); });
  m.def("inspect", [](const std::string& path, bool config_only) {
    char* json = nullptr;
    {
      py::gil_scoped_release nogil;
      smolvlm::api::check(smolvlm_inspect_model(path.c_str(), config_only ? 1 : 0, &json));
    }
    return py::module_::import("json").attr("loads")(smolvlm::api::take_string(json));
  }, py::arg("path"), py::arg("config_only") = false);
}
