"""The ops: numba kernels compiled for the CPU (njit) and the GPU (cuda.jit on CuPy arrays) from one source, and their array glue; nothing here imports Triton."""
