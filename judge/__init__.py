"""kernel-judge: judge CUDA kernels against a PyTorch reference and the vendor libraries.

The library never prints and never exits; `cli/` is the thin command-line layer over it.
Importing this package must stay cheap: the worker process imports it without torch.
"""
__version__ = "0.1.0"
