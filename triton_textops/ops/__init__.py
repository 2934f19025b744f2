"""Pure array ops (NumPy on CPU, CuPy on GPU); nothing here imports Triton."""
