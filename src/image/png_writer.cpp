// 8-bit RGB PNG output (tile dumps): written to a temporary file and renamed, so a failure never
// leaves a half-written image behind.
#include <csetjmp>
#include <cstdio>
#include <memory>
#include <vector>

#include <png.h>

#include "core/error.h"
#include "image/image.h"

namespace smolvlm {
namespace {

struct WriteJob {
  png_structp png = nullptr;
  png_infop info = nullptr;
  FILE* file = nullptr;
  std::vector<png_bytep> rows;
  std::string message;
  ~WriteJob() {
    if (png) png_destroy_write_struct(&png, info ? &info : nullptr);
    if (file) std::fclose(file);
  }
};

void write_error(png_structp png, png_const_charp msg) {
  *static_cast<std::string*>(png_get_error_ptr(png)) = msg;
  png_longjmp(png, 1);
}

void write_warning(png_structp, png_const_charp) {}

bool run_write(WriteJob* job, const RgbImage& img) {
  if (setjmp(png_jmpbuf(job->png))) return false;
  png_init_io(job->png, job->file);
  png_set_IHDR(job->png, job->info, static_cast<png_uint_32>(img.width), static_cast<png_uint_32>(img.height), 8,
               PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(job->png, job->info);
  png_write_image(job->png, job->rows.data());
  png_write_end(job->png, nullptr);
  return true;
}

}  // namespace

void save_png(const std::filesystem::path& path, const RgbImage& img) {
  if (img.width < 1 || img.height < 1 || static_cast<int64_t>(img.pixels.size()) != img.width * img.height * 3)
    throw bad_input(path.string() + ": cannot write an empty or inconsistent image");
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    WriteJob job;
    job.file = std::fopen(tmp.c_str(), "wb");
    if (!job.file) throw io_error(path.string() + ": cannot create file");
    job.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &job.message, write_error, write_warning);
    if (!job.png) throw internal_error("libpng: cannot create write struct");
    job.info = png_create_info_struct(job.png);
    if (!job.info) throw internal_error("libpng: cannot create info struct");
    job.rows.resize(static_cast<size_t>(img.height));
    for (int64_t y = 0; y < img.height; ++y)
      job.rows[y] = const_cast<png_bytep>(img.pixels.data() + y * img.width * 3);
    const bool ok = run_write(&job, img);
    const bool closed = std::fclose(job.file) == 0;
    job.file = nullptr;
    if (!ok || !closed) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw io_error(path.string() + ": cannot write PNG" + (job.message.empty() ? "" : ": " + job.message));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw io_error(path.string() + ": cannot rename the written PNG into place");
  }
}

}  // namespace smolvlm
