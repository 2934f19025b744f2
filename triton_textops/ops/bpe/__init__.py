"""Byte-level BPE (GPT-2, cl100k / Llama-3, Qwen2, o200k), exact to tiktoken and HF tokenizers, on the CPU or the GPU."""
