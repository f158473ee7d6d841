// JPEG through libjpeg-turbo with its defaults (JDCT_ISLOW, fancy upsampling), as Pillow uses it.
#include <csetjmp>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <vector>

#include <jpeglib.h>
#include <jerror.h>

#include "core/error.h"
#include "image/buffers.h"
#include "image/decoders.h"

namespace smolvlm::image_detail {
namespace {

// libjpeg reports fatal errors through error_exit, which must not return: we longjmp back to the
// decode function and throw from there (no C++ exception crosses libjpeg's C frames).
struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = {};
  bool hit_end_of_data = false;  // libjpeg ran out of input and inserted a fake EOI
};

void on_error_exit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

// Warnings (e.g. extraneous bytes before a marker) are not errors for Pillow; running out of data is.
void on_emit_message(j_common_ptr cinfo, int msg_level) {
  auto* err = reinterpret_cast<ErrorManager*>(cinfo->err);
  if (msg_level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) err->hit_end_of_data = true;
}

void on_output_message(j_common_ptr) {}

// Reads the first APP1 "Exif\0\0" segment libjpeg saved.
int saved_exif_orientation(jpeg_decompress_struct& cinfo) {
  for (jpeg_saved_marker_ptr m = cinfo.marker_list; m; m = m->next) {
    if (m->marker == JPEG_APP0 + 1 && m->data_length >= 6 && std::memcmp(m->data, "Exif\0\0", 6) == 0)
      return exif_orientation(m->data, m->data_length);
  }
  return 1;
}

// State of one decode, owned by the caller so that the function calling setjmp modifies no local
// after it (a longjmp from libjpeg only returns to `run_decode`, which then returns at once).
struct JpegJob {
  jpeg_decompress_struct cinfo{};
  ErrorManager err;
  bool created = false;
  Decoded out;
  std::vector<uint8_t> row;
  const JpegRowSink* sink = nullptr;
  ~JpegJob() {
    if (created) jpeg_destroy_decompress(&cinfo);
  }
};

void convert_row(const JpegJob& job, int64_t w, int oc, bool cmyk, uint8_t* dst) {
  const uint8_t* row = job.row.data();
  if (oc == 1) {
    for (int64_t x = 0; x < w; ++x) dst[x * 3] = dst[x * 3 + 1] = dst[x * 3 + 2] = row[x];
  } else if (cmyk) {
    // Pillow reads 4-component JPEGs as Adobe-inverted CMYK ("CMYK;I").
    for (int64_t x = 0; x < w; ++x) {
      const uint8_t inv[4] = {static_cast<uint8_t>(255 - row[x * 4]), static_cast<uint8_t>(255 - row[x * 4 + 1]),
                              static_cast<uint8_t>(255 - row[x * 4 + 2]), static_cast<uint8_t>(255 - row[x * 4 + 3])};
      cmyk_to_rgb(inv, dst + x * 3);
    }
  }
}

// Returns false when libjpeg reported a fatal error (message in job->err.message).
bool run_decode(JpegJob* job, const uint8_t* data, size_t size, const std::string& name, const DecodeLimits& limits) {
  jpeg_decompress_struct* cinfo = &job->cinfo;
  cinfo->err = jpeg_std_error(&job->err.pub);
  job->err.pub.error_exit = on_error_exit;
  job->err.pub.emit_message = on_emit_message;
  job->err.pub.output_message = on_output_message;
  if (setjmp(job->err.jump)) return false;
  jpeg_create_decompress(cinfo);
  job->created = true;
  jpeg_mem_src(cinfo, data, static_cast<unsigned long>(size));
  jpeg_save_markers(cinfo, JPEG_APP0 + 1, 0xFFFF);
  jpeg_read_header(cinfo, TRUE);
  if (job->err.hit_end_of_data) throw bad_input(name + ": truncated JPEG (file ends inside the headers)");
  check_declared_size(cinfo->image_width, cinfo->image_height, limits, name);
  // Saved markers live in the image pool, which jpeg_finish_decompress frees: read them now.
  job->out.orientation = saved_exif_orientation(*cinfo);
  bool cmyk = false;
  if (cinfo->jpeg_color_space == JCS_GRAYSCALE) {
    cinfo->out_color_space = JCS_GRAYSCALE;
  } else if (cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK) {
    cinfo->out_color_space = JCS_CMYK;
    cmyk = true;
  } else if (cinfo->num_components == 3) {
    cinfo->out_color_space = JCS_RGB;
  } else {
    throw unsupported(name + ": JPEG with " + std::to_string(cinfo->num_components) + " components is not supported");
  }
  jpeg_start_decompress(cinfo);
  const int64_t w = cinfo->output_width, h = cinfo->output_height;
  const int oc = cinfo->output_components;
  job->out.rgb.width = w;
  job->out.rgb.height = h;
  job->row.resize(static_cast<size_t>(w * oc));
  // The output grows with the rows actually decoded; the room reserved up front (address space, not
  // memory, until rows are written) is bounded by the file size, so a truncated file costs little.
  // With a row sink the buffer is allocated in full first, so that its address never changes.
  std::vector<uint8_t>& pixels = job->sink ? *job->sink->pixels : job->out.rgb.pixels;
  const uint64_t declared = static_cast<uint64_t>(w) * static_cast<uint64_t>(h) * 3;
  if (job->sink) {
    resize_pixels(pixels, static_cast<size_t>(declared));
    job->sink->on_start(pixels.data(), w, h, job->out.orientation);
  } else {
    reserve_pixels(pixels, static_cast<size_t>(std::min<uint64_t>(declared, std::max<uint64_t>(uint64_t{16} << 20, uint64_t{256} * size))));
  }
  constexpr int64_t kRowsPerReport = 16;
  while (cinfo->output_scanline < cinfo->output_height && !job->err.hit_end_of_data) {
    const int64_t y = cinfo->output_scanline;
    if (!job->sink) pixels.resize(static_cast<size_t>((y + 1) * w * 3));
    uint8_t* dst = &pixels[static_cast<size_t>(y * w * 3)];
    JSAMPROW rows[1] = {oc == 3 ? dst : job->row.data()};  // RGB rows are decoded in place
    if (jpeg_read_scanlines(cinfo, rows, 1) != 1) {
      if (!job->sink) pixels.resize(static_cast<size_t>(y * w * 3));
      break;
    }
    if (oc != 3) convert_row(*job, w, oc, cmyk, dst);
    if (job->sink && (y + 1) % kRowsPerReport == 0) job->sink->on_rows(y + 1);
  }
  if (cinfo->output_scanline < h) job->err.hit_end_of_data = true;
  if (!job->err.hit_end_of_data) jpeg_finish_decompress(cinfo);
  if (job->sink && !job->err.hit_end_of_data) job->sink->on_rows(h);
  return true;
}

}  // namespace

Decoded decode_jpeg(const uint8_t* data, size_t size, const std::string& name, const DecodeLimits& limits,
                    const JpegRowSink* sink) {
  JpegJob job;
  job.sink = sink;
  if (!run_decode(&job, data, size, name, limits)) {
    const std::string msg = job.err.message;
    if (msg.find("precision") != std::string::npos) throw unsupported(name + ": JPEG variant not supported: " + msg);
    throw bad_input(name + ": corrupt JPEG: " + msg);
  }
  if (job.err.hit_end_of_data) throw bad_input(name + ": truncated JPEG (image file ends before the EOI marker)");
  return std::move(job.out);
}

}  // namespace smolvlm::image_detail
