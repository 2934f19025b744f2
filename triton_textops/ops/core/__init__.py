"""The tokenizers' shared core: the text batch and its checks, UTF-8, status codes and their one raiser, the hash
table, the kernel machinery (one source compiled for the CPU and the GPU), the array-module switch, argument checks
and device placement. Pure code: no Triton import."""
