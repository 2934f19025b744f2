// Stand-in for triton_python_backend_stub: embeds the Python it was linked against.
#include <Python.h>
#if STANDIN_GPU
#include <cuda_runtime_api.h>
#endif
#if STANDIN_BOOST
#include <boost/version.hpp>  // from <build>/boost: the copy the boostorg ExternalProject made
#endif

#include <cstdio>
#include <string_view>

int main(int argc, char** argv)
{
  std::printf("stand-in triton_python_backend_stub\n");
  std::printf("tags: backend=%s common=%s core=%s gpu=%d\n", STANDIN_BACKEND_TAG,
              STANDIN_COMMON_TAG, STANDIN_CORE_TAG, STANDIN_GPU);
  // Py_GetVersion() comes from the libpython loaded at run time, not from the headers.
  std::printf("libpython: %s\n", Py_GetVersion());
#if STANDIN_BOOST
  std::printf("boost: %s\n", BOOST_LIB_VERSION);
#endif
#if STANDIN_GPU
  int cudart = 0;
  cudaRuntimeGetVersion(&cudart);  // works without a GPU; makes the stub need libcudart like the real one
  std::printf("cudart: %d\n", cudart);
#endif
  std::fflush(stdout);
  if (argc > 1 && std::string_view(argv[1]) == "--no-init") {
    return 0;
  }
  PyConfig config;
  PyConfig_InitIsolatedConfig(&config);
  PyStatus status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status)) {
    std::fprintf(stderr, "Py_InitializeFromConfig failed\n");
    return 2;
  }
  int rc = PyRun_SimpleString(
      "import sys\n"
      "print('python %d.%d.%d' % sys.version_info[:3])\n");
  if (Py_FinalizeEx() < 0) {
    return 3;
  }
  return rc == 0 ? 0 : 4;
}
