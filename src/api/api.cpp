// The error boundary of the C API, and the calls that need no model.
#include <cstdlib>
#include <new>

#include "api/handles.h"
#include "core/error.h"

namespace smolvlm::capi {

namespace {
thread_local std::string t_last_error;

smolvlm_status status_of(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::BadInput: return SMOLVLM_ERR_BAD_INPUT;
    case ErrorKind::Unsupported: return SMOLVLM_ERR_UNSUPPORTED;
    case ErrorKind::Io: return SMOLVLM_ERR_IO;
    case ErrorKind::State: return SMOLVLM_ERR_STATE;
    case ErrorKind::Internal: return SMOLVLM_ERR_INTERNAL;
  }
  return SMOLVLM_ERR_INTERNAL;
}
}  // namespace

smolvlm_status fail(smolvlm_status status, const std::string& message) {
  t_last_error = message;
  return status;
}

smolvlm_status guarded(const std::function<void()>& body) {
  t_last_error.clear();
  try {
    body();
    return SMOLVLM_OK;
  } catch (const Error& e) {
    return fail(status_of(e.kind()), e.what());
  } catch (const std::bad_alloc&) {
    return fail(SMOLVLM_ERR_IO, "out of memory");
  } catch (const std::exception& e) {
    return fail(SMOLVLM_ERR_INTERNAL, std::string("internal error: ") + e.what());
  } catch (...) {
    return fail(SMOLVLM_ERR_INTERNAL, "internal error: unknown exception");
  }
}

smolvlm_status guarded(const smolvlm_model* model, const std::function<void()>& body) {
  if (!model) return fail(SMOLVLM_ERR_STATE, "the model handle is NULL");
  return guarded([&] {
    const ScopedKernelPath path(model->kernel_path);
    body();
  });
}

char* copy_string(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (!p) throw std::bad_alloc();
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = '\0';
  return p;
}

int32_t* copy_ids(const std::vector<int32_t>& ids) {
  int32_t* p = static_cast<int32_t*>(std::malloc(std::max<size_t>(ids.size(), 1) * sizeof(int32_t)));
  if (!p) throw std::bad_alloc();
  if (!ids.empty()) std::memcpy(p, ids.data(), ids.size() * sizeof(int32_t));
  return p;
}

}  // namespace smolvlm::capi

extern "C" {

const char* smolvlm_version(void) { return "0.4.0"; }

const char* smolvlm_last_error(void) { return smolvlm::capi::t_last_error.c_str(); }

const char* smolvlm_status_name(smolvlm_status status) {
  switch (status) {
    case SMOLVLM_OK: return "ok";
    case SMOLVLM_ERR_BAD_INPUT: return smolvlm::error_kind_name(smolvlm::ErrorKind::BadInput);
    case SMOLVLM_ERR_UNSUPPORTED: return smolvlm::error_kind_name(smolvlm::ErrorKind::Unsupported);
    case SMOLVLM_ERR_IO: return smolvlm::error_kind_name(smolvlm::ErrorKind::Io);
    case SMOLVLM_ERR_STATE: return smolvlm::error_kind_name(smolvlm::ErrorKind::State);
    case SMOLVLM_ERR_INTERNAL: return smolvlm::error_kind_name(smolvlm::ErrorKind::Internal);
  }
  return "unknown status";
}

void smolvlm_free(void* p) { std::free(p); }

const char* smolvlm_supported_kernel_paths(void) {
  static const std::string names = [] {
    std::string s;
    for (smolvlm::KernelPath p : smolvlm::supported_kernel_paths()) s += (s.empty() ? "" : " ") + std::string(smolvlm::kernel_path_name(p));
    return s;
  }();
  return names.c_str();
}

}  // extern "C"
